"""nn.optim.lr_scheduler: the rates over 25+ epochs equal torch's schedulers and the formulas
written out here; PyTorch's last_epoch semantics; state dicts (resuming equals not stopping)."""
import math
import warnings

import pytest
import torch

import nn
from nn import optim
from nn.optim import lr_scheduler

EPOCHS = 25
LRS = [0.1, 0.03]           # two parameter groups


def _optimizer(lib):
    params = [lib.zeros(2, requires_grad=True), lib.zeros(3, requires_grad=True)]
    groups = [{"params": [p], "lr": lr} for p, lr in zip(params, LRS)]
    return (optim if lib is nn else torch.optim).SGD(groups, lr=1.0, momentum=0.9)


def _rates(lib, make, epochs=EPOCHS, metrics=None):
    """The learning rates of each epoch, as a training loop sees them."""
    opt = _optimizer(lib)
    sched = make(opt, lib)
    seen = []
    for epoch in range(epochs):
        seen.append([g["lr"] for g in opt.param_groups])
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[epoch])
        assert sched.get_last_lr() == [g["lr"] for g in opt.param_groups]
    return seen


def _flat(rows):
    return [x for row in rows for x in row]


def _module(lib):
    return lr_scheduler if lib is nn else torch.optim.lr_scheduler


SCHEDULERS = {
    "StepLR": lambda o, lib: _module(lib).StepLR(o, step_size=4, gamma=0.5),
    "MultiStepLR": lambda o, lib: _module(lib).MultiStepLR(o, [3, 7, 7, 15], gamma=0.3),
    "ExponentialLR": lambda o, lib: _module(lib).ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda o, lib: _module(lib).CosineAnnealingLR(o, T_max=10,
                                                                       eta_min=0.001),
    "LambdaLR": lambda o, lib: _module(lib).LambdaLR(o, [lambda e: 1 / (e + 1),
                                                         lambda e: 0.95 ** e]),
}

FORMULAS = {
    "StepLR": lambda lr, e: lr * 0.5 ** (e // 4),
    "MultiStepLR": lambda lr, e: lr * 0.3 ** sum(m <= e for m in [3, 7, 7, 15]),
    "ExponentialLR": lambda lr, e: lr * 0.9 ** e,
    "CosineAnnealingLR": lambda lr, e: 0.001 + (lr - 0.001) * (1 + math.cos(math.pi * e / 10))
    / 2,
}


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_rates_equal_torch_and_the_formula(name):
    ours = _rates(nn, SCHEDULERS[name])
    assert _flat(ours) == pytest.approx(_flat(_rates(torch, SCHEDULERS[name])), rel=1e-12)
    if name == "LambdaLR":
        expected = [[LRS[0] / (e + 1), LRS[1] * 0.95 ** e] for e in range(EPOCHS)]
    else:
        expected = [[FORMULAS[name](lr, e) for lr in LRS] for e in range(EPOCHS)]
    assert _flat(ours) == pytest.approx(_flat(expected), rel=1e-9)


PLATEAUS = [dict(patience=3), dict(mode="max", factor=0.5, patience=2, cooldown=2),
            dict(threshold=0.1, threshold_mode="abs", patience=1, min_lr=[0.02, 0.001]),
            dict(mode="max", threshold_mode="abs", patience=0, eps=0.05)]
METRICS = [1.0, 0.9, 0.95, 0.92, 0.91, 0.95, 0.96, 0.8, 0.85, 0.86, 0.9, 0.79, 0.78, 0.78,
           0.9, 1.0, 1.1, 0.7, 0.71, 0.72, 0.73, 0.74, 0.75, 0.76, 0.77]


@pytest.mark.parametrize("kw", PLATEAUS, ids=str)
def test_reduce_lr_on_plateau_equals_torch(kw):
    def make(o, lib):
        return _module(lib).ReduceLROnPlateau(o, **kw)
    ours = _rates(nn, make, metrics=METRICS)
    assert ours == _rates(torch, make, metrics=METRICS)
    assert ours[-1] != ours[0]


def test_reduce_lr_on_plateau_by_hand():
    opt = _optimizer(nn)
    sched = lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1)
    for metric, lr in [(1.0, 0.1), (1.0, 0.1), (1.0, 0.05), (0.5, 0.05), (0.6, 0.05),
                       (0.6, 0.025)]:
        sched.step(nn.tensor(metric))
        assert opt.param_groups[0]["lr"] == pytest.approx(lr)


def test_the_constructor_takes_the_first_step():
    opt = _optimizer(nn)
    sched = lr_scheduler.StepLR(opt, step_size=2)
    assert sched.last_epoch == 0 and sched.base_lrs == LRS
    assert [g["initial_lr"] for g in opt.param_groups] == LRS
    assert sched.get_last_lr() == LRS


def test_resuming_with_last_epoch_keeps_the_current_rates():
    def run(lib):
        opt = _optimizer(lib)
        for g in opt.param_groups:
            g["initial_lr"] = g["lr"] * 4
        sched = _module(lib).ExponentialLR(opt, gamma=0.5, last_epoch=3)
        first = sched.get_last_lr()
        opt.step()
        sched.step()
        return first, sched.get_last_lr(), sched.last_epoch, sched.base_lrs
    ours = run(nn)
    assert ours == run(torch)
    assert ours[0] == LRS and ours[1] == pytest.approx([lr * 0.5 for lr in LRS])
    assert ours[2] == 5                 # the constructor's step counted epoch 4


def test_state_dict_round_trip_equals_not_stopping():
    make = SCHEDULERS["CosineAnnealingLR"]
    whole = _rates(nn, make, epochs=12)
    opt = _optimizer(nn)
    sched = make(opt, nn)
    for _ in range(5):
        opt.step()
        sched.step()
    saved, groups = sched.state_dict(), opt.state_dict()["param_groups"]
    assert "optimizer" not in saved and saved["last_epoch"] == 5
    opt2 = _optimizer(nn)
    sched2 = make(opt2, nn)
    opt2.load_state_dict({"state": {}, "param_groups": groups})
    sched2.load_state_dict(saved)
    rates = []
    for _ in range(7):
        rates.append([g["lr"] for g in opt2.param_groups])
        opt2.step()
        sched2.step()
    assert rates == whole[5:]


def test_lambda_lr_state_dict_keeps_callable_objects_not_functions():
    class Decay:
        def __init__(self):
            self.rate = 0.5

        def __call__(self, epoch):
            return self.rate ** epoch

    opt = _optimizer(nn)
    sched = lr_scheduler.LambdaLR(opt, [lambda e: 1.0, Decay()])
    saved = sched.state_dict()
    assert saved["lr_lambdas"] == [None, {"rate": 0.5}]
    saved["lr_lambdas"][1]["rate"] = 0.25
    sched.load_state_dict(saved)
    assert sched.lr_lambdas[1].rate == 0.25


def test_epoch_argument_uses_the_closed_form():
    opt = _optimizer(nn)
    sched = lr_scheduler.StepLR(opt, step_size=3, gamma=0.1)
    opt.step()
    with pytest.warns(UserWarning, match="epoch parameter"):
        sched.step(7)
    assert sched.get_last_lr() == pytest.approx([lr * 0.01 for lr in LRS])


def test_warns_when_the_scheduler_steps_before_the_optimizer():
    opt = _optimizer(nn)
    sched = lr_scheduler.StepLR(opt, step_size=3)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt = _optimizer(nn)
    sched = lr_scheduler.StepLR(opt, step_size=3)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()


def test_the_scheduled_rate_reaches_the_update():
    p = nn.tensor([1.0], requires_grad=True)
    opt = optim.SGD([p], lr=1.0)
    sched = lr_scheduler.MultiStepLR(opt, [1], gamma=0.5)
    for _ in range(2):
        p.grad = nn.tensor([1.0])
        opt.step()
        sched.step()
    assert p.item() == pytest.approx(1.0 - 1.0 - 0.5)


def test_multistep_state_dict_holds_plain_types():
    opt = _optimizer(nn)
    sched = lr_scheduler.MultiStepLR(opt, [2, 4, 4], gamma=0.5)
    saved = sched.state_dict()
    assert type(saved["milestones"]) is dict and saved["milestones"] == {2: 1, 4: 2}
    resumed = lr_scheduler.MultiStepLR(_optimizer(nn), [9])
    resumed.load_state_dict(saved)
    for _ in range(4):
        resumed.optimizer.step()
        resumed.step()
    assert resumed.get_last_lr() == pytest.approx([lr * 0.5 ** 3 for lr in LRS])
