"""``Adamax``, as ``torch.optim.Adamax``: Adam with the infinity norm in place of the second
moment, L2 weight decay and maximize; one fused kernel per parameter
(``nn.ops.optim.adamax_update``)."""
from __future__ import annotations

from nn.ops.optim import adamax_update

from .optimizer import Optimizer, check_adam_family, no_differentiable

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """``Adamax(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None,
    *, maximize=False, differentiable=False, capturable=False)``.

    Per step t: ``exp_avg = lerp(exp_avg, g, 1 - beta1)``, ``exp_inf = max(beta2 * exp_inf,
    |g| + eps)``, ``p -= lr / (1 - beta1**t) * exp_avg / exp_inf``.
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        check_adam_family(lr, betas, eps, weight_decay)
        no_differentiable(differentiable)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def _update(self, p, grad, group):
        names = ["exp_avg", "exp_inf"]
        state, step = self._step_state(p, names)
        beta1, beta2 = (float(b) for b in group["betas"])
        hyper = (-float(group["lr"]) / (1 - beta1 ** step), 1 - beta1, beta2,
                 float(group["eps"]), float(group["weight_decay"]))
        self._run_update(adamax_update, p, grad, state, names, hyper,
                         weight_decay=group["weight_decay"] != 0,
                         maximize=bool(group["maximize"]))
