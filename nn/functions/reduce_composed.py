"""Reductions composed of the others: trace, count_nonzero, nansum, aminmax, dist, renorm,
cov, corrcoef, quantile and nanquantile, with PyTorch's signatures; their gradients come from
the composition. ``nn.functions.reduce`` exports these names.
"""
from __future__ import annotations

import collections
import warnings

import numpy as np

from .. import device as devices

from .base import FLOATING, Tensor, _dim, cast, torch_name
from .elementwise import where
from .reduce import amax, amin, mean, norm, sum

__all__ = ["trace", "count_nonzero", "nansum", "aminmax", "dist", "renorm", "cov",
           "corrcoef", "quantile", "nanquantile"]


aminmax_result = collections.namedtuple("aminmax", ["min", "max"])


# ----------------------------------------------------------------------------- composed reductions

def trace(input):
    """The sum of the main diagonal of a matrix (integers sum in int64)."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return sum(input.diagonal())


def count_nonzero(input, dim=None):
    """The number of nonzero elements over ``dim`` (all when None), int64."""
    if dim is not None:
        named = [_dim(d, input.ndim) for d in ((dim,) if isinstance(dim, int) else dim)]
        for k, d in enumerate(named):
            if d in named[:k]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return sum(input != 0, dim)


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """``sum`` with NaN counted as zero."""
    if input.dtype in FLOATING:
        input = where(input.isnan(), 0.0, input)
    return sum(input, dim, keepdim, dtype=dtype)


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) over ``dim`` (all when None), as a named tuple."""
    if input.numel() == 0 and (dim is None or input.shape[_dim(dim, input.ndim)] == 0):
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    if dim is None:
        out = aminmax_result(amin(input), amax(input))
        return aminmax_result(*(o.reshape((1,) * input.ndim) for o in out)) if keepdim \
            else out
    return aminmax_result(amin(input, dim, keepdim), amax(input, dim, keepdim))


def dist(input, other, p=2):
    """The ``p``-norm of ``input - other``."""
    return norm(input - other, p)


def renorm(input, p, dim, maxnorm):
    """``input`` with each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled
    down to norm ``maxnorm``."""
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           "dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = _dim(dim, input.ndim)
    others = tuple(k for k in range(input.ndim) if k != d)
    norms = norm(input, p, others, keepdim=True)
    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * factor


def _check_weights(name, weights, n):
    if weights.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {weights.ndim} dimensions")
    if weights.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {weights.numel()} != {n}")


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of ``input`` (observations in the
    columns), optionally weighted by integer ``fweights`` and real ``aweights``."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if x.dtype not in FLOATING:
        x = cast(x, "float32")
    n = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, n)
        if fweights.is_floating_point():
            raise RuntimeError("cov(): expected fweights to have integral dtype but got "
                               f"fweights with {torch_name(fweights.dtype)} dtype")
        w = fweights.reshape(-1)
    if aweights is not None:
        _check_weights("aweights", aweights, n)
        if not aweights.is_floating_point():
            raise RuntimeError("cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {torch_name(aweights.dtype)} dtype")
        w = aweights.reshape(-1) if w is None else w * aweights.reshape(-1)
    if w is None:
        total = float(n)
        avg = mean(x, 1, keepdim=True)
        factor = total - correction
    else:
        w = cast(w, x.dtype)
        total = sum(w)
        avg = sum(x * w, 1, keepdim=True) / total
        factor = total - correction * (sum(w * aweights) / total if aweights is not None
                                       else 1)
    if float(factor) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        factor = 0.0 * factor if isinstance(factor, Tensor) else 0.0
    centered = x - avg
    weighted = centered if w is None else centered * w
    out = (centered @ weighted.transpose(0, 1)) / factor
    return out.reshape(()) if input.ndim < 2 else out


def corrcoef(input):
    """The Pearson correlation coefficients of the variables in the rows of ``input``."""
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but "
                           f"got an input with {input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = c.diagonal().sqrt()
    c = c / std.reshape(-1, 1) / std.reshape(1, -1)
    return c.clamp(-1, 1)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan):
    from .base import to_device
    from .index import gather
    from .sorting import sort
    if input.dtype not in ("float32", "float64"):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype != input.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        qs, scalar = np.asarray(devices.host(q._data), "float64").reshape(-1), q.ndim == 0
    else:
        qs, scalar = np.asarray([q], "float64"), True
    if input.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    for v in qs:
        if not 0 <= v <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {v}")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        x, d = (input.reshape(1), 0) if input.ndim == 0 else (input, _dim(dim, input.ndim))
    values = sort(x, d).values.movedim(d, -1)                # (..., n), NaN last
    host = devices.host(values._data)
    n = host.shape[-1]
    nans = np.isnan(host)
    if ignore_nan:
        last = (n - nans.sum(-1, keepdims=True) - 1).astype("float64")    # (..., 1)
    else:
        last = np.where(nans.any(-1, keepdims=True), -1.0, n - 1.0)
    ranks = qs.reshape((-1,) + (1,) * host.ndim) * np.maximum(last, 0)   # (Q, ..., 1)
    ranks = np.where(last < 0, np.where(ignore_nan, 0.0, n - 1.0), ranks)
    if interpolation == "lower":
        ranks = np.floor(ranks)
    elif interpolation == "higher":
        ranks = np.ceil(ranks)
    elif interpolation == "nearest":
        ranks = np.round(ranks)
    below, above = np.floor(ranks).astype("int64"), np.ceil(ranks).astype("int64")
    weights = np.full(ranks.shape, 0.5) if interpolation == "midpoint" else ranks - below
    q_count = qs.shape[0]
    expanded = values.unsqueeze(0).expand((q_count,) + values.shape)

    def at(positions):
        index = to_device(Tensor(np.ascontiguousarray(positions)), input.device)
        return gather(expanded, -1, index)
    low, high = at(below), at(above)
    weight = to_device(Tensor(np.ascontiguousarray(weights.astype(input.dtype))),
                       input.device)
    out = (low + (high - low) * weight).squeeze(-1)          # (Q, ...)
    if keepdim:
        if dim is None:
            out = out.reshape((q_count,) + (1,) * input.ndim)
        elif input.ndim:
            out = out.unsqueeze(d + 1)
    return out.squeeze(0) if scalar else out


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-th quantiles of ``input`` along ``dim`` (flattened when None); a row with
    NaN gives NaN. ``q`` a number or a 1-D tensor (its values along a new first dimension)."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """``quantile`` ignoring NaN (NaN for a row of NaN only)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)
