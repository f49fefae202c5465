"""Multi-tensor updates: one compiled kernel updates every parameter of a group (PyTorch's
``foreach=True``), instead of one kernel call per parameter.

``multi_update`` declares, for K parameters, the K single-tensor updates of
``nn/ops/optim.py`` side by side (each one compute with its outputs), read from one list of
placeholders ``p_1..p_K, g_1..g_K, state_1..state_K, ..., h``; ``schedule_multi`` gives each
its vectorized, parallel loop. The module is compiled once per set of parameter sizes, so a
step costs one kernel call (and its argument checks) however many parameters there are.
"""
from __future__ import annotations

import functools

import numpy as np

import te
from nn.ops import cpu
from nn.ops.cpu_util import num_elements, schedule_rows
from te import dtypes

from ..functions.base import kernel_calls
from ..tensor import Tensor

__all__ = ["multi_update", "schedule_multi", "multi_tensor_update"]


def multi_update(*arrays, update, count, n_state, **flags):
    """The outputs of ``update`` (an update of nn/ops/optim.py) for ``count`` parameters:
    ``arrays`` is p_1..p_K, g_1..g_K, then each state buffer for all K, then ``h``."""
    h = arrays[-1]
    outs = []
    for k in range(count):
        operands = [arrays[j * count + k] for j in range(2 + n_state)]
        outs += list(update(*operands, h, **flags))
    return outs


def schedule_multi(outs):
    """One vectorized loop per parameter's compute, parallel when large, streaming stores for
    outputs much larger than the caches (as ``nn.ops.optim.schedule_update``)."""
    ops = []
    for o in outs:
        if o.op not in ops:
            ops.append(o.op)
    s = te.create_schedule(ops)
    for op in ops:
        t = op.output(0)
        outer, _ = schedule_rows(s, t, list(s[t].op.axis))
        total = num_elements(t.shape)
        if outer is not None and total * dtypes.bits(t.dtype) // 8 >= cpu.STREAM_BYTES:
            s[t].pragma(outer, "nontemporal")
    return s


@functools.lru_cache(maxsize=64)
def _build(declare, sizes, dtype, n_state, n_hyper, flags):
    count = len(sizes)
    shapes = [(n,) for n in sizes] * (2 + n_state) + [(n_hyper,)]
    return cpu.build(multi_update, shapes, dtype, schedule=schedule_multi, update=declare,
                     count=count, n_state=n_state, **dict(flags))


def _flat(array):
    return np.ascontiguousarray(array).reshape(-1)


def multi_tensor_update(declare, params, states, names, hyper, spares, **flags):
    """Update host parameters ``params`` (their ``.grad`` the gradients; ``states[k]`` the
    state dict of ``params[k]``) with ``declare`` in one kernel call. As ``fused_update``:
    the new parameters are copied into the parameters' storage (versions bumped), the new
    states become the state tensors' storage (the old storage the next step's spares;
    ``spares[k]`` is the spare dict of ``params[k]``)."""
    dtype = params[0]._data.dtype
    sizes = tuple(p.numel() for p in params)
    h = np.asarray(hyper, dtype=dtype)
    arrays = [_flat(p._data) for p in params] + [_flat(p.grad._data) for p in params]
    for name in names:
        arrays += [_flat(st[name]._data) for st in states]
    f = _build(declare, sizes, params[0].dtype, len(names), len(hyper),
               tuple(sorted(flags.items())))
    kernel_calls[declare.__name__] += 1
    new_p = [_spare(sp, "_new_param", n, dtype) for sp, n in zip(spares, sizes)]
    new_states = [[_spare(sp, name, n, dtype) for sp, n in zip(spares, sizes)]
                  for name in names]
    outs = []
    for k in range(len(params)):
        outs.append(new_p[k])
        outs += [new_states[j][k] for j in range(len(names))]
    f(*arrays, h, out=outs)
    count = len(params)
    for k, p in enumerate(params):
        np.copyto(p._data, new_p[k].reshape(p.shape))
        p._bump_version()
        for j, name in enumerate(names):
            old = arrays[(2 + j) * count + k]
            spares[k][name] = old
            states[k][name]._data = new_states[j][k].reshape(p.shape)


def _spare(buffers, key, n, dtype):
    from te.nd import aligned_empty
    buf = buffers.get(key)
    if buf is None or buf.shape != (n,) or buf.dtype != dtype:
        buf = buffers[key] = aligned_empty((n,), dtype)
    return buf


def eligible(params) -> bool:
    """Whether ``params`` (with gradients) can share one multi-tensor kernel: two or more,
    all on the host, one floating dtype, dense gradients of their own shape and dtype,
    contiguous storage (the copy back writes the parameters in place)."""
    if len(params) < 2:
        return False
    dtype = params[0].dtype
    for p in params:
        g = p.grad
        if p.is_cuda or p.dtype != dtype or not p.is_floating_point() or p.numel() == 0:
            return False
        if not isinstance(g, Tensor) or g.is_cuda or g.shape != p.shape or g.dtype != dtype:
            return False
        if getattr(g, "is_sparse", False):
            return False
    return True
