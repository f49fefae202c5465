"""Fused scaled-dot-product attention on NVIDIA GPUs: the declarations of
nn/ops/attention.py (same arguments, layouts and outputs) with loop nests for the GPU.

One thread per query row (blocks of ``THREADS`` rows): the thread walks the keys once with
the online softmax (running maximum ``m``, sum ``l``, accumulator ``acc`` of Ev values in its
local memory), so the L x S scores are never stored. The backward is two kernels that
recompute the scores row by row: one thread per query row computes ``delta = rowsum(do *
out)`` and then dq over all keys; then one thread per key row computes dk and dv over all
queries.
"""
from __future__ import annotations

import functools

import te
from te.expr import const, floordiv, floormod, select

from .attention import _Layout, _pointers, _store

THREADS = 64
NEG_INF = float("-inf")
F32 = "float32"


def _bind(ib, n_rows, lay):
    """(bh, row) of this thread: blocks of THREADS rows of each of the BH blocks."""
    nb = -(-n_rows // THREADS)
    bx, tx = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")
    ib.scope_attr(bx, "thread_extent", lay.BH * nb)
    ib.scope_attr(tx, "thread_extent", THREADS)
    return floordiv(bx.var, nb), floormod(bx.var, nb) * THREADS + tx.var


def _score(ib, lay, Q, K, M, bh, i, j, sc):
    """sc[0] = scale * q_i . k_j + mask (-inf where causal hides the key)."""
    sc[0] = const(0.0, F32)
    with ib.for_range(0, lay.E, name="d") as d:
        sc[0] = sc[0] + lay.at(Q, bh, i, d, lay.E) * lay.at(K, bh, j, d, lay.E)
    val = sc[0] * const(lay.scale, F32)
    if M is not None:
        val = val + lay.mask_at(M, bh, j, i)
    if lay.causal:
        val = select(j <= i, val, const(NEG_INF, F32))
    sc[0] = val


def _forward_ir(lay, ins, outs):
    ib = te.tir.ir_builder.create()
    Q, K, V, M, _ = _pointers(ib, lay, ins)
    O, LSE = ib.buffer_ptr(outs[0]), ib.buffer_ptr(outs[1])
    bh, i = _bind(ib, lay.L, lay)
    with ib.if_scope(i < lay.L):
        acc = ib.allocate(F32, (lay.Ev,), name="acc", scope="local")
        st = ib.allocate(F32, (4,), name="st", scope="local")    # m, l, score, ref
        st[0] = const(NEG_INF, F32)
        st[1] = const(0.0, F32)
        with ib.for_range(0, lay.Ev, name="e") as e:
            acc[e] = const(0.0, F32)
        sc = ib.allocate(F32, (1,), name="sc", scope="local")
        with ib.for_range(0, lay.S, name="j") as j:
            _score(ib, lay, Q, K, M, bh, i, j, sc)
            new = te.max(st[0], sc[0])
            st[3] = select(new == const(NEG_INF, F32), const(0.0, F32), new)
            alpha = te.exp(st[0] - st[3])
            p = te.exp(sc[0] - st[3])
            st[1] = st[1] * alpha + p
            with ib.for_range(0, lay.Ev, name="e") as e:
                acc[e] = acc[e] * alpha + p * lay.at(V, bh, j, e, lay.Ev)
            st[0] = new
        inv = select(st[1] == const(0.0, F32), const(0.0, F32), const(1.0, F32) / st[1])
        with ib.for_range(0, lay.Ev, name="e") as e:
            _store(O, lay, bh, i, e, lay.Ev, acc[e] * inv)
        LSE[bh, i] = select(st[1] == const(0.0, F32), const(float("inf"), F32),
                            st[0] + te.log(st[1]))
    return ib.get()


def flash_attention(q, k, v, maskT=None, heads=1, causal=False, scale=1.0, layout="bhle"):
    """``nn.ops.attention.flash_attention`` for the GPU."""
    lay = _Layout(q, k, v, maskT, heads, causal, scale, layout)
    ins = [q, k, v] + ([maskT] if maskT is not None else [])
    out_shape = (int(q.shape[0]), lay.L, int(v.shape[2]))
    return te.extern([out_shape, (lay.BH, lay.L)], ins, lambda i, o: _forward_ir(lay, i, o),
                     name="flash_attention_gpu", dtype=[F32, F32], tag="flash_attention")


def _dq_ir(lay, ins, outs):
    ib = te.tir.ir_builder.create()
    Q, K, V, M, (DO, O, LSE) = _pointers(ib, lay, ins)
    DQ, DELTA = ib.buffer_ptr(outs[0]), ib.buffer_ptr(outs[1])
    E, Ev = lay.E, lay.Ev
    bh, i = _bind(ib, lay.L, lay)
    with ib.if_scope(i < lay.L):
        acc = ib.allocate(F32, (E,), name="acc", scope="local")
        st = ib.allocate(F32, (2,), name="st", scope="local")      # delta, dp
        sc = ib.allocate(F32, (1,), name="sc", scope="local")
        st[0] = const(0.0, F32)
        with ib.for_range(0, Ev, name="e") as e:
            st[0] = st[0] + lay.at(DO, bh, i, e, Ev) * lay.at(O, bh, i, e, Ev)
        DELTA[bh, i] = st[0]
        with ib.for_range(0, E, name="d") as d:
            acc[d] = const(0.0, F32)
        with ib.for_range(0, lay.S, name="j") as j:
            _score(ib, lay, Q, K, M, bh, i, j, sc)
            st[1] = const(0.0, F32)
            with ib.for_range(0, Ev, name="e") as e:
                st[1] = st[1] + lay.at(DO, bh, i, e, Ev) * lay.at(V, bh, j, e, Ev)
            ds = te.exp(sc[0] - LSE[bh, i]) * (st[1] - st[0])
            with ib.for_range(0, E, name="d") as d:
                acc[d] = acc[d] + ds * lay.at(K, bh, j, d, E)
        with ib.for_range(0, E, name="d") as d:
            _store(DQ, lay, bh, i, d, E, acc[d] * const(lay.scale, F32))
    return ib.get()


def _dkv_ir(lay, ins, outs):
    ib = te.tir.ir_builder.create()
    Q, K, V, M, (DO, LSE, DELTA) = _pointers(ib, lay, ins)
    DK, DV = ib.buffer_ptr(outs[0]), ib.buffer_ptr(outs[1])
    E, Ev = lay.E, lay.Ev
    bh, j = _bind(ib, lay.S, lay)
    with ib.if_scope(j < lay.S):
        dk = ib.allocate(F32, (E,), name="dk", scope="local")
        dv = ib.allocate(F32, (Ev,), name="dv", scope="local")
        st = ib.allocate(F32, (2,), name="st", scope="local")      # p, dp
        sc = ib.allocate(F32, (1,), name="sc", scope="local")
        with ib.for_range(0, E, name="d") as d:
            dk[d] = const(0.0, F32)
        with ib.for_range(0, Ev, name="e") as e:
            dv[e] = const(0.0, F32)
        with ib.for_range(0, lay.L, name="i") as i:
            _score(ib, lay, Q, K, M, bh, i, j, sc)
            st[0] = te.exp(sc[0] - LSE[bh, i])
            st[1] = const(0.0, F32)
            with ib.for_range(0, Ev, name="e") as e:
                dv[e] = dv[e] + st[0] * lay.at(DO, bh, i, e, Ev)
                st[1] = st[1] + lay.at(DO, bh, i, e, Ev) * lay.at(V, bh, j, e, Ev)
            ds = st[0] * (st[1] - DELTA[bh, i])
            with ib.for_range(0, E, name="d") as d:
                dk[d] = dk[d] + ds * lay.at(Q, bh, i, d, E)
        with ib.for_range(0, E, name="d") as d:
            _store(DK, lay, bh, j, d, E, dk[d] * const(lay.scale, F32))
        with ib.for_range(0, Ev, name="e") as e:
            _store(DV, lay, bh, j, e, Ev, dv[e])
    return ib.get()


def flash_attention_backward(q, k, v, *rest, heads=1, causal=False, scale=1.0,
                             masked=False, layout="bhle"):
    """``nn.ops.attention.flash_attention_backward`` for the GPU: (dq, dk, dv, delta)."""
    maskT = rest[0] if masked else None
    lay = _Layout(q, k, v, maskT, heads, causal, scale, layout)
    do, out, lse = rest[-3:]
    mask = [maskT] if masked else []
    dq, delta = te.extern([tuple(q.shape), (lay.BH, lay.L)], [q, k, v] + mask + [do, out, lse],
                          lambda i, o: _dq_ir(lay, i, o), name="flash_attention_dq_gpu",
                          dtype=[F32, F32], tag="flash_attention_backward")
    dk, dv = te.extern([tuple(k.shape), tuple(v.shape)], [q, k, v] + mask + [do, lse, delta],
                       lambda i, o: _dkv_ir(lay, i, o), name="flash_attention_dkv_gpu",
                       dtype=[F32, F32], tag="flash_attention_backward")
    return dq, dk, dv, delta


@functools.lru_cache(maxsize=128)
def _build(declare, shapes, params):
    inputs = [te.placeholder(s, F32, name=f"x{k}") for k, s in enumerate(shapes)]
    outs = list(declare(*inputs, **dict(params)))
    s = te.create_schedule([o.op for o in outs])
    module = te.build(s, inputs + outs, target="cuda", name=declare.__name__)
    out_shapes = [tuple(int(d) for d in o.shape) for o in outs]

    def run(*arrays):
        from numba import cuda
        results = [cuda.device_array(sh, F32) for sh in out_shapes]
        module(*arrays, *results)
        return results
    run.module = module
    return run


def build(declare, shapes, **params):
    """The compiled GPU ``declare`` (one of this module's) for float32 device arrays of
    ``shapes`` (cached): a function of device arrays that returns the list of outputs."""
    shapes = tuple(tuple(int(d) for d in s) for s in shapes)
    return _build(declare, shapes, tuple(sorted(params.items())))


# the GPU twin of each CPU declaration, for nn's dispatch
TWINS = {}


def _register():
    from . import attention as cpu
    TWINS[cpu.flash_attention] = flash_attention
    TWINS[cpu.flash_attention_backward] = flash_attention_backward


_register()
