"""``Adagrad``, as ``torch.optim.Adagrad``: per-element learning rates from the running sum of
squared gradients, learning-rate decay, weight decay, maximize; one fused kernel per parameter
(``nn.ops.optim.adagrad_update``)."""
from __future__ import annotations

from nn.ops.optim import adagrad_update

from ..tensor import full_like, tensor
from .optimizer import Optimizer, check_nonnegative, count_step, no_differentiable

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """``Adagrad(params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
    eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None)``.

    Per step t: ``clr = lr / (1 + (t - 1) * lr_decay)``, ``sum += g * g``,
    ``p -= clr * g / (sqrt(sum) + eps)``. The state ("step", "sum") is created with the
    optimizer, as PyTorch's.
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0,
                 initial_accumulator_value=0, eps=1e-10, foreach=None, *, maximize=False,
                 differentiable=False, fused=None):
        check_nonnegative(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                          initial_accumulator_value=initial_accumulator_value, eps=eps)
        no_differentiable(differentiable)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def _init_group(self, group):
        for p in group["params"]:
            state = self.state[p]
            state["step"] = tensor(0.0)
            state["sum"] = full_like(p, group["initial_accumulator_value"])

    def _update(self, p, grad, group):
        state = self.state[p]
        step = count_step(state)
        clr = float(group["lr"]) / (1 + (step - 1) * float(group["lr_decay"]))
        hyper = (-clr, float(group["weight_decay"]), float(group["eps"]))
        self._run_update(adagrad_update, p, grad, state, ["sum"], hyper,
                     weight_decay=group["weight_decay"] != 0, maximize=bool(group["maximize"]))
