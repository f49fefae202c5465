"""``NAdam``, as ``torch.optim.NAdam``: Adam with Nesterov momentum and a momentum-decay
schedule, L2 or decoupled weight decay, maximize; one fused kernel per parameter
(``nn.ops.optim.nadam_update``)."""
from __future__ import annotations

import numpy as np

from nn.ops.optim import nadam_update

from ..tensor import tensor, zeros_like
from .optimizer import Optimizer, check_betas, check_numbers, count_step, no_differentiable

__all__ = ["NAdam"]


def check_adam_family(lr, betas, eps, weight_decay):
    """The checks Adam's relatives share, with PyTorch's messages."""
    check_numbers(lr=lr, eps=eps, weight_decay=weight_decay)
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    check_betas(betas)
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def decay_kind(group):
    """"none", "l2" or "decoupled": the compile-time weight-decay choice of a group."""
    if float(group["weight_decay"]) == 0:
        return "none"
    return "decoupled" if group["decoupled_weight_decay"] else "l2"


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
        check_numbers(momentum_decay=momentum_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        no_differentiable(differentiable)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, p, grad, group):
        state = self.state[p]
        names = ["exp_avg", "exp_avg_sq"]
        if not state:
            state["step"] = tensor(0.0)
            state["mu_product"] = tensor(1.0)
        for name in names:
            if name not in state:
                state[name] = zeros_like(p)
        step = count_step(state)
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
