"""Operators that copy data into a new arrangement: repeat, tile, flip, roll, rot90, tril,
triu, diag, diag_embed, block_diag, meshgrid, cartesian_prod, combinations, diff.

The copies run the te kernels of ``nn.ops.index`` (``Repeat``, ``Flip``, ``Roll``, ``Tril``,
``Triu``); the others are composed of views, joins and those copies.
``nn.functions.shape`` exports these names.
"""
from __future__ import annotations

import builtins

import numpy as np

from nn.ops import index as ops

from .base import Op, Tensor, _dim
from .join_split import _tensors, cat, stack
from .shape import DiagonalBackward, _run, diagonal, expand, flatten, narrow, transpose

__all__ = ["repeat", "tile", "flip", "roll", "tril", "triu", "meshgrid", "diff", "rot90",
           "diag", "diag_embed", "block_diag", "cartesian_prod", "combinations"]


class Repeat(Op):
    """``x`` tiled ``sizes`` times (one kernel); the gradient sums the tiles."""

    @staticmethod
    def forward(ctx, x, sizes):
        ctx.shape, ctx.sizes = x.shape, sizes
        src = x._data.reshape((1,) * (len(sizes) - x.ndim) + x.shape)
        shape = tuple(r * n for r, n in zip(sizes, src.shape))
        return _run(ops.repeat, src, out_shape=shape, dtype=x.dtype, shape=shape,
                    schedule=ops.schedule_copy)

    @staticmethod
    def backward(ctx, g):
        src = (1,) * (len(ctx.sizes) - len(ctx.shape)) + ctx.shape
        pairs = [n for r, m in zip(ctx.sizes, src) for n in (r, m)]
        tiles = g.reshape(pairs).sum(tuple(range(0, len(pairs), 2)))
        return tiles.reshape(ctx.shape), None


class Flip(Op):
    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return _run(ops.flip, x._data, out_shape=x.shape, dtype=x.dtype, dims=dims,
                    schedule=ops.schedule_copy)

    @staticmethod
    def backward(ctx, g):
        return Flip.apply(g, ctx.dims), None


class Roll(Op):
    @staticmethod
    def forward(ctx, x, shifts, dims):
        ctx.shape, ctx.shifts, ctx.dims = x.shape, shifts, dims
        return _run(ops.roll, x._data, out_shape=x.shape, dtype=x.dtype, shifts=shifts,
                    dims=dims, schedule=ops.schedule_copy)

    @staticmethod
    def backward(ctx, g):
        back = tuple((ctx.shape[d] - s) % ctx.shape[d] for s, d in zip(ctx.shifts, ctx.dims))
        return Roll.apply(g, back, ctx.dims), None, None


def _triangle_op(name, upper):
    """The Op keeping the lower (``tril``) or upper (``triu``) triangle; its gradient is the
    same triangle of ``g``."""

    def forward(ctx, x, diagonal):
        ctx.diagonal = diagonal
        return _run(ops.triangle, x._data, out_shape=x.shape, dtype=x.dtype,
                    diagonal=diagonal, upper=upper)

    def backward(ctx, g):
        return op.apply(g, ctx.diagonal), None
    op = type(name, (Op,), {"forward": staticmethod(forward), "backward": staticmethod(backward),
                            "__module__": __name__, "__doc__": f"``{name.lower()}``."})
    return op


Tril = _triangle_op("Tril", upper=False)
Triu = _triangle_op("Triu", upper=True)


# ----------------------------------------------------------------------------- functions

def repeat(x, sizes):
    """``x`` tiled ``sizes[k]`` times along dimension ``k`` (a copy)."""
    sizes = tuple(int(n) for n in sizes)
    if len(sizes) < x.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    if any(n < 0 for n in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension: repeats "
                           f"{list(sizes)}")
    return Repeat.apply(x, sizes)


def tile(input, dims):
    """``repeat`` with ``dims`` padded with leading ones to the rank of ``input``."""
    dims = tuple(dims)
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


def flip(input, dims, *more):
    """``input`` reversed along ``dims`` (a copy)."""
    dims = (dims,) + more if isinstance(dims, int) else tuple(dims) + more
    dims = tuple(sorted({_dim(d, input.ndim) for d in dims}))
    return Flip.apply(input, dims) if input.ndim else Flip.apply(input, ())


def roll(input, shifts, dims=None):
    """``input`` rotated by ``shifts`` along ``dims`` (the flattened tensor when None)."""
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                               f"dims:0")
        return roll(flatten(input), shifts, 0).view(input.shape)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    total = {}
    for s, d in zip(shifts, dims):
        d = _dim(d, input.ndim)
        n = input.shape[d] if input.ndim else 1
        total[d] = (total.get(d, 0) + s) % n if n else 0
    kept = sorted(d for d, s in total.items() if s)
    return Roll.apply(input, tuple(total[d] for d in kept), tuple(kept))


def _triangular(name, op, input, diagonal):
    if input.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    return op.apply(input, int(diagonal))


def tril(input, diagonal=0):
    """``input`` with the elements above the ``diagonal`` of its last two axes zeroed."""
    return _triangular("tril", Tril, input, diagonal)


def triu(input, diagonal=0):
    """``input`` with the elements below the ``diagonal`` of its last two axes zeroed."""
    return _triangular("triu", Triu, input, diagonal)


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids of the 1-D (or 0-d) ``tensors``: with "ij" the ``k``-th grid varies
    along dimension ``k``; with "xy" the first two dimensions are swapped (Cartesian)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    if not tensors:
        raise RuntimeError("torch.meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got: {t}")
        if t.dtype != tensors[0].dtype:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to "
                               "have the same dtype")
    flat = [t.reshape(-1) for t in tensors]
    shape = tuple(t.shape[0] for t in flat)
    grids = [expand(t.reshape([-1 if d == k else 1 for d in range(len(flat))]), shape)
             for k, t in enumerate(flat)]
    if indexing == "xy" and len(grids) >= 2:
        grids = [transpose(g, 0, 1) for g in grids]
    return tuple(grids)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim`` (``prepend``/``append`` joined to
    ``input`` first), as differences of two ``narrow`` views."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if not isinstance(n, int) or n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _dim(dim, input.ndim)
    parts = [t for t in (prepend, input, append) if t is not None]
    for t in parts:
        if t.ndim != input.ndim:
            raise RuntimeError("diff expects prepend or append to be the same dimension as "
                               "input")
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        length = x.shape[d] - 1
        if length <= 0:
            return narrow(x, d, 0, 0)
        x = narrow(x, d, 1, length) - narrow(x, d, 0, length) if x.dtype != "bool" else \
            narrow(x, d, 1, length) != narrow(x, d, 0, length)
    return x


def rot90(input, k=1, dims=(0, 1)):
    """``input`` rotated by 90 degrees ``k`` times in the plane of ``dims`` (from the first
    towards the second)."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = _dim(dims[0], input.ndim), _dim(dims[1], input.ndim)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} "
                           f"and dim1 = {dims[1]}")
    k = int(k) % 4
    if k == 1:
        return flip(input, d1).transpose(d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return flip(input, d0).transpose(d0, d1)
    return _clone(input)


def _clone(input):
    """A copy of ``input`` (``nn.clone``; imported late, as elementwise builds on shape)."""
    from .elementwise import clone
    return clone(input)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Tensors whose ``offset`` diagonals (of dims ``dim1, dim2``) hold the last dimension of
    ``input``; zeros elsewhere."""
    ndim = input.ndim + 1
    d1, d2 = _dim(dim1, ndim), _dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1] + abs(int(offset))
    rest = iter(input.shape[:-1])
    shape = tuple(n if d in (d1, d2) else next(rest) for d in range(ndim))
    # the last dimension moved to where the diagonal's axis lands (after the kept dims)
    return DiagonalBackward.apply(input, shape, int(offset), d1, d2)


def diag(input, diagonal=0):
    """The ``diagonal``-th diagonal of a matrix, or the square matrix with vector ``input``
    on that diagonal."""
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.ndim == 2:
        return _diagonal_of(input, diagonal)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


def _diagonal_of(input, offset):
    """``diagonal`` (the name ``diag``'s argument hides)."""
    return diagonal(input, offset, 0, 1)


def block_diag(*tensors):
    """The block-diagonal matrix of ``tensors`` (0-d and 1-d ones as 1-row matrices)."""
    for k, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {k} has {t.ndim} dimensions")
    if not tensors:
        return Tensor(np.empty((1, 0), "float32"))
    blocks, dtype = _tensors(tensors, "block_diag")
    blocks = [b.reshape(1, -1) if b.ndim < 2 else b for b in blocks]
    width = builtins.sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        right = width - left - b.shape[1]
        parts = [_zeros_as(b, (b.shape[0], left), dtype), b.to(dtype),
                 _zeros_as(b, (b.shape[0], right), dtype)]
        rows.append(cat(parts, 1))
        left += b.shape[1]
    return cat(rows, 0)


def _zeros_as(t, shape, dtype):
    from ..tensor import zeros
    return zeros(*shape, dtype=dtype, device=t.device)


def _vector_input(t):
    if t.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")


def cartesian_prod(*tensors):
    """The Cartesian product of 1-D ``tensors``: one row per combination (a 1-D tensor for a
    single input)."""
    for t in tensors:
        _vector_input(t)
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of the elements of 1-D ``input`` (rows, in
    lexicographic order of positions), as Python's ``itertools.combinations``."""
    import itertools
    _vector_input(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return Tensor(np.empty((0,), input._data.dtype))
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = np.array(list(pick(range(input.shape[0]), r)), "int64").reshape(-1, r)
    if rows.shape[0] == 0:
        return Tensor(np.empty((0, r), input._data.dtype))
    from .index import index_select
    from .base import to_device
    out = index_select(input, 0, to_device(Tensor(np.ascontiguousarray(rows.reshape(-1))),
                                           input.device))
    return out.reshape(rows.shape)
