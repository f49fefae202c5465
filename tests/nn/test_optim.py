"""nn.optim: every optimizer's steps against numpy formulas written out here and against
torch.optim on the same parameters and gradients; parameter groups, state dicts (PyTorch's
layout, resuming equals not stopping), closures, zero_grad, one kernel per parameter."""
import numpy as np
import pytest
import torch

import nn
from nn import optim
from nn.functions import kernel_calls
from nn.optim import optimizer as optimizer_module

# two parameters of 15 elements each: one compiled kernel per option combination
SHAPES = [(5, 3), (3, 5)]
STEPS = 3
RNG = np.random.default_rng(0)
INIT = [RNG.standard_normal(s).astype(np.float32) for s in SHAPES]
GRADS = [[RNG.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(STEPS)]

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.5, maximize=True)),
    ("Adam", dict()),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, maximize=True, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.3)),
    ("Adagrad", dict(lr=0.1, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, weight_decay=0.1, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True, maximize=True)),
]


def _params(lib, dtype=np.float32):
    return [lib.tensor(a.astype(dtype), requires_grad=True) for a in INIT]


def _set_grads(lib, params, grads):
    for p, g in zip(params, grads):
        p.grad = lib.tensor(g.astype(p.detach().numpy().dtype))


def _train(lib, make, dtype=np.float32, steps=STEPS):
    params = _params(lib, dtype)
    opt = make(params)
    for grads in GRADS[:steps]:
        _set_grads(lib, params, grads)
        opt.step()
    return [p.detach().numpy().copy() for p in params], opt


# ----------------------------------------------------------------------------- numpy formulas

def _numpy_steps(name, kw):
    """The optimizer's update rules, written out in float64 numpy."""
    d = {"SGD": dict(lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False),
         "Adam": dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False),
         "AdamW": dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False),
         "Adagrad": dict(lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                         eps=1e-10),
         "RMSprop": dict(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                         centered=False)}[name]
    d = {**d, "maximize": False, **kw}
    out = []
    for k, p in enumerate(INIT):
        p = p.astype(np.float64)
        s = {"buf": None, "m": 0, "v": 0, "vmax": 0, "sum": d.get("initial_accumulator_value"),
             "sq": 0, "ga": 0, "mb": 0}
        for t, grads in enumerate(GRADS, start=1):
            g = -grads[k].astype(np.float64) if d["maximize"] else grads[k].astype(np.float64)
            if name == "AdamW":
                p = p * (1 - d["lr"] * d["weight_decay"])
            elif d["weight_decay"]:
                g = g + d["weight_decay"] * p
            if name == "SGD":
                if d["momentum"]:
                    s["buf"] = g.copy() if s["buf"] is None else \
                        d["momentum"] * s["buf"] + (1 - d["dampening"]) * g
                    g = g + d["momentum"] * s["buf"] if d["nesterov"] else s["buf"]
                p = p - d["lr"] * g
            elif name in ("Adam", "AdamW"):
                b1, b2 = d["betas"]
                s["m"] = b1 * s["m"] + (1 - b1) * g
                s["v"] = b2 * s["v"] + (1 - b2) * g * g
                v = s["v"]
                if d["amsgrad"]:
                    v = s["vmax"] = np.maximum(s["vmax"], s["v"])
                denom = np.sqrt(v) / np.sqrt(1 - b2 ** t) + d["eps"]
                p = p - d["lr"] / (1 - b1 ** t) * s["m"] / denom
            elif name == "Adagrad":
                clr = d["lr"] / (1 + (t - 1) * d["lr_decay"])
                s["sum"] = s["sum"] + g * g
                p = p - clr * g / (np.sqrt(s["sum"]) + d["eps"])
            else:
                a = d["alpha"]
                s["sq"] = a * s["sq"] + (1 - a) * g * g
                var = s["sq"]
                if d["centered"]:
                    s["ga"] = a * s["ga"] + (1 - a) * g
                    var = var - s["ga"] ** 2
                avg = np.sqrt(var) + d["eps"]
                if d["momentum"]:
                    s["mb"] = d["momentum"] * s["mb"] + g / avg
                    p = p - d["lr"] * s["mb"]
                else:
                    p = p - d["lr"] * g / avg
        out.append(p)
    return out


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{'-'.join(kw)}" for n, kw in CASES])
def test_steps_equal_numpy_and_torch(name, kw):
    ours, _ = _train(nn, lambda ps: getattr(optim, name)(ps, **kw))
    theirs, _ = _train(torch, lambda ps: getattr(torch.optim, name)(ps, **kw))
    for a, b, c in zip(ours, theirs, _numpy_steps(name, kw)):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_float64_parameters():
    kw = dict(lr=0.01, amsgrad=True, weight_decay=0.1)
    ours, opt = _train(nn, lambda ps: optim.Adam(ps, **kw), np.float64)
    theirs, _ = _train(torch, lambda ps: torch.optim.Adam(ps, **kw), np.float64)
    for a, b in zip(ours, theirs):
        assert a.dtype == np.float64
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert opt.state_dict()["state"][0]["exp_avg"].dtype == "float64"


def test_param_groups_with_their_own_hyper_parameters():
    def groups(ps):
        return [{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.5, "momentum": 0.0}]
    ours, opt = _train(nn, lambda ps: optim.SGD(groups(ps), lr=0.1, momentum=0.9))
    theirs, _ = _train(torch, lambda ps: torch.optim.SGD(groups(ps), lr=0.1, momentum=0.9))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert list(opt.state_dict()["state"]) == [0]          # no buffer without momentum


def test_add_param_group_and_defaults():
    a, b = _params(nn)
    opt = optim.Adam([a], lr=0.01)
    opt.add_param_group({"params": b, "betas": (0.5, 0.6)})
    assert opt.param_groups[1]["params"] == [b]
    assert opt.param_groups[1]["lr"] == 0.01 and opt.param_groups[1]["betas"] == (0.5, 0.6)
    assert optim.AdamW([a]).defaults["weight_decay"] == 1e-2


def test_named_parameters():
    layer = nn.Linear(3, 2)
    opt = optim.SGD(layer.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]


def test_state_dict_layout_matches_torch():
    _, ours = _train(nn, lambda ps: optim.Adam(ps, lr=0.01, amsgrad=True))
    _, theirs = _train(torch, lambda ps: torch.optim.Adam(ps, lr=0.01, amsgrad=True))
    a, b = ours.state_dict(), theirs.state_dict()
    assert a["param_groups"] == b["param_groups"]
    assert list(a["state"]) == list(b["state"]) == [0, 1]
    for k in (0, 1):
        assert list(a["state"][k]) == list(b["state"][k])
        for name, value in a["state"][k].items():
            assert isinstance(value, nn.Tensor)
            np.testing.assert_allclose(value.numpy(), b["state"][k][name].numpy(), rtol=1e-5,
                                       atol=1e-7)
    assert a["state"][0]["step"].shape == () and a["state"][0]["step"].item() == STEPS
    assert repr(ours) == repr(theirs)


def _copy_state(state_dict):
    return {"state": {k: {n: v.clone() for n, v in s.items()}
                      for k, s in state_dict["state"].items()},
            "param_groups": [dict(g) for g in state_dict["param_groups"]]}


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)),
                                     ("Adam", dict(lr=0.01)),
                                     ("Adagrad", dict(lr=0.1)),
                                     ("RMSprop", dict(lr=0.01, momentum=0.9))])
def test_resuming_from_a_state_dict_equals_not_stopping(name, kw):
    whole, _ = _train(nn, lambda ps: getattr(optim, name)(ps, **kw))
    params = _params(nn)
    opt = getattr(optim, name)(params, **kw)
    _set_grads(nn, params, GRADS[0])
    opt.step()
    saved = _copy_state(opt.state_dict())
    resumed = [nn.tensor(p.detach().numpy().copy(), requires_grad=True) for p in params]
    opt = getattr(optim, name)(resumed, lr=123.0)
    opt.load_state_dict(saved)
    assert opt.param_groups[0]["lr"] == kw["lr"]
    assert opt.param_groups[0]["params"][0] is resumed[0]
    for grads in GRADS[1:]:
        _set_grads(nn, resumed, grads)
        opt.step()
    for a, b in zip(whole, resumed):
        np.testing.assert_array_equal(a, b.detach().numpy())
    key = "momentum_buffer" if name == "SGD" else "step"      # loading copies the state
    assert opt.state[resumed[0]][key] is not saved["state"][0][key]


def test_load_state_dict_casts_and_converts_a_numeric_step():
    p = nn.tensor(INIT[0].astype(np.float64), requires_grad=True)
    opt = optim.Adam([p])
    state = {"step": 2, "exp_avg": nn.ones(SHAPES[0]), "exp_avg_sq": nn.ones(SHAPES[0])}
    opt.load_state_dict({"state": {0: state}, "param_groups": opt.state_dict()["param_groups"]})
    loaded = opt.state[p]
    assert loaded["step"].dtype == "float32" and loaded["step"].item() == 2.0
    assert loaded["exp_avg"].dtype == "float64"


def test_closure_runs_with_grad_enabled_and_returns_the_loss():
    w = nn.tensor([1.0, -2.0, 3.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss
    with nn.no_grad():
        loss = opt.step(closure)
    assert loss.item() == pytest.approx(14.0)
    np.testing.assert_allclose(w.detach().numpy(), [0.8, -1.6, 2.4], rtol=1e-6)


def test_zero_grad():
    a, b = _params(nn)
    opt = optim.SGD([a, b], lr=0.1)
    _set_grads(nn, [a, b], GRADS[0])
    grad = a.grad
    opt.zero_grad(set_to_none=False)
    assert a.grad is grad and not a.grad.numpy().any()
    opt.zero_grad()
    assert a.grad is None and b.grad is None


def test_parameters_without_grad_are_skipped():
    a, b = _params(nn)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = nn.tensor(GRADS[0][0])
    opt.step()
    np.testing.assert_array_equal(b.detach().numpy(), INIT[1])
    assert b not in opt.state and opt.state[a]["step"].item() == 1


def test_a_step_is_one_kernel_per_parameter_written_in_place():
    a, b = _params(nn)
    storage, version = a._data, a._version
    opt = optim.Adam([a, b], lr=0.1, amsgrad=True)
    _set_grads(nn, [a, b], GRADS[0])
    before = kernel_calls.copy()
    opt.step()
    calls = kernel_calls - before
    assert dict(calls) == {"adam_update": 2}
    assert a._data is storage and a._version == version + 1
    assert not np.array_equal(storage, INIT[0])
    exp_avg = opt.state[a]["exp_avg"]
    saved = opt.state_dict()["state"][0]["exp_avg"].numpy().copy()
    opt.step()                          # the state tensors are updated, not replaced
    assert opt.state[a]["exp_avg"] is exp_avg is opt.state_dict()["state"][0]["exp_avg"]
    assert not np.array_equal(exp_avg.numpy(), saved)


def test_scheduled_learning_rates_reuse_the_compiled_kernel():
    a, b = _params(nn)
    opt = optim.Adam([a, b], lr=0.1)
    _set_grads(nn, [a, b], GRADS[0])
    opt.step()
    misses = optimizer_module._build.cache_info().misses
    for lr in (0.05, 0.01):
        opt.param_groups[0]["lr"] = lr
        opt.step()
    assert optimizer_module._build.cache_info().misses == misses


def test_adagrad_creates_its_state_eagerly():
    a, _ = _params(nn)
    opt = optim.Adagrad([a], initial_accumulator_value=0.5)
    assert list(opt.state[a]) == ["step", "sum"]
    np.testing.assert_array_equal(opt.state[a]["sum"].numpy(), np.full(SHAPES[0], 0.5))


def test_training_a_layer_lowers_the_loss():
    nn.manual_seed(0)
    layer = nn.Linear(3, 1)
    x = nn.randn(16, 3)
    y = x @ nn.tensor([[1.0], [-2.0], [0.5]])
    opt = optim.Adam(layer.parameters(), lr=0.1)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = ((layer(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.05 * losses[0]


def test_parameters_on_the_gpu():
    kw = dict(lr=0.1, amsgrad=True)
    p = nn.tensor(INIT[0], device="cuda", requires_grad=True)
    opt = optim.Adam([p], **kw)
    q = torch.tensor(INIT[0], requires_grad=True)
    reference = torch.optim.Adam([q], **kw)
    for grads in GRADS[:2]:
        p.grad = nn.tensor(grads[0], device="cuda")
        q.grad = torch.tensor(grads[0])
        opt.step()
        reference.step()
    assert p.is_cuda and opt.state[p]["exp_avg"].is_cuda
    np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
