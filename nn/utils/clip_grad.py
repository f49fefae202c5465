"""Gradient clipping with PyTorch's signatures and results: ``clip_grad_norm_`` scales all the
gradients together so that their total norm is at most ``max_norm``; ``clip_grad_value_``
clamps each element. Both write the ``.grad`` tensors in place, outside the graph."""
from __future__ import annotations

import math

from .. import functions as F
from ..autograd import no_grad
from ..tensor import Tensor, tensor, zeros


def _grads(parameters, name):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    params = list(parameters)
    for p in params:
        if not isinstance(p, Tensor):
            raise TypeError(f"{name}(): parameters must be Tensors or an iterable of Tensors, "
                            f"got {type(p).__name__}")
    return [p.grad for p in params if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale the gradients of ``parameters`` by ``max_norm / (total_norm + 1e-6)`` where
    that is below 1; ``total_norm`` (returned) is the ``norm_type``-norm of all the gradients
    together (``inf``: the largest magnitude). ``foreach`` is accepted and ignored."""
    grads = _grads(parameters, "clip_grad_norm_")
    norm_type = float(norm_type)
    if not grads:
        return tensor(0.0)
    with no_grad():
        if norm_type == math.inf:
            norms = [g.abs().amax() if g.numel() else zeros((), dtype=g.dtype, device=g.device)
                     for g in grads]
            total = F.stack([n.to(grads[0].device) for n in norms]).amax()
        else:
            norms = [F.norm(g, p=norm_type) for g in grads]
            total = F.norm(F.stack([n.to(grads[0].device) for n in norms]), p=norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                               "`parameters` is non-finite, so it cannot be clipped. To disable "
                               "this error and scale the gradients by the non-finite norm "
                               "anyway, set `error_if_nonfinite=False`")
        coef = F.clamp(max_norm / (total + 1e-6), max=1.0)
        for g in grads:
            g.mul_(coef.to(g.device, g.dtype))
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element of ``parameters`` to ``[-clip_value, clip_value]``
    (``foreach`` is accepted and ignored)."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters, "clip_grad_value_"):
            g.clamp_(-clip_value, clip_value)
