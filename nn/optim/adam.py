"""``Adam`` and ``AdamW``, as ``torch.optim.Adam`` / ``AdamW``: bias-corrected moment
estimates, L2 (Adam) or decoupled (AdamW) weight decay, amsgrad, maximize; one fused kernel
per parameter (``nn.ops.optim.adam_update``)."""
from __future__ import annotations

import math

from nn.ops.optim import adam_update

from .optimizer import Optimizer, check_adam_family, decay_kind, no_differentiable

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """``Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
    foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
    decoupled_weight_decay=False)``.

    Per step t: ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 * v + (1 - beta2) * g * g``,
    ``p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)`` (with amsgrad the
    running maximum of v). ``foreach``, ``fused`` and ``capturable`` are kept in the groups for
    compatibility: every update here is one fused kernel.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        check_adam_family(lr, betas, eps, weight_decay)
        no_differentiable(differentiable)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps,
                        weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _update(self, p, grad, group):
        names = ["exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if group["amsgrad"] else [])
        state, step = self._step_state(p, names)
        lr, weight_decay = float(group["lr"]), float(group["weight_decay"])
        beta1, beta2 = (float(b) for b in group["betas"])
        decay = decay_kind(group)
        hyper = (-lr / (1 - beta1 ** step), 1 - beta1, beta2, 1 - beta2,
                 math.sqrt(1 - beta2 ** step), float(group["eps"]), weight_decay,
                 1 - lr * weight_decay)
        self._run_update(adam_update, p, grad, state, names, hyper, weight_decay=decay,
                     amsgrad=bool(group["amsgrad"]), maximize=bool(group["maximize"]))


class AdamW(Adam):
    """``AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
    amsgrad=False, *, maximize=False, foreach=None, capturable=False, differentiable=False,
    fused=None)``: Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` before the
    Adam step)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
