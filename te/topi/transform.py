"""Layout operators (TVM's ``topi.transform``): ``reshape``, ``transpose``, ``concatenate``,
``split``, ``take``, ``expand_dims``, ``squeeze``, ``broadcast_to``, ``flatten``. Each output
element reads one input element; the outputs are tagged ``"injective"``. ``concat_tree`` is the
element rule ``concatenate`` shares with ``nn.ops``.
"""
from __future__ import annotations

from .. import expr as _expr
from .. import intrin as _intrin
from .. import dtypes
from ..tensor import Tensor, TEError, compute
from . import tag as _tag
from .broadcast import broadcast_shape
from .utils import const_size

__all__ = ["reshape", "transpose", "concatenate", "concat_tree", "split", "take",
           "expand_dims", "squeeze", "broadcast_to", "flatten"]


def _check(opname, arg, value):
    if not isinstance(value, Tensor):
        raise TEError(f"topi.{opname}: {arg} must be a te tensor, got {type(value).__name__} "
                      f"{value!r}")


def _axis(opname, axis, ndim, arg="axis"):
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise ValueError(f"topi.{opname}: {arg} must be an int, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"topi.{opname}: {arg}={axis} is out of range for a tensor of "
                         f"{ndim} dimensions (use -{ndim} .. {ndim - 1})")
    return axis % ndim


def _product(dims):
    total = _expr.const(1)
    for d in dims:
        total = total * d
    return total


def _const_product(dims):
    total = 1
    for d in dims:
        size = const_size(d)
        if not isinstance(size, int):
            return None
        total *= size
    return total


def reshape(a, newshape):
    """``a`` with its elements (in row-major order) laid out in ``newshape`` (one entry may
    be -1: the size that keeps the element count)."""
    _check("reshape", "a", a)
    newshape = list(newshape) if isinstance(newshape, (list, tuple)) else [newshape]
    count = _const_product(a.shape)
    if sum(1 for d in newshape if isinstance(d, int) and d == -1) > 1:
        raise ValueError(f"topi.reshape: newshape {tuple(newshape)} has more than one -1")
    if -1 in [d for d in newshape if isinstance(d, int)]:
        rest = _const_product([d for d in newshape if not (isinstance(d, int) and d == -1)])
        if count is None or rest is None or rest == 0 or count % rest:
            raise ValueError(f"topi.reshape: cannot infer the -1 of newshape "
                             f"{tuple(newshape)} for a of shape {tuple(a.shape)}")
        newshape = [count // rest if isinstance(d, int) and d == -1 else d for d in newshape]
    wanted = _const_product(newshape)
    if count is not None and wanted is not None and count != wanted:
        raise ValueError(f"topi.reshape: newshape {tuple(newshape)} holds {wanted} elements "
                         f"but a of shape {tuple(const_size(d) for d in a.shape)} has {count}")

    def body(*idx):
        flat = _expr.const(0, "int64" if any(dtypes.element(_expr.convert(i).dtype) == "int64"
                                             for i in idx) else "int32")
        for i, d in zip(idx, newshape):
            flat = flat * d + i
        src = []
        for d in reversed(a.shape):
            src.append(_expr.floormod(flat, d) if len(src) < len(a.shape) - 1 else flat)
            flat = _expr.floordiv(flat, d)
        return a[tuple(reversed(src))]
    return compute(newshape, body, name="T_reshape", tag=_tag.INJECTIVE)


def transpose(a, axes=None):
    """``a`` with its axes permuted: output axis ``k`` is input axis ``axes[k]`` (reversed
    when ``axes`` is None)."""
    _check("transpose", "a", a)
    ndim = len(a.shape)
    if axes is None:
        axes = tuple(reversed(range(ndim)))
    axes = [_axis("transpose", x, ndim, "axes entry") for x in axes]
    if sorted(axes) != list(range(ndim)):
        raise ValueError(f"topi.transpose: axes {tuple(axes)} is not a permutation of the "
                         f"{ndim} axes of a")
    inverse = [axes.index(d) for d in range(ndim)]
    shape = [a.shape[x] for x in axes]
    return compute(shape, lambda *i: a[tuple(i[inverse[d]] for d in range(ndim))],
                   name="T_transpose", tag=_tag.INJECTIVE)


def concat_tree(xs, offsets, i, dim, dtype):
    """The element at ``i`` of the concatenation of ``xs`` (starting at ``offsets``): a
    balanced tree of ``if_then_else`` on the position along ``dim``, so that only the input
    that holds the element is read and the depth is log2(len(xs))."""
    if len(xs) == 1:
        j = list(i)
        j[dim] = i[dim] - offsets[0]
        return xs[0][tuple(j)].astype(dtype)
    mid = len(xs) // 2
    return _intrin.if_then_else(i[dim] < offsets[mid],
                                concat_tree(xs[:mid], offsets[:mid], i, dim, dtype),
                                concat_tree(xs[mid:], offsets[mid:], i, dim, dtype))


def concatenate(a_tuple, axis=0):
    """The tensors of ``a_tuple`` (one rank, equal sizes but along ``axis``) joined along
    ``axis``."""
    xs = list(a_tuple) if isinstance(a_tuple, (list, tuple)) else [a_tuple]
    if not xs:
        raise ValueError("topi.concatenate: a_tuple is empty; give at least one tensor")
    for k, x in enumerate(xs):
        _check("concatenate", f"a_tuple[{k}]", x)
    ndim = len(xs[0].shape)
    if ndim == 0:
        raise ValueError("topi.concatenate: a_tuple holds 0-d tensors; they have no axis")
    axis = _axis("concatenate", axis, ndim)
    for k, x in enumerate(xs):
        if len(x.shape) != ndim:
            raise ValueError(f"topi.concatenate: a_tuple[{k}] has {len(x.shape)} dimensions "
                             f"but a_tuple[0] has {ndim}")
        for d in range(ndim):
            if d != axis and const_size(x.shape[d]) is not const_size(xs[0].shape[d]) and \
                    const_size(x.shape[d]) != const_size(xs[0].shape[d]):
                raise ValueError(f"topi.concatenate: a_tuple[{k}] has size {x.shape[d]} in "
                                 f"dimension {d} but a_tuple[0] has {xs[0].shape[d]}; only "
                                 f"axis {axis} may differ")
    dtype = xs[0].dtype
    for x in xs[1:]:
        dtype = dtypes.promote(dtype, x.dtype)
    offsets, total = [], _expr.const(0)
    for x in xs:
        offsets.append(total)
        total = total + x.shape[axis]
    from ..arith import simplify
    offsets = [simplify(o) for o in offsets]
    shape = list(xs[0].shape)
    shape[axis] = simplify(total)
    return compute(shape, lambda *i: concat_tree(xs, offsets, i, axis, dtype),
                   name="T_concat", tag=_tag.INJECTIVE)


def split(ary, indices_or_sections, axis=0):
    """``ary`` cut along ``axis``: into ``indices_or_sections`` equal parts (an int), or at
    the given indices (a sequence); returns the list of parts."""
    _check("split", "ary", ary)
    ndim = len(ary.shape)
    axis = _axis("split", axis, ndim)
    size = const_size(ary.shape[axis])
    if not isinstance(size, int):
        raise ValueError(f"topi.split: axis {axis} of ary has the symbolic size {size}; "
                         "split needs a constant size")
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        if sections <= 0 or size % sections:
            raise ValueError(f"topi.split: indices_or_sections={sections} does not divide "
                             f"axis {axis} of size {size} into equal parts")
        step = size // sections
        bounds = [k * step for k in range(sections)] + [size]
    else:
        cuts = list(indices_or_sections)
        if any(not isinstance(c, int) for c in cuts) or cuts != sorted(cuts) or \
                any(c < 0 or c > size for c in cuts):
            raise ValueError(f"topi.split: indices_or_sections {tuple(cuts)} must be "
                             f"increasing ints in [0, {size}] (axis {axis})")
        bounds = [0] + cuts + [size]
    parts = []
    for k, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        shape = list(ary.shape)
        shape[axis] = hi - lo

        def body(*i, lo=lo):
            j = list(i)
            j[axis] = i[axis] + lo
            return ary[tuple(j)]
        parts.append(compute(shape, body, name=f"T_split{k}" if k else "T_split",
                             tag=_tag.INJECTIVE))
    return parts


def take(a, indices, axis=None, batch_dims=0, mode="clip"):
    """Elements of ``a`` at ``indices`` (a tensor of integers) along ``axis`` (of the
    flattened ``a`` when None). ``mode``: "clip" clamps the indices into range, "wrap"
    wraps them (negative ones count from the end), "fast" assumes them in range (an index
    outside is still caught by the bound checks)."""
    _check("take", "a", a)
    _check("take", "indices", indices)
    if batch_dims != 0:
        raise ValueError(f"topi.take: batch_dims={batch_dims} is not supported; use 0")
    if mode not in ("clip", "wrap", "fast"):
        raise ValueError(f"topi.take: mode must be 'clip', 'wrap' or 'fast', got {mode!r}")
    if not dtypes.is_int(indices.dtype):
        raise TEError(f"topi.take: indices has dtype {indices.dtype}; indices must be "
                      "integers")
    if axis is None:
        a = reshape(a, (_product(a.shape),)) if len(a.shape) != 1 else a
        axis = 0
    ndim = len(a.shape)
    axis = _axis("take", axis, ndim)
    n = a.shape[axis]

    def position(v):
        if mode == "clip":
            return _expr.binary(_expr.Min, _expr.binary(_expr.Max, v, 0),
                                _expr.cast(v.dtype, n) - 1)
        if mode == "wrap":
            return _expr.floormod(v, _expr.cast(v.dtype, n))
        return v
    ni = len(indices.shape)
    shape = list(a.shape[:axis]) + list(indices.shape) + list(a.shape[axis + 1:])

    def body(*i):
        where = position(indices[tuple(i[axis:axis + ni])])
        return a[tuple(i[:axis]) + (where,) + tuple(i[axis + ni:])]
    return compute(shape, body, name="T_take", tag=_tag.INJECTIVE)


def expand_dims(a, axis, num_newaxis=1):
    """``a`` with ``num_newaxis`` axes of size 1 inserted at ``axis``."""
    _check("expand_dims", "a", a)
    ndim = len(a.shape)
    if not -ndim - 1 <= axis <= ndim:
        raise ValueError(f"topi.expand_dims: axis={axis} is out of range for a tensor of "
                         f"{ndim} dimensions (use {-ndim - 1} .. {ndim})")
    axis = axis % (ndim + 1)
    shape = list(a.shape[:axis]) + [1] * num_newaxis + list(a.shape[axis:])
    return compute(shape, lambda *i: a[tuple(i[:axis]) + tuple(i[axis + num_newaxis:])],
                   name="T_expand_dims", tag=_tag.INJECTIVE)


def squeeze(a, axis=None):
    """``a`` without its axes of size 1 (only ``axis``, an int or a tuple, when given)."""
    _check("squeeze", "a", a)
    ndim = len(a.shape)
    if axis is None:
        drop = [d for d in range(ndim) if const_size(a.shape[d]) == 1]
    else:
        drop = sorted({_axis("squeeze", x, ndim) for x in
                       ((axis,) if isinstance(axis, int) else axis)})
        for d in drop:
            if const_size(a.shape[d]) != 1:
                raise ValueError(f"topi.squeeze: axis {d} of a has size {a.shape[d]}, not 1")
    keep = [d for d in range(ndim) if d not in drop]

    def body(*i):
        it = iter(i)
        return a[tuple(0 if d in drop else next(it) for d in range(ndim))]
    return compute([a.shape[d] for d in keep], body, name="T_squeeze", tag=_tag.INJECTIVE)


def broadcast_to(data, shape):
    """``data`` repeated along its size-1 (and missing leading) axes up to ``shape``."""
    _check("broadcast_to", "data", data)
    shape = list(shape)
    got = broadcast_shape([list(data.shape), shape], "topi.broadcast_to(data, shape)")
    if [const_size(d) for d in got] != [const_size(d) for d in shape]:
        raise ValueError(f"topi.broadcast_to: data of shape {tuple(data.shape)} does not "
                         f"broadcast to shape {tuple(shape)}")
    lead = len(shape) - len(data.shape)

    def body(*i):
        return data[tuple(0 if const_size(d) == 1 and const_size(shape[lead + k]) != 1
                          else i[lead + k] for k, d in enumerate(data.shape))]
    return compute(shape, body, name="T_broadcast_to", tag=_tag.BROADCAST)


def flatten(data):
    """``data`` (N, ...) as (N, product of the rest) (TVM's ``topi.nn.flatten``)."""
    _check("flatten", "data", data)
    if len(data.shape) < 1:
        raise ValueError("topi.nn.flatten: data must have at least one dimension")
    return reshape(data, (data.shape[0], _product(data.shape[1:])))
