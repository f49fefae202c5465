"""``Adadelta``, as ``torch.optim.Adadelta``: steps scaled by the ratio of running RMS of
updates and of gradients, L2 weight decay and maximize; one fused kernel per parameter
(``nn.ops.optim.adadelta_update``)."""
from __future__ import annotations

from nn.ops.optim import adadelta_update

from .optimizer import Optimizer, check_nonnegative, check_numbers, no_differentiable

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """``Adadelta(params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
    capturable=False, maximize=False, differentiable=False)``.

    ``square_avg = rho * square_avg + (1 - rho) * g * g``, ``delta = sqrt(acc_delta + eps) /
    sqrt(square_avg + eps) * g``, ``acc_delta = rho * acc_delta + (1 - rho) * delta * delta``,
    ``p -= lr * delta``.
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        check_nonnegative(lr=lr)
        check_numbers(rho=rho)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonnegative(eps=eps, weight_decay=weight_decay)
        no_differentiable(differentiable)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, p, grad, group):
        names = ["square_avg", "acc_delta"]
        state, _ = self._step_state(p, names)
        rho = float(group["rho"])
        hyper = (-float(group["lr"]), rho, 1 - rho, float(group["eps"]),
                 float(group["weight_decay"]))
        self._run_update(adadelta_update, p, grad, state, names, hyper,
                         weight_decay=group["weight_decay"] != 0,
                         maximize=bool(group["maximize"]))
