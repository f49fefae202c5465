"""LinearLR, SequentialLR, CosineAnnealingWarmRestarts and OneCycleLR: the rates (and
OneCycleLR's momentum / beta1) over 30 steps equal torch's; state dicts resume exactly."""
import pytest
import torch

import nn
from nn import optim
from nn.optim import lr_scheduler

STEPS = 30
LRS = [0.1, 0.03]


def _optimizer(lib, adam=False):
    params = [lib.zeros(2, requires_grad=True), lib.zeros(3, requires_grad=True)]
    groups = [{"params": [p], "lr": lr} for p, lr in zip(params, LRS)]
    o = optim if lib is nn else torch.optim
    return o.Adam(groups, lr=1.0) if adam else o.SGD(groups, lr=1.0, momentum=0.9)


def _module(lib):
    return lr_scheduler if lib is nn else torch.optim.lr_scheduler


SCHEDULERS = {
    "LinearLR": lambda o, m: m.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=7),
    "LinearLR_default": lambda o, m: m.LinearLR(o),
    "SequentialLR": lambda o, m: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=5),
            m.CosineAnnealingLR(o, T_max=8, eta_min=0.001),
            m.ExponentialLR(o, gamma=0.9)], milestones=[5, 13]),
    "CosineAnnealingWarmRestarts": lambda o, m: m.CosineAnnealingWarmRestarts(o, T_0=4,
                                                                              eta_min=0.002),
    "CosineAnnealingWarmRestarts_mult": lambda o, m: m.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2),
    "OneCycleLR": lambda o, m: m.OneCycleLR(o, max_lr=[0.5, 0.2], total_steps=STEPS + 1),
    "OneCycleLR_linear3": lambda o, m: m.OneCycleLR(o, max_lr=0.4, epochs=4,
                                                    steps_per_epoch=8, anneal_strategy="linear",
                                                    three_phase=True, pct_start=0.25),
}


def _numbers(rows):
    """The rates, momenta and betas of every step as one flat list of numbers."""
    flat = []
    for row in rows:
        for lr, momentum, betas in row:
            flat += [lr, -1.0 if momentum is None else momentum]
            flat += [] if betas is None else list(betas)
    return flat


def _rates(lib, make, adam=False, steps=STEPS):
    opt = _optimizer(lib, adam)
    sched = make(opt, _module(lib))
    seen = []
    for _ in range(steps):
        seen.append([(g["lr"], g.get("momentum"), g.get("betas")) for g in opt.param_groups])
        opt.step()
        sched.step()
        assert sched.get_last_lr() == [g["lr"] for g in opt.param_groups]
    return seen


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_rates_equal_torch(name):
    ours, theirs = _rates(nn, SCHEDULERS[name]), _rates(torch, SCHEDULERS[name])
    assert _numbers(ours) == pytest.approx(_numbers(theirs), rel=1e-12, abs=1e-15)


def test_one_cycle_cycles_adam_beta1():
    make = SCHEDULERS["OneCycleLR"]
    ours, theirs = _rates(nn, make, adam=True), _rates(torch, make, adam=True)
    assert _numbers(ours) == pytest.approx(_numbers(theirs), rel=1e-12, abs=1e-15)
    assert ours[5][0][2][0] != ours[20][0][2][0]        # beta1 did cycle


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_state_dict_round_trip_equals_not_stopping(name):
    make = SCHEDULERS[name]
    straight = _rates(nn, make)
    opt = _optimizer(nn)
    sched = make(opt, lr_scheduler)
    seen = []
    for _ in range(11):
        seen.append([(g["lr"], g.get("momentum"), g.get("betas")) for g in opt.param_groups])
        opt.step()
        sched.step()
    opt_state, sched_state = opt.state_dict(), sched.state_dict()
    opt2 = _optimizer(nn)
    sched2 = make(opt2, lr_scheduler)
    opt2.load_state_dict(opt_state)
    sched2.load_state_dict(sched_state)
    for _ in range(STEPS - 11):
        seen.append([(g["lr"], g.get("momentum"), g.get("betas")) for g in opt2.param_groups])
        opt2.step()
        sched2.step()
    assert _numbers(seen) == pytest.approx(_numbers(straight), rel=1e-12, abs=1e-15)


def test_errors():
    opt = _optimizer(nn)
    with pytest.raises(ValueError):
        lr_scheduler.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError):
        lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError):
        lr_scheduler.SequentialLR(opt, [lr_scheduler.StepLR(opt, 2)], milestones=[3])
    sched = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=2)
    for _ in range(2):
        opt.step()
        sched.step()
    with pytest.raises(ValueError):
        sched.step()
