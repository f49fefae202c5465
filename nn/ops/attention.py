"""Fused scaled-dot-product attention for the CPU: FlashAttention's recurrence as one te
kernel (a ``te.extern`` stage whose loop nest is written with ``te.tir.ir_builder``).

    flash_attention(q, k, v[, maskT]) -> (out, lse)
    flash_attention_backward(q, k, v[, maskT], do, out, lse) -> (dq, dk, dv, delta)

over a batch of ``BH = B * H`` (batch x head) blocks, in one of two layouts: "bhle", ``q``
(BH, L, E), ``k`` (BH, S, E), ``v`` and ``out`` (BH, S or L, Ev); or "blhe", the heads side
by side in the rows, ``q`` (B, L, H * E), ``k`` (B, S, H * E), ``v`` (B, S, H * Ev), as the
projections of a multi-head layer give them (no transposed copies on either side). The
optional additive mask is transposed, ``maskT`` (Bm, Hm, S, Lm), each of Bm, Hm, Lm either 1
(broadcast) or B, H, L; ``lse`` and ``delta`` are (BH, L).

The forward runs, in parallel over (block, 32 queries): for each tile of ``BC`` keys the
scores ``s = q k^T * scale + mask`` of the tile (in registers, 8 keys x 32 queries at a
time), their running maximum ``m``, ``p = exp(s - m)``, the running sum ``l`` and the
accumulator ``acc = acc * exp(m_old - m) + p v``: the L x S score matrix exists one
BC x 32 tile at a time, never in memory. ``lse = m + log(l)`` is kept for the backward,
which recomputes ``p = exp(s - lse)`` tile by tile (parallel over blocks: each block's key
tiles one after the other, its dq accumulated in place):

    dv += p^T do,  dp = do v^T,  ds = p * (dp - delta),  dq += ds k * scale,  dk += ds^T q * scale

with ``delta = rowsum(do * out)``. The queries of a tile are the vector lanes (the 32 lanes
of two AVX-512 registers), so the row maxima and sums of the online softmax are lane-wise
vector operations, and the products are register tiles: 8 keys x 32 queries for the scores
(a broadcast of k[j, d] against a row of the transposed query tile), 8 values x 32 queries
for ``acc``. Fully masked rows (every score -inf) give 0, as PyTorch's SDPA on the CPU.

Measured (benchmarks/bert.py, 2-core znver4, 2 threads, a busy machine; torch / nn):
SDPA forward 8 x 12 heads, seq 512, d 64: 1.34x torch's fused CPU kernel (forward +
backward 1.43x); 1 x 12 heads, seq 2048: 1.15x (1.62x). Its memory beyond the inputs and
outputs is O(L): the per-thread tiles (BC x 32 floats) and ``lse`` / ``delta``.
"""
from __future__ import annotations

import functools

import numpy as np

import te
from te.expr import const, floordiv, floormod, select

BR = 32         # queries per tile: the vector lanes
BC = 64         # keys per tile
KT = 8          # keys per register tile of the scores (8 x 32 lanes: 16 accumulators)
NEG_INF = float("-inf")


def _chunk(n, best=8):
    """The largest of best, 4, 2, 1 that divides ``n``."""
    for c in (best, 4, 2, 1):
        if n % c == 0:
            return c
    return 1


def _fmin(a, b):
    return te.min(a, b)


def _check(q, k, v, mask, heads, layout):
    """Shapes that the kernels index: ValueError naming the argument otherwise."""
    if layout not in ("bhle", "blhe"):
        raise ValueError(f"flash_attention: layout must be 'bhle' or 'blhe', got {layout!r}")
    shapes = {}
    for name, t, rank in (("q", q, 3), ("k", k, 3), ("v", v, 3), ("maskT", mask, 4)):
        if t is None:
            continue
        shape = tuple(int(d) for d in t.shape)
        if len(shape) != rank:
            raise ValueError(f"flash_attention: {name} must be {rank}-d, got shape {shape}")
        if t.dtype != "float32":
            raise ValueError(f"flash_attention: {name} must be float32, got {t.dtype}")
        if 0 in shape:
            raise ValueError(f"flash_attention: {name} has an empty axis, shape {shape}")
        shapes[name] = shape
    (N, L, E), (Nk, S, Ek), (Nv, Sv, Ev) = shapes["q"], shapes["k"], shapes["v"]
    if not N == Nk == Nv:
        raise ValueError(f"flash_attention: q, k and v need one batch size, got {N}, {Nk} "
                         f"and {Nv}")
    if Ek != E:
        raise ValueError(f"flash_attention: k has {Ek} features per key, q {E}")
    if Sv != S:
        raise ValueError(f"flash_attention: v has {Sv} rows, k {S}")
    div = N if layout == "bhle" else E
    if not isinstance(heads, int) or heads < 1 or div % heads or \
            (layout == "blhe" and Ev % heads):
        what = "batch" if layout == "bhle" else "features of q and v"
        raise ValueError(f"flash_attention: heads={heads!r} must be a positive divisor of the "
                         f"{what} ({div})")
    B = N // heads if layout == "bhle" else N
    if mask is not None:
        Bm, Hm, Sm, Lm = shapes["maskT"]
        if Bm not in (1, B) or Hm not in (1, heads) or Sm != S or Lm not in (1, L):
            raise ValueError(f"flash_attention: maskT has shape {shapes['maskT']}; expected "
                             f"(1 or {B}, 1 or {heads}, {S}, 1 or {L})")


class _Layout:
    """Sizes and index helpers shared by the forward and the backward."""

    def __init__(self, q, k, v, mask, heads, causal, scale, layout):
        _check(q, k, v, mask, heads, layout)
        N, self.L, self.E = (int(d) for d in q.shape)
        self.S = int(k.shape[1])
        self.Ev = int(v.shape[2])
        self.H = heads
        self.layout = layout
        if layout == "blhe":
            self.E, self.Ev = self.E // heads, self.Ev // heads
            self.BH = N * heads
        else:
            self.BH = N
        self.causal = causal
        self.scale = float(scale)
        self.mshape = None if mask is None else tuple(int(d) for d in mask.shape)
        self.nqb = -(-self.L // BR)
        self.nkb = -(-self.S // BC)

    def at(self, buf, bh, row, col, width):
        """Element (row, col) of block ``bh`` of ``buf`` (``width`` columns per head)."""
        if self.layout == "bhle":
            return buf[bh, row, col]
        return buf[floordiv(bh, self.H), row, floormod(bh, self.H) * width + col]

    def key(self, j):
        """Key row ``j`` clamped into range when S is not a multiple of the tile."""
        return j if self.S % BC == 0 else _fmin(j, self.S - 1)

    def query(self, i):
        return i if self.L % BR == 0 else _fmin(i, self.L - 1)

    def mask_at(self, M, bh, j, i):
        Bm, Hm, _, Lm = self.mshape
        b = floordiv(bh, self.H) if Bm > 1 else 0
        h = floormod(bh, self.H) if Hm > 1 else 0
        return M[b, h, j, self.query(i) if Lm > 1 else 0]

    def valid(self, j, i):
        """The condition that key j is seen by query i (None: always)."""
        conds = []
        if self.S % BC:
            conds.append(j < self.S)
        if self.causal:
            conds.append(j <= i)
        if not conds:
            return None
        c = conds[0]
        for x in conds[1:]:
            c = te.all(c, x)
        return c

    def key_tiles_end(self, i0):
        """The number of key tiles that queries i0 .. i0 + BR - 1 see."""
        if not self.causal:
            return self.nkb
        return te.min(floordiv(i0 + (BR + BC - 1), BC), self.nkb)

    def first_query_tile(self, j0):
        """The first query tile that sees key tile j0 (causal: the diagonal)."""
        return floordiv(j0, BR) if self.causal else 0


def _rows_by_tile(ib, out, row, tile, depth):
    """out[j, lane] = sum_d row(j, d) * tile[d, lane] for the BC rows j: register tiles of
    KT rows x BR lanes, the depth loop outside (one broadcast of row(j, d) per row)."""
    with ib.for_range(0, BC // KT, name="jt") as jt:
        with ib.for_range(0, KT, name="jj", kind="unroll") as jj:
            with ib.for_range(0, BR, name="x", kind="vectorize") as x:
                out[jt * KT + jj, x] = const(0.0, "float32")
        with ib.for_range(0, depth, name="d") as d:
            with ib.for_range(0, KT, name="jj", kind="unroll") as jj:
                with ib.for_range(0, BR, name="x", kind="vectorize") as x:
                    out[jt * KT + jj, x] = out[jt * KT + jj, x] + \
                        row(jt * KT + jj, d) * tile[d, x]


def _scores(ib, lay, s, q, K, M, bh, i0, j0):
    """s[j, lane] = scale * q . k + mask for the BC keys from j0, -inf where not seen."""
    f32 = "float32"
    _rows_by_tile(ib, s, lambda j, d: lay.at(K, bh, lay.key(j0 + j), d, lay.E), q, lay.E)
    with ib.for_range(0, BC, name="j") as j:
        with ib.for_range(0, BR, name="x", kind="vectorize") as x:
            val = s[j, x]
            if M is not None:
                val = val + lay.mask_at(M, bh, j0 + j, i0 + x)
            cond = lay.valid(j0 + j, i0 + x)
            if cond is not None:
                val = select(cond, val, const(NEG_INF, f32))
            s[j, x] = val


def _load_transposed(ib, lay, tile, Q, bh, i0, width, scale=1.0):
    """tile[d, lane] = Q[row i0 + lane, d] * scale (0 past L): a tile of rows transposed,
    the queries on the lanes."""
    with ib.for_range(0, BR, name="x") as x:
        with ib.for_range(0, width, name="d") as d:
            val = lay.at(Q, bh, lay.query(i0 + x), d, width)
            if scale != 1.0:
                val = val * const(scale, "float32")
            if lay.L % BR:
                val = select(i0 + x < lay.L, val, const(0.0, "float32"))
            tile[d, x] = val


def _guarded(ib, ragged, cond, body):
    """body() under ``if cond`` where the last tile runs past the end (``ragged``), else plain."""
    if ragged:
        with ib.if_scope(cond):
            body()
    else:
        body()


def _pointers(ib, lay, ins):
    """Pointers to q, k, v, the mask (None without one) and the buffers after them."""
    Q, K, V = (ib.buffer_ptr(b) for b in ins[:3])
    rest = ins[3:]
    M = None
    if lay.mshape is not None:
        M, rest = ib.buffer_ptr(rest[0]), rest[1:]
    return Q, K, V, M, [ib.buffer_ptr(b) for b in rest]


def _forward_ir(lay, ins, outs):
    f32 = "float32"
    ib = te.tir.ir_builder.create()
    Q, K, V, M, _ = _pointers(ib, lay, ins)
    O, LSE = ib.buffer_ptr(outs[0]), ib.buffer_ptr(outs[1])
    ec = _chunk(lay.Ev)
    with ib.for_range(0, lay.BH * lay.nqb, name="task", kind="parallel") as task:
        bh = floordiv(task, lay.nqb)
        i0 = floormod(task, lay.nqb) * BR
        q = ib.allocate(f32, (lay.E, BR), name="q")
        s = ib.allocate(f32, (BC, BR), name="s")
        acc = ib.allocate(f32, (lay.Ev, BR), name="acc")
        m = ib.allocate(f32, (BR,), name="m")
        l = ib.allocate(f32, (BR,), name="l")
        mref = ib.allocate(f32, (BR,), name="mref")
        alpha = ib.allocate(f32, (BR,), name="alpha")
        _load_transposed(ib, lay, q, Q, bh, i0, lay.E, lay.scale)
        with ib.for_range(0, BR, name="x", kind="vectorize") as x:
            m[x] = const(NEG_INF, f32)
            l[x] = const(0.0, f32)
        with ib.for_range(0, lay.Ev, name="e") as e:
            with ib.for_range(0, BR, name="x", kind="vectorize") as x:
                acc[e, x] = const(0.0, f32)
        with ib.for_range(0, lay.key_tiles_end(i0), name="kb") as kb:
            j0 = kb * BC
            _scores(ib, lay, s, q, K, M, bh, i0, j0)
            # the running maximum; a row with no key seen yet keeps 0 as its reference
            with ib.for_range(0, BR, name="x", kind="vectorize") as x:
                mref[x] = m[x]
            with ib.for_range(0, BC, name="j") as j:
                with ib.for_range(0, BR, name="x", kind="vectorize") as x:
                    mref[x] = te.max(mref[x], s[j, x])
            with ib.for_range(0, BR, name="x", kind="vectorize") as x:
                new = mref[x]
                ref = select(new == const(NEG_INF, f32), const(0.0, f32), new)
                alpha[x] = te.exp(m[x] - ref)
                m[x] = new
                mref[x] = ref
                l[x] = l[x] * alpha[x]
            with ib.for_range(0, BC, name="j") as j:
                with ib.for_range(0, BR, name="x", kind="vectorize") as x:
                    p = ib.let("p", te.exp(s[j, x] - mref[x]))
                    s[j, x] = p
                    l[x] = l[x] + p
            with ib.for_range(0, lay.Ev // ec, name="eo") as eo:
                with ib.for_range(0, ec, name="ei", kind="unroll") as ei:
                    with ib.for_range(0, BR, name="x", kind="vectorize") as x:
                        acc[eo * ec + ei, x] = acc[eo * ec + ei, x] * alpha[x]
                with ib.for_range(0, BC, name="j") as j:
                    with ib.for_range(0, ec, name="ei", kind="unroll") as ei:
                        with ib.for_range(0, BR, name="x", kind="vectorize") as x:
                            acc[eo * ec + ei, x] = acc[eo * ec + ei, x] + \
                                lay.at(V, bh, lay.key(j0 + j), eo * ec + ei, lay.Ev) * s[j, x]
        # out = acc / l (0 where no key was seen), stored back untransposed
        with ib.for_range(0, BR, name="x", kind="vectorize") as x:
            alpha[x] = select(l[x] == const(0.0, f32), const(0.0, f32),
                              const(1.0, f32) / l[x])
            mref[x] = select(l[x] == const(0.0, f32), const(float("inf"), f32),
                             m[x] + te.log(l[x]))
        with ib.for_range(0, BR, name="x") as x:
            def store():
                with ib.for_range(0, lay.Ev, name="e") as e:
                    _store(O, lay, bh, i0 + x, e, lay.Ev, acc[e, x] * alpha[x])
                LSE[bh, i0 + x] = mref[x]
            _guarded(ib, lay.L % BR, i0 + x < lay.L, store)
    return ib.get()


def _store(buf, lay, bh, row, col, width, value):
    """buf at (row, col) of block bh = value, in the layout's indexing."""
    if lay.layout == "bhle":
        buf[bh, row, col] = value
    else:
        buf[floordiv(bh, lay.H), row, floormod(bh, lay.H) * width + col] = value


def _lanes(n):
    """Vector lanes for a loop over ``n`` columns: all of them up to 32, else a divisor."""
    if n <= 32:
        return n
    for c in (32, 16, 8, 4, 2, 1):
        if n % c == 0:
            return c
    return 1


def _tile_t_by_rows(ib, acc, tile, row, width):
    """acc[j, c] += sum_x tile[j, x] * row(x, c) over the BR lanes x of ``tile`` (BC x BR),
    for columns c < width: register tiles of KT rows x (up to 32) columns, x outside."""
    w = _lanes(width)
    with ib.for_range(0, BC // KT, name="jt") as jt:
        with ib.for_range(0, width // w, name="co") as co:
            with ib.for_range(0, BR, name="x") as x:
                with ib.for_range(0, KT, name="jj", kind="unroll") as jj:
                    with ib.for_range(0, w, name="c", kind="vectorize") as c:
                        acc[jt * KT + jj, co * w + c] = acc[jt * KT + jj, co * w + c] + \
                            tile[jt * KT + jj, x] * row(x, co * w + c)


def _backward_ir(lay, ins, outs):
    f32 = "float32"
    ib = te.tir.ir_builder.create()
    Q, K, V, M, (DO, O, LSE) = _pointers(ib, lay, ins)
    DQ, DK, DV, DELTA = (ib.buffer_ptr(b) for b in outs)
    E, Ev = lay.E, lay.Ev
    we = _lanes(E)
    with ib.for_range(0, lay.BH, name="bh", kind="parallel") as bh:
        q = ib.allocate(f32, (E, BR), name="q")
        dot = ib.allocate(f32, (Ev, BR), name="dot")
        p = ib.allocate(f32, (BC, BR), name="p")
        ds = ib.allocate(f32, (BC, BR), name="ds")
        dks = ib.allocate(f32, (BC, E), name="dks")
        dvs = ib.allocate(f32, (BC, Ev), name="dvs")
        dqs = ib.allocate(f32, (BR, E), name="dqs")
        lse = ib.allocate(f32, (BR,), name="lse")
        delta = ib.allocate(f32, (BR,), name="delta")
        with ib.for_range(0, lay.L, name="i") as i:
            DELTA[bh, i] = const(0.0, f32)          # delta = rowsum(do * out)
            with ib.for_range(0, Ev, name="e") as e:
                DELTA[bh, i] = DELTA[bh, i] + lay.at(DO, bh, i, e, Ev) * lay.at(O, bh, i, e, Ev)
            with ib.for_range(0, E // we, name="do") as do:
                with ib.for_range(0, we, name="c", kind="vectorize") as c:
                    _store(DQ, lay, bh, i, do * we + c, E, const(0.0, f32))
        with ib.for_range(0, lay.nkb, name="kb") as kb:
            j0 = kb * BC
            with ib.for_range(0, BC, name="j") as j:
                with ib.for_range(0, E, name="c", kind="vectorize") as c:
                    dks[j, c] = const(0.0, f32)
                with ib.for_range(0, Ev, name="c", kind="vectorize") as c:
                    dvs[j, c] = const(0.0, f32)
            first = lay.first_query_tile(j0)
            with ib.for_range(first, lay.nqb, name="qb") as qb:
                i0 = qb * BR
                _load_transposed(ib, lay, q, Q, bh, i0, E, lay.scale)
                _load_transposed(ib, lay, dot, DO, bh, i0, Ev)
                with ib.for_range(0, BR, name="x", kind="vectorize") as x:
                    lse[x] = LSE[bh, lay.query(i0 + x)]
                    delta[x] = DELTA[bh, lay.query(i0 + x)]
                _scores(ib, lay, p, q, K, M, bh, i0, j0)
                with ib.for_range(0, BC, name="j") as j:
                    with ib.for_range(0, BR, name="x", kind="vectorize") as x:
                        val = te.exp(p[j, x] - lse[x])
                        if lay.L % BR:
                            val = select(i0 + x < lay.L, val, const(0.0, f32))
                        p[j, x] = val
                # dv += p^T do
                _tile_t_by_rows(ib, dvs, p, lambda x, c: lay.at(DO, bh, lay.query(i0 + x), c, Ev),
                                Ev)
                # dp = v do^T, ds = p * (dp - delta)
                _rows_by_tile(ib, ds, lambda j, e: lay.at(V, bh, lay.key(j0 + j), e, Ev), dot, Ev)
                with ib.for_range(0, BC, name="j") as j:
                    with ib.for_range(0, BR, name="x", kind="vectorize") as x:
                        ds[j, x] = p[j, x] * (ds[j, x] - delta[x])
                # dk += ds^T q (scaled at the end)
                _tile_t_by_rows(ib, dks, ds, lambda x, c: lay.at(Q, bh, lay.query(i0 + x), c, E), E)
                # dq += ds k * scale
                with ib.for_range(0, BR // KT, name="xt") as xt:
                    with ib.for_range(0, E // we, name="co") as co:
                        with ib.for_range(0, KT, name="xx", kind="unroll") as xx:
                            with ib.for_range(0, we, name="c", kind="vectorize") as c:
                                dqs[xt * KT + xx, co * we + c] = const(0.0, f32)
                        with ib.for_range(0, BC, name="j") as j:
                            with ib.for_range(0, KT, name="xx", kind="unroll") as xx:
                                with ib.for_range(0, we, name="c", kind="vectorize") as c:
                                    dqs[xt * KT + xx, co * we + c] = \
                                        dqs[xt * KT + xx, co * we + c] + \
                                        ds[j, xt * KT + xx] * \
                                        lay.at(K, bh, lay.key(j0 + j), co * we + c, E)
                with ib.for_range(0, BR, name="x") as x:
                    def add_dq():
                        with ib.for_range(0, E // we, name="co") as co:
                            with ib.for_range(0, we, name="c", kind="vectorize") as c:
                                col = co * we + c
                                _store(DQ, lay, bh, i0 + x, col, E,
                                       lay.at(DQ, bh, i0 + x, col, E) +
                                       dqs[x, col] * const(lay.scale, f32))
                    _guarded(ib, lay.L % BR, i0 + x < lay.L, add_dq)
            with ib.for_range(0, BC, name="j") as j:
                def store_kv():
                    with ib.for_range(0, E, name="c", kind="vectorize") as c:
                        _store(DK, lay, bh, j0 + j, c, E, dks[j, c] * const(lay.scale, f32))
                    with ib.for_range(0, Ev, name="c", kind="vectorize") as c:
                        _store(DV, lay, bh, j0 + j, c, Ev, dvs[j, c])
                _guarded(ib, lay.S % BC, j0 + j < lay.S, store_kv)
    return ib.get()


def flash_attention_backward(q, k, v, *rest, heads=1, causal=False, scale=1.0,
                             masked=False, layout="bhle"):
    """(dq, dk, dv, delta) of ``flash_attention`` given ``rest`` = ([maskT,] do, out, lse);
    dq, dk, dv in the layout of q, k, v; delta = rowsum(do * out) (BH, L)."""
    maskT = rest[0] if masked else None
    lay = _Layout(q, k, v, maskT, heads, causal, scale, layout)
    ins = [q, k, v] + list(rest)
    return te.extern([tuple(q.shape), tuple(k.shape), tuple(v.shape), (lay.BH, lay.L)], ins,
                     lambda i, o: _backward_ir(lay, i, o), name="flash_attention_backward",
                     dtype=["float32"] * 4, tag="flash_attention_backward")


def flash_attention(q, k, v, maskT=None, heads=1, causal=False, scale=1.0, layout="bhle"):
    """(out, lse (BH, L)): softmax(q k^T * scale + mask) v in the layout of q, k, v (out has
    v's width), and the log-sum-exp of each row of scores."""
    lay = _Layout(q, k, v, maskT, heads, causal, scale, layout)
    ins = [q, k, v] + ([maskT] if maskT is not None else [])
    out_shape = (int(q.shape[0]), lay.L, int(v.shape[2]))
    out, lse = te.extern([out_shape, (lay.BH, lay.L)], ins,
                         lambda i, o: _forward_ir(lay, i, o), name="flash_attention",
                         dtype=["float32", "float32"], tag="flash_attention")
    return out, lse


@functools.lru_cache(maxsize=256)
def _build(declare, shapes, params):
    inputs = [te.placeholder(s, "float32", name=f"x{k}") for k, s in enumerate(shapes)]
    outs = declare(*inputs, **dict(params))
    outs = list(outs)
    s = te.create_schedule([o.op for o in outs])
    module = te.build(s, inputs + outs, target="llvm", name=declare.__name__)
    out_shapes = [tuple(int(d) for d in o.shape) for o in outs]

    def run(*arrays):
        results = [np.empty(sh, "float32") for sh in out_shapes]
        module(*arrays, *results)
        return results
    run.module = module
    return run


def build(declare, shapes, **params):
    """The compiled ``declare`` for float32 inputs of ``shapes`` (cached): a function of
    numpy arrays that returns the list of outputs."""
    shapes = tuple(tuple(int(d) for d in s) for s in shapes)
    return _build(declare, shapes, tuple(sorted(params.items())))
