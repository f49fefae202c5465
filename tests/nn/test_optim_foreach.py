"""Multi-tensor Adam (one kernel per group): the same values as one kernel per parameter and
as torch.optim.Adam, one kernel call per step."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import nn
import nn.optim
from nn.functions.base import kernel_calls

SHAPES = [(7, 5), (5,), (3, 4, 2), (1,), (33,)]


def _params(seed=0):
    rng = np.random.default_rng(seed)
    values = [rng.standard_normal(s).astype("float32") for s in SHAPES]
    grads = [[rng.standard_normal(s).astype("float32") for s in SHAPES] for _ in range(4)]
    return values, grads


def _run_ours(values, grads, steps=4, **kw):
    ps = [nn.Parameter(nn.tensor(v.copy())) for v in values]
    opt = nn.optim.Adam(ps, **kw)
    for t in range(steps):
        for p, g in zip(ps, grads[t]):
            p.grad = nn.tensor(g)
        opt.step()
    return [p.detach().numpy().copy() for p in ps], opt


def _run_torch(values, grads, steps=4, **kw):
    ps = [torch.nn.Parameter(torch.from_numpy(v.copy())) for v in values]
    opt = torch.optim.Adam(ps, **kw)
    for t in range(steps):
        for p, g in zip(ps, grads[t]):
            p.grad = torch.from_numpy(g)
        opt.step()
    return [p.detach().numpy() for p in ps]


@pytest.mark.parametrize("kw", [dict(lr=1e-2), dict(lr=1e-2, weight_decay=0.1),
                                dict(lr=3e-3, amsgrad=True, maximize=True)])
def test_foreach_adam_matches_per_parameter_and_torch(kw):
    values, grads = _params()
    multi, opt = _run_ours(values, grads, foreach=True, **kw)
    single, _ = _run_ours(values, grads, **kw)
    for a, b in zip(multi, single):
        np.testing.assert_array_equal(a, b)          # the same arithmetic, bit for bit
    for a, b in zip(multi, _run_torch(values, grads, **kw)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    st = opt.state_dict()["state"]
    assert st[0]["exp_avg"].shape == SHAPES[0] and float(st[0]["step"]) == 4


def test_adamw_foreach_matches_torch():
    values, grads = _params(1)
    ps = [nn.Parameter(nn.tensor(v.copy())) for v in values]
    opt = nn.optim.AdamW(ps, lr=1e-2, weight_decay=0.05, foreach=True)
    tps = [torch.nn.Parameter(torch.from_numpy(v.copy())) for v in values]
    topt = torch.optim.AdamW(tps, lr=1e-2, weight_decay=0.05)
    for t in range(3):
        for p, tp, g in zip(ps, tps, grads[t]):
            p.grad, tp.grad = nn.tensor(g), torch.from_numpy(g)
        opt.step(), topt.step()
    for p, tp in zip(ps, tps):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_one_kernel_call_per_step_and_in_place():
    values, grads = _params(2)
    ps = [nn.Parameter(nn.tensor(v.copy())) for v in values]
    storage = [p._data for p in ps]
    opt = nn.optim.Adam(ps, lr=1e-2, foreach=True)
    for p, g in zip(ps, grads[0]):
        p.grad = nn.tensor(g)
    before = kernel_calls["adam_update"]
    opt.step()
    assert kernel_calls["adam_update"] == before + 1
    assert all(p._data is s for p, s in zip(ps, storage))      # updated in their storage


def test_parameters_with_other_step_counts_fall_back():
    values, grads = _params(3)
    ps = [nn.Parameter(nn.tensor(v.copy())) for v in values]
    tps = [torch.nn.Parameter(torch.from_numpy(v.copy())) for v in values]
    opt = nn.optim.Adam(ps[:2], lr=1e-2, foreach=True)
    topt = torch.optim.Adam(tps[:2], lr=1e-2)
    for t in range(3):
        if t == 1:
            opt.add_param_group({"params": ps[2:]})
            topt.add_param_group({"params": tps[2:]})
        if t == 2:              # a parameter without gradient is skipped
            ps[3].grad, tps[3].grad = None, None
        for k, (p, tp, g) in enumerate(zip(ps, tps, grads[t])):
            if t == 2 and k == 3:
                continue
            p.grad, tp.grad = nn.tensor(g), torch.from_numpy(g)
        opt.step(), topt.step()
    for p, tp in zip(ps, tps):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
