"""te declaration of the dropout family's masking (the random numbers come in as an array).

``x`` is viewed as (A, B) and the uniform noise ``u`` as (A, B), or (A, 1) for the channel-wise
forms (one draw per channel, broadcast over its elements). An element is kept where
``u < 1 - p``; the output is ``x * keep * scale + (keep - 1 + p) * shift``: plain dropout has
``scale = 1 / (1 - p)`` and ``shift = 0``; alpha dropout ``scale = a`` and ``shift = alpha * a``,
which keeps a SELU network's mean and variance. The second output is ``keep * scale``, the
mask the gradient is multiplied by.
"""
from __future__ import annotations

import te

from . import cpu

__all__ = ["dropout_mask"]


def dropout_mask(x, u, *, p, scale, shift):
    """(output, scaled mask) of the dropout of ``x`` with noise ``u``."""
    dt = x.dtype
    keep_below = te.const(1.0 - p, u.dtype)

    def keep(v):
        return te.select(v < keep_below, te.const(1.0, dt), te.const(0.0, dt))

    def body(value, noise):
        k = keep(noise)
        out = value * k * te.const(scale, dt)
        if shift:
            out = out + (k - te.const(1.0 - p, dt)) * te.const(shift, dt)
        return out
    y = cpu.broadcast(body, x, u, name="dropout")
    mask = te.compute(u.shape, lambda *i: keep(u[i]) * te.const(scale, dt), name="mask",
                      tag="elemwise")
    return y, mask
