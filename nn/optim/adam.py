"""``Adam`` and ``AdamW``, as ``torch.optim.Adam`` / ``AdamW``: bias-corrected moment
estimates, L2 (Adam) or decoupled (AdamW) weight decay, amsgrad, maximize; one fused kernel
per parameter (``nn.ops.optim.adam_update``)."""
from __future__ import annotations

import math

from nn.ops.optim import adam_update

from .. import autograd
from . import foreach as _foreach
from .optimizer import Optimizer, check_adam_family, decay_kind, no_differentiable

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """``Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
    foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
    decoupled_weight_decay=False)``.

    Per step t: ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 * v + (1 - beta2) * g * g``,
    ``p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)`` (with amsgrad the
    running maximum of v). Each update is one fused kernel; with ``foreach=True`` the host
    parameters of a group that share a dtype and a step count are updated by ONE
    multi-tensor kernel (``nn.optim.foreach``); with None (the default, as PyTorch's on the
    CPU) or False one kernel per parameter (the same values, bit for bit). ``fused`` and
    ``capturable`` are kept in the groups for compatibility.
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

    def _names(self, group):
        return ["exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if group["amsgrad"] else [])

    @staticmethod
    def _hyper(group, step):
        lr, weight_decay = float(group["lr"]), float(group["weight_decay"])
        beta1, beta2 = (float(b) for b in group["betas"])
        return (-lr / (1 - beta1 ** step), 1 - beta1, beta2, 1 - beta2,
                math.sqrt(1 - beta2 ** step), float(group["eps"]), weight_decay,
                1 - lr * weight_decay)

    @staticmethod
    def _flags(group):
        return dict(weight_decay=decay_kind(group), amsgrad=bool(group["amsgrad"]),
                    maximize=bool(group["maximize"]))

    def _update(self, p, grad, group):
        names = self._names(group)
        state, step = self._step_state(p, names)
        self._run_update(adam_update, p, grad, state, names, self._hyper(group, step),
                         **self._flags(group))

    def step(self, closure=None):
        """One update of every parameter that has a gradient (multi-tensor in the groups with
        ``foreach=True``)."""
        if not any(g.get("foreach") for g in self.param_groups):
            return super().step(closure)
        loss = None
        if closure is not None:
            with autograd.enable_grad():
                loss = closure()
        with autograd.no_grad():
            for group in self.param_groups:
                params = [p for p in group["params"] if p.grad is not None]
                if not group.get("foreach") or not _foreach.eligible(params):
                    for p in params:
                        self._update(p, p.grad, group)
                    continue
                names = self._names(group)
                stepped = [self._step_state(p, names) for p in params]
                steps = {step for _, step in stepped}
                if len(steps) != 1:         # parameters added later: their own counts
                    for p, (state, step) in zip(params, stepped):
                        self._run_update(adam_update, p, p.grad, state, names,
                                         self._hyper(group, step), **self._flags(group))
                    continue
                _foreach.multi_tensor_update(
                    adam_update, params, [st for st, _ in stepped], names,
                    self._hyper(group, steps.pop()),
                    [self._spares.setdefault(p, {}) for p in params], **self._flags(group))
        return loss


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
