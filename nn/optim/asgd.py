"""``ASGD``, as ``torch.optim.ASGD``: averaged stochastic gradient descent, SGD with a
decaying learning rate ``eta`` and a running average ``ax`` of the parameter that starts
after ``t0`` steps; one fused kernel per parameter (``nn.ops.optim.asgd_update``)."""
from __future__ import annotations

from nn.ops.optim import asgd_update

from .optimizer import Optimizer, check_nonnegative, check_numbers, no_differentiable

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """``ASGD(params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
    maximize=False, differentiable=False, capturable=False)``.

    Per step t: ``p = p * (1 - lambd * eta) - eta * g``; ``ax += mu * (p - ax)`` (``ax = p``
    while mu is 1); then ``eta = lr / (1 + lambd * lr * t) ** alpha`` and ``mu = 1 / max(1,
    t - t0)``. State: ``step``, ``eta``, ``mu`` (0-d float32 tensors, as PyTorch's) and
    ``ax``.
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        check_nonnegative(lr=lr, weight_decay=weight_decay)
        check_numbers(lambd=lambd, alpha=alpha, t0=t0)
        no_differentiable(differentiable)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def _update(self, p, grad, group):
        lr, lambd = float(group["lr"]), float(group["lambd"])
        state, step = self._step_state(p, ["ax"], eta=lr, mu=1.0)
        eta, mu = state["eta"].item(), state["mu"].item()
        weight_decay = float(group["weight_decay"])
        self._run_update(asgd_update, p, grad, state, ["ax"],
                         (1 - lambd * eta, -eta, weight_decay, mu),
                         weight_decay=weight_decay != 0, maximize=bool(group["maximize"]),
                         average=mu != 1)
        state["eta"].fill_(lr / ((1 + lambd * lr * step) ** float(group["alpha"])))
        state["mu"].fill_(1 / max(1, step - float(group["t0"])))
