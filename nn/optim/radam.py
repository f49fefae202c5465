"""``RAdam``, as ``torch.optim.RAdam``: Adam with the variance of the adaptive learning rate
rectified (plain momentum SGD while it is intractable), L2 or decoupled weight decay,
maximize; one fused kernel per parameter (``nn.ops.optim.radam_update``)."""
from __future__ import annotations

import math

from nn.ops.optim import radam_update

from .optimizer import Optimizer, check_adam_family, decay_kind, no_differentiable

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """``RAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
    decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
    differentiable=False)``.

    Per step t: Adam's moments; ``rho_inf = 2 / (1 - beta2) - 1``, ``rho_t = rho_inf - 2 t
    beta2**t / (1 - beta2**t)``; when ``rho_t > 5``, ``p -= exp_avg / (1 - beta1**t) * lr *
    sqrt(1 - beta2**t) / (sqrt(exp_avg_sq) + eps) * rect`` (``rect`` the rectification term),
    else ``p -= exp_avg / (1 - beta1**t) * lr``.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        check_adam_family(lr, betas, eps, weight_decay)
        no_differentiable(differentiable)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, p, grad, group):
        names = ["exp_avg", "exp_avg_sq"]
        state, step = self._step_state(p, names)
        lr, weight_decay = float(group["lr"]), float(group["weight_decay"])
        beta1, beta2 = (float(b) for b in group["betas"])
        bias_correction2 = 1 - beta2 ** step
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        rectify = rho_t > 5.0
        rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                         / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) if rectify else 1.0
        hyper = (-lr, 1 - beta1, beta2, 1 - beta2, 1 - beta1 ** step,
                 bias_correction2 ** 0.5, float(group["eps"]), weight_decay,
                 1 - lr * weight_decay, rect)
        self._run_update(radam_update, p, grad, state, names, hyper,
                         weight_decay=decay_kind(group), rectify=rectify,
                         maximize=bool(group["maximize"]))
