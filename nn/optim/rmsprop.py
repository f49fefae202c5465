"""``RMSprop``, as ``torch.optim.RMSprop``: steps scaled by a running mean of squared
gradients, optionally centered, with momentum, weight decay and maximize; one fused kernel per
parameter (``nn.ops.optim.rmsprop_update``)."""
from __future__ import annotations

from nn.ops.optim import rmsprop_update

from .optimizer import Optimizer, check_nonnegative, no_differentiable

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """``RMSprop(params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
    centered=False, capturable=False, foreach=None, maximize=False, differentiable=False)``.

    ``square_avg = alpha * square_avg + (1 - alpha) * g * g``; ``avg = sqrt(square_avg -
    grad_avg**2) + eps`` when centered (``grad_avg = lerp(grad_avg, g, 1 - alpha)``), else
    ``sqrt(square_avg) + eps``; with momentum ``buf = momentum * buf + g / avg`` and
    ``p -= lr * buf``, else ``p -= lr * g / avg``.
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        check_nonnegative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay,
                          alpha=alpha)
        no_differentiable(differentiable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, p, grad, group):
        momentum, centered = float(group["momentum"]), bool(group["centered"])
        names = ["square_avg"] + (["momentum_buffer"] if momentum > 0 else []) + \
            (["grad_avg"] if centered else [])
        state, _ = self._step_state(p, names)
        alpha = float(group["alpha"])
        hyper = (-float(group["lr"]), alpha, 1 - alpha, float(group["eps"]),
                 float(group["weight_decay"]), momentum)
        self._run_update(rmsprop_update, p, grad, state, names, hyper,
                     weight_decay=group["weight_decay"] != 0, momentum=momentum > 0,
                     centered=centered, maximize=bool(group["maximize"]))
