"""Collectives on nn tensors over MPI, with ``torch.distributed``'s names and semantics.

Each collective works in place on the tensors it is given (``all_reduce``, ``broadcast``) or
writes into the output tensors it is given (``all_gather``, ``reduce_scatter``...). A CPU tensor
in C order is handed to MPI as it is (no copy); another one (a strided view, a GPU tensor)
goes through a contiguous host buffer whose values are written back when the operation
completes (GPU tensors always do: CUDA-aware MPI is not used, even where it is present).
``async_op=True`` starts MPI's nonblocking operation (``Iallreduce``...) and returns a
``Work`` whose ``wait()`` completes it; the result is not in the tensor before then.
``src``/``dst`` are world ranks, as in PyTorch. Object collectives pickle through mpi4py.
"""
from __future__ import annotations

import enum

import numpy as np

from ..device import host, write
from ..tensor import Tensor
from .process_group import mpi, resolve

__all__ = ["ReduceOp", "Work", "all_reduce", "broadcast", "reduce", "all_gather",
           "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "gather",
           "scatter", "all_to_all_single", "all_gather_object", "broadcast_object_list",
           "gather_object", "scatter_object_list"]


class ReduceOp(enum.Enum):
    """How ``all_reduce``, ``reduce`` and ``reduce_scatter`` combine the ranks' values."""
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


_MPI_OPS = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD",
            ReduceOp.MIN: "MIN", ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND",
            ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}
# bool tensors: PyTorch reduces them as logical or (sum, max) and logical and (product, min)
_BOOL_OPS = {ReduceOp.SUM: "LOR", ReduceOp.MAX: "LOR", ReduceOp.BOR: "LOR",
             ReduceOp.PRODUCT: "LAND", ReduceOp.MIN: "LAND", ReduceOp.BAND: "LAND",
             ReduceOp.BXOR: "LXOR"}


_RESOLVED = {}                  # (op, dtype kind) -> the MPI operation


def _mpi_op(op, dtype, what):
    """The MPI operation for ``op`` on ``dtype``; a TypeError for a bad pair."""
    found = _RESOLVED.get((op, dtype.kind))
    if found is None:
        found = _RESOLVED[(op, dtype.kind)] = _check_op(op, dtype, what)
    return found


def _check_op(op, dtype, what):
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{what}: op must be a nn.distributed.ReduceOp (SUM, AVG, PRODUCT, "
                        f"MIN, MAX, BAND, BOR, BXOR), got {op!r}")
    if op is ReduceOp.AVG and dtype.kind not in "fc":
        raise TypeError(f"{what}: ReduceOp.AVG needs a floating-point tensor, got {dtype.name} "
                        "(use SUM and divide)")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dtype.kind not in "iub":
        raise TypeError(f"{what}: {op.name} needs an integer or bool tensor, got {dtype.name}")
    if op in (ReduceOp.MIN, ReduceOp.MAX) and dtype.kind == "c":
        raise TypeError(f"{what}: {op.name} is not defined for complex tensors")
    name = _BOOL_OPS[op] if dtype.kind == "b" else _MPI_OPS[op]
    return getattr(mpi(), name)


class Work:
    """A started collective: ``wait()`` completes it (then the results are in the tensors),
    ``is_completed()`` asks without blocking."""

    def __init__(self, request, finish=None, result=None):
        self._request = request
        self._finish = finish
        self._result = result
        self._done = False

    def _complete(self):
        self._done = True
        if self._finish is not None:
            self._finish()
            self._finish = None

    def wait(self, timeout=None):
        if not self._done:
            self._request.Wait()
            self._complete()
        return True

    def is_completed(self) -> bool:
        if not self._done and self._request.Test():
            self._complete()
        return self._done

    def is_success(self) -> bool:
        return self.is_completed()

    def result(self):
        """The output tensors, once completed."""
        self.wait()
        return self._result


def _check_tensor(t, what, name="tensor"):
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}: {name} must be a nn.Tensor, got {type(t).__name__}")
    return t


def _buffer(t, what, name="tensor"):
    """(a C-order host array MPI can use for ``t``, a function that writes it back into
    ``t`` after MPI wrote into it)."""
    _check_tensor(t, what, name)
    data = t._data
    if isinstance(data, np.ndarray) and data.flags.c_contiguous:
        return data, t._bump_version
    array = np.ascontiguousarray(host(data))

    def write_back():
        write(data, array.reshape(data.shape))
        t._bump_version()
    return array, write_back


def _readonly(t, what, name="tensor"):
    """A C-order host array of ``t``'s values (for tensors only read)."""
    _check_tensor(t, what, name)
    return np.ascontiguousarray(host(t._data))


def _run(blocking, start, async_op, finish=None, result=None):
    """Run the collective blocking or start its nonblocking form."""
    if async_op:
        return Work(start(), finish, result)
    blocking()
    if finish is not None:
        finish()
    return None


def _chain(*fns):
    def run():
        for fn in fns:
            if fn is not None:
                fn()
    return run


def _avg(array, size, op):
    if op is not ReduceOp.AVG:
        return None

    def divide():
        np.divide(array, size, out=array, casting="unsafe")
    return divide


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Combine ``tensor`` over the ranks of ``group`` with ``op``; every rank gets the result."""
    g = resolve(group, "all_reduce")
    array, back = _buffer(tensor, "all_reduce")
    mop = _mpi_op(op, array.dtype, "all_reduce")
    finish = back if op is not ReduceOp.AVG else _chain(_avg(array, g.size(), op), back)
    if async_op:
        return Work(g.comm.Iallreduce(mpi().IN_PLACE, array, op=mop), finish, [tensor])
    g.comm.Allreduce(mpi().IN_PLACE, array, op=mop)     # the hot path: no closures
    finish()
    return None


def broadcast(tensor, src=0, group=None, async_op=False):
    """Copy ``tensor`` of world rank ``src`` into ``tensor`` of every rank of ``group``."""
    g = resolve(group, "broadcast")
    root = g.group_rank(src, "src")
    array, back = _buffer(tensor, "broadcast")
    return _run(lambda: g.comm.Bcast(array, root=root),
                lambda: g.comm.Ibcast(array, root=root), async_op, back, [tensor])


def reduce(tensor, dst=0, op=ReduceOp.SUM, group=None, async_op=False):
    """Combine ``tensor`` over the ranks with ``op`` into ``tensor`` of world rank ``dst``
    (the others' tensors are left as they were)."""
    g = resolve(group, "reduce")
    root = g.group_rank(dst, "dst")
    array, back = _buffer(tensor, "reduce")
    mop = _mpi_op(op, array.dtype, "reduce")
    MPI = mpi()
    if g.rank() == root:
        args = (MPI.IN_PLACE, array)
        finish = _chain(_avg(array, g.size(), op), back)
    else:
        args = (array, None)
        finish = None
    return _run(lambda: g.comm.Reduce(*args, op=mop, root=root),
                lambda: g.comm.Ireduce(*args, op=mop, root=root), async_op, finish, [tensor])


def _same(tensors, ref, what, name):
    for k, t in enumerate(tensors):
        _check_tensor(t, what, f"{name}[{k}]")
        if t.shape != ref.shape or t.dtype != ref.dtype:
            raise ValueError(f"{what}: {name}[{k}] has shape {list(t.shape)} and dtype "
                             f"{t.dtype}; expected {list(ref.shape)} and {ref.dtype} like "
                             "the input tensor")


def _scatter_into(tensors, flat):
    """A function writing the rows of ``flat`` into ``tensors``."""
    def fill():
        for t, row in zip(tensors, flat):
            write(t._data, row.reshape(t.shape))
            t._bump_version()
    return fill


def _list_of(tensors, size, what, name):
    if not isinstance(tensors, (list, tuple)) or len(tensors) != size:
        raise ValueError(f"{what}: {name} must be a list of {size} tensors (one per rank of "
                         f"the group), got {tensors!r}"[:300])
    return list(tensors)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """``tensor_list[r]`` = ``tensor`` of group rank ``r``, on every rank."""
    g = resolve(group, "all_gather")
    tensor_list = _list_of(tensor_list, g.size(), "all_gather", "tensor_list")
    _same(tensor_list, _check_tensor(tensor, "all_gather"), "all_gather", "tensor_list")
    send = _readonly(tensor, "all_gather")
    recv = np.empty((g.size(),) + send.shape, send.dtype)
    return _run(lambda: g.comm.Allgather(send, recv), lambda: g.comm.Iallgather(send, recv),
                async_op, _scatter_into(tensor_list, recv), tensor_list)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """``output_tensor`` (world_size * n elements) = the ranks' ``input_tensor``s, in order."""
    g = resolve(group, "all_gather_into_tensor")
    send = _readonly(input_tensor, "all_gather_into_tensor", "input_tensor")
    out, back = _buffer(output_tensor, "all_gather_into_tensor", "output_tensor")
    if out.size != send.size * g.size() or out.dtype != send.dtype:
        raise ValueError(f"all_gather_into_tensor: output_tensor must have {g.size()} x "
                         f"{send.size} elements of {send.dtype}, got {list(output_tensor.shape)}"
                         f" of {out.dtype}")
    return _run(lambda: g.comm.Allgather(send, out), lambda: g.comm.Iallgather(send, out),
                async_op, back, [output_tensor])


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """``output`` on group rank ``r`` = ``input_list[r]`` combined over the ranks with ``op``."""
    g = resolve(group, "reduce_scatter")
    input_list = _list_of(input_list, g.size(), "reduce_scatter", "input_list")
    _same(input_list, _check_tensor(output, "reduce_scatter", "output"), "reduce_scatter",
          "input_list")
    send = np.stack([_readonly(t, "reduce_scatter") for t in input_list])
    recv, back = _buffer(output, "reduce_scatter", "output")
    mop = _mpi_op(op, send.dtype, "reduce_scatter")
    return _run(lambda: g.comm.Reduce_scatter_block(send, recv, op=mop),
                lambda: g.comm.Ireduce_scatter_block(send, recv, op=mop), async_op,
                _chain(_avg(recv, g.size(), op), back), [output])


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """``reduce_scatter`` with the inputs concatenated in one tensor of world_size * n."""
    g = resolve(group, "reduce_scatter_tensor")
    send = _readonly(input, "reduce_scatter_tensor", "input")
    recv, back = _buffer(output, "reduce_scatter_tensor", "output")
    if send.size != recv.size * g.size() or send.dtype != recv.dtype:
        raise ValueError(f"reduce_scatter_tensor: input must have {g.size()} x {recv.size} "
                         f"elements of {recv.dtype}, got {list(input.shape)} of {send.dtype}")
    mop = _mpi_op(op, send.dtype, "reduce_scatter_tensor")
    return _run(lambda: g.comm.Reduce_scatter_block(send, recv, op=mop),
                lambda: g.comm.Ireduce_scatter_block(send, recv, op=mop), async_op,
                _chain(_avg(recv, g.size(), op), back), [output])


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """``gather_list[r]`` on world rank ``dst`` = ``tensor`` of group rank ``r``."""
    g = resolve(group, "gather")
    root = g.group_rank(dst, "dst")
    send = _readonly(tensor, "gather")
    if g.rank() == root:
        gather_list = _list_of(gather_list, g.size(), "gather", "gather_list")
        _same(gather_list, tensor, "gather", "gather_list")
        recv = np.empty((g.size(),) + send.shape, send.dtype)
        finish = _scatter_into(gather_list, recv)
    else:
        if gather_list:
            raise ValueError(f"gather: gather_list is only given on the destination rank {dst}")
        recv, finish = None, None
    return _run(lambda: g.comm.Gather(send, recv, root=root),
                lambda: g.comm.Igather(send, recv, root=root), async_op, finish,
                gather_list)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """``tensor`` on group rank ``r`` = ``scatter_list[r]`` of world rank ``src``."""
    g = resolve(group, "scatter")
    root = g.group_rank(src, "src")
    recv, back = _buffer(tensor, "scatter")
    if g.rank() == root:
        scatter_list = _list_of(scatter_list, g.size(), "scatter", "scatter_list")
        _same(scatter_list, tensor, "scatter", "scatter_list")
        send = np.stack([_readonly(t, "scatter") for t in scatter_list])
    else:
        if scatter_list:
            raise ValueError(f"scatter: scatter_list is only given on the source rank {src}")
        send = None
    return _run(lambda: g.comm.Scatter(send, recv, root=root),
                lambda: g.comm.Iscatter(send, recv, root=root), async_op, back, [tensor])


def all_to_all_single(output, input, group=None, async_op=False):
    """Block ``r`` of ``input`` (split evenly along dim 0) goes to group rank ``r``, which
    puts it at block ``rank`` of its ``output``."""
    g = resolve(group, "all_to_all_single")
    send = _readonly(input, "all_to_all_single", "input")
    recv, back = _buffer(output, "all_to_all_single", "output")
    if send.size % g.size() or send.size != recv.size:
        raise ValueError(f"all_to_all_single: input and output must have the same number of "
                         f"elements, divisible by the group size {g.size()}")
    return _run(lambda: g.comm.Alltoall(send, recv), lambda: g.comm.Ialltoall(send, recv),
                async_op, back, [output])


# ----------------------------------------------------------------------------- objects

def all_gather_object(object_list, obj, group=None):
    """``object_list[r]`` = the picklable ``obj`` of group rank ``r``, on every rank."""
    g = resolve(group, "all_gather_object")
    if not isinstance(object_list, list) or len(object_list) != g.size():
        raise ValueError(f"all_gather_object: object_list must be a list of {g.size()} "
                         "elements (one per rank), to be filled in")
    object_list[:] = g.comm.allgather(obj)


def broadcast_object_list(object_list, src=0, group=None, device=None):
    """Replace the elements of ``object_list`` with those of world rank ``src``."""
    g = resolve(group, "broadcast_object_list")
    root = g.group_rank(src, "src")
    object_list[:] = g.comm.bcast(list(object_list) if g.rank() == root else None, root=root)


def gather_object(obj, object_gather_list=None, dst=0, group=None):
    """``object_gather_list[r]`` on world rank ``dst`` = ``obj`` of group rank ``r``."""
    g = resolve(group, "gather_object")
    root = g.group_rank(dst, "dst")
    if g.rank() == root and (not isinstance(object_gather_list, list)
                             or len(object_gather_list) != g.size()):
        raise ValueError(f"gather_object: object_gather_list must be a list of {g.size()} "
                         "elements on the destination rank")
    found = g.comm.gather(obj, root=root)
    if g.rank() == root:
        object_gather_list[:] = found


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=0,
                        group=None):
    """``scatter_object_output_list[0]`` on group rank ``r`` = element ``r`` of the input
    list of world rank ``src``."""
    g = resolve(group, "scatter_object_list")
    root = g.group_rank(src, "src")
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError("scatter_object_list: scatter_object_output_list must be a non-empty "
                         "list (its first element receives the object)")
    items = list(scatter_object_input_list) if g.rank() == root else None
    if items is not None and len(items) != g.size():
        raise ValueError(f"scatter_object_list: the input list must have {g.size()} elements")
    scatter_object_output_list[0] = g.comm.scatter(items, root=root)
