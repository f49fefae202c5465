"""``NAdam``, as ``torch.optim.NAdam``: Adam with Nesterov momentum and a momentum-decay
schedule, L2 or decoupled weight decay, maximize; one fused kernel per parameter
(``nn.ops.optim.nadam_update``)."""
from __future__ import annotations

import numpy as np

from nn.ops.optim import nadam_update

from .optimizer import (Optimizer, check_adam_family, check_nonnegative, decay_kind,
                        no_differentiable)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """``NAdam(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
    momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None, maximize=False,
    capturable=False, differentiable=False)``.

    Per step t: ``mu_t = beta1 * (1 - 0.5 * 0.96**(t * momentum_decay))``, ``mu_product *=
    mu_t`` (a float32 0-d state, as PyTorch's), Adam's moments, then
    ``p -= lr * (1 - mu_t) / (1 - mu_product) * g / denom + lr * mu_{t+1} / (1 - mu_product *
    mu_{t+1}) * exp_avg / denom`` with ``denom = sqrt(exp_avg_sq / (1 - beta2**t)) + eps``.
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        check_adam_family(lr, betas, eps, weight_decay)
        check_nonnegative(momentum_decay=momentum_decay)
        no_differentiable(differentiable)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, p, grad, group):
        names = ["exp_avg", "exp_avg_sq"]
        state, step = self._step_state(p, names, mu_product=1.0)
        lr, weight_decay = float(group["lr"]), float(group["weight_decay"])
        beta1, beta2 = (float(b) for b in group["betas"])
        decay = float(group["momentum_decay"])
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * decay))
        mu_product = _times(state["mu_product"], mu)
        hyper = (-lr * (1.0 - mu) / (1.0 - mu_product), 1 - beta1, beta2, 1 - beta2,
                 1 - beta2 ** step, float(group["eps"]), weight_decay, 1 - lr * weight_decay,
                 -lr * mu_next / (1.0 - mu_product * mu_next))
        self._run_update(nadam_update, p, grad, state, names, hyper,
                         weight_decay=decay_kind(group), maximize=bool(group["maximize"]))


def _times(product, factor):
    """``product *= factor`` in the 0-d tensor's own precision (float32, as PyTorch's);
    returns the new value."""
    dtype = np.dtype(product._data.dtype)
    value = float(dtype.type(product.item()) * dtype.type(factor))
    product.fill_(value)
    return value
