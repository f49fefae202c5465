"""Matrix products for the CPU: ``matmul``, ``dense``, ``matmul_tn`` and ``batch_matmul`` with
their schedule. (Declared under ``with Target("cuda")``, as nn's GPU build does, they are
``C`` over a plain product ``acc`` of zero-padded operands instead, for
``nn.ops.gpu.schedule_matmul``: see ``_gpu_product``.)

Each declaration builds three stages, as TVM's x86 ``dense_pack`` does:

    packB[xo, k, xi] = B[k, xo * bn + xi]            B in panels of bn columns, one per xo
    acc[y, x]        = sum_k A[y, k] * packB[x // bn, k, x % bn]      padded to whole tiles
    C[y, x]          = acc[y, x] (+ bias[x])                          the output, cropped

``acc`` is padded to whole ``my x bn`` tiles (its rows past M read row M - 1 of A, its columns
past N read column N - 1 of B, and are never copied out), so its loops need no bounds checks
and stay vectorized for every size; only the copy into ``C`` is guarded, and loop partitioning
splits that guard off to the last column tile. ``matmul_tn`` reads A transposed (``A[k, y]``,
the ``my`` values of one k step adjacent): the weight gradient of a linear layer,
``grad^T @ x``, without a transposed copy of ``grad``.

The declaration also picks one of three strategies for ``schedule_matmul`` (``acc``'s
``strategy`` attribute), by the number of rows M per batch:

    packed   B is packed, then every my x bn tile of C is computed in registers (most sizes)
    direct   at most two row tiles: B is read in place (packB inlined); packing would cost as
             much as the product
    dot      B transposed (``dense``) and M <= 16: one vectorized dot product per output,
             reading rows of A and B contiguously (no packing, no padding)
"""
from __future__ import annotations

import math

import te
from te.target import Target

from . import host
from .cpu_util import const_shape, pad_to, zero_outside

# The register tile's knobs come from ``nn.ops.host.knobs("matmul")``: ``rows`` (8 on Zen 4)
# and ``vectors`` of columns (2: 32 float32 columns with AVX-512), from the host's records or
# its model (FMAs in flight x registers). The constants below are the host-independent ones.
DOT_M_MAX = 16      # B transposed and at most this many rows: the dot strategy
DIRECT_TILES = 2    # at most this many row tiles: the direct strategy
ROW_TILES_MIN = 8   # fewer row tiles than this: parallelize over all tiles, not over rows


def tile_knobs():
    """(rows candidates best first, bn columns, dot lanes) for float32 on the host in force:
    the rows from ``rows`` down to half of it (the least padding wins, as in default_tile)."""
    k = host.knobs("matmul")
    lanes = host.vector_bits() // 32
    top = k["rows"]
    rows = tuple(range(top, max(1, (top + 1) // 2) - 1, -1))
    return rows, k["vectors"] * lanes, lanes


def default_tile(M, N, transpose_b=False):
    """(strategy, (rows, columns)) of the register tile for an M x N product."""
    rows, bn_full, lanes = tile_knobs()
    if transpose_b and M <= DOT_M_MAX:
        return "dot", (max(M, 1), 1)
    if M < rows[0]:
        my = max(M, 1)          # an empty product (M = 0) still has a one-row tile
    else:                       # least padding; the larger tile on a tie
        my = min(rows, key=lambda r: (pad_to(M, r), -r))
    bn = bn_full if N > bn_full // 2 else lanes
    strategy = "direct" if pad_to(M, my) // my <= DIRECT_TILES else "packed"
    return strategy, (my, bn)


def _check_tile(tile, M):
    my, bn = (int(v) for v in tile)
    if my < 1 or bn < 1:
        raise ValueError(f"tile must be two positive sizes (rows, columns), got {tile}")
    strategy = "direct" if pad_to(M, my) // my <= DIRECT_TILES else "packed"
    return strategy, (my, bn)


def _product(A, B, bias, transpose_b, batch, tile, name, transpose_a=False):
    """The three stages of ``A @ B`` (``A^T``, ``B^T`` when transposed), with a leading batch
    axis if ``batch``."""
    a_shape, b_shape = const_shape(A, name), const_shape(B, name)
    nb = 1 if batch else 0
    if len(a_shape) != 2 + nb or len(b_shape) != 2 + nb:
        raise ValueError(f"{name}: expected {2 + nb}-d operands, got shapes {a_shape} and "
                         f"{b_shape}")
    M, K = a_shape[nb:][::-1] if transpose_a else a_shape[nb:]
    N, KB = b_shape[nb:] if transpose_b else b_shape[nb:][::-1]
    if K != KB:
        used = [side for side, t in (("A", transpose_a), ("B", transpose_b)) if t]
        raise ValueError(f"{name}: inner sizes differ: {a_shape} and {b_shape}"
                         + (f" ({' and '.join(used)} used transposed)" if used else ""))
    if batch and a_shape[0] != b_shape[0] and 1 not in (a_shape[0], b_shape[0]):
        raise ValueError(f"{name}: batch sizes {a_shape[0]} and {b_shape[0]} do not broadcast")
    if bias is not None and const_shape(bias, name) != (N,):
        raise ValueError(f"{name}: bias must have shape ({N},), got {tuple(bias.shape)}")
    nbatch = (max(a_shape[0], b_shape[0]),) if batch else ()

    def at(t_shape, idx, *rest):
        """Index of operand with shape ``t_shape`` from batch index ``idx`` (batch 1 repeats)."""
        return ((0 if t_shape[0] == 1 else idx[0]),) + rest if batch else rest

    def output(acc):
        """C: ``acc`` (padded to tiles) cropped to M x N, plus the bias."""
        def fout(*idx):
            v = acc[idx]
            return v + bias[idx[-1]] if bias is not None else v
        return te.compute(nbatch + (M, N), fout, name=name, tag="matmul")

    target = Target.current()
    if target is not None and target.kind.name == "cuda":
        acc, parts = _gpu_product(A, B, a_shape, b_shape, transpose_a, transpose_b, nbatch,
                                  at, (M, N, K), name)
        if parts == 1:
            return output(acc)
        part = te.reduce_axis((0, parts), name="part")     # split-K: the parts added up
        total = te.compute(nbatch + (M, N), lambda *idx: te.sum(acc[(part,) + idx], axis=part),
                           name=name if bias is None else f"{name}.sum", tag="matmul_split_k")
        if bias is None:
            return total
        return te.compute(nbatch + (M, N), lambda *idx: total[idx] + bias[idx[-1]], name=name,
                          tag="matmul")

    strategy, (my, bn) = _check_tile(tile, M) if tile else default_tile(M, N, transpose_b)
    Mp, Np = pad_to(M, my), pad_to(N, bn)

    def fpack(*idx):
        *b, xo, k, xi = idx

        def load(col):
            return B[at(b_shape, b, *((col, k) if transpose_b else (k, col)))]
        col = xo * bn + xi
        if Np == N:
            return load(col)
        # the branch is the same for all lanes: whole panels keep contiguous vector loads,
        # only the last one clamps its columns (a gather)
        return te.if_then_else(xo < N // bn, load(col), load(te.min(col, N - 1)))
    packB = te.compute(tuple(b_shape[:nb]) + (Np // bn, K, bn), fpack, name=f"{name}.packB",
                       tag="pack", attrs={"transposed": transpose_b})
    k = te.reduce_axis((0, K), name="k")

    def facc(*idx):
        *b, y, x = idx
        row = te.min(y, M - 1) if Mp != M else y
        a = A[at(a_shape, b, k, row)] if transpose_a else A[at(a_shape, b, row, k)]
        return te.sum(a * packB[at(b_shape, b, x // bn, k, x % bn)], axis=k)
    acc = te.compute(nbatch + (Mp, Np), facc, name=f"{name}.acc", tag="matmul_acc",
                     attrs={"tile": (my, bn), "strategy": strategy})
    return output(acc)


def _gpu_product(A, B, a_shape, b_shape, transpose_a, transpose_b, nbatch, at, sizes, name):
    """(product, parts): the product declared for ``nn.ops.gpu.schedule_matmul``: each
    operand zero-padded (in its own layout; B transposed k-major) to whole tiles
    of the schedule (``gpu.matmul_config``), so that the tiles need no guards; the stages
    that pad become the shared-memory tiles. A product of few tiles and a long reduction
    is split along k into ``parts`` products (``gpu.split_k_parts``; a leading axis of the
    result) for the caller to add up."""
    from .gpu import matmul_block, matmul_config, split_k_parts
    M, N, K = sizes
    cfg = matmul_config(M, N, K)
    rows, cols = matmul_block(cfg)
    Mp, Np, step = pad_to(M, rows), pad_to(N, cols), cfg["step"]
    parts = split_k_parts(math.prod(nbatch) * (Mp // rows) * (Np // cols), K, step)
    KL = pad_to(-(-K // parts), step)
    Kp = parts * KL
    nb = len(nbatch)

    def tile(T, t_shape, rows, cols, tag, k_major=False):
        """``T`` (``rows[0] x cols[0]`` per batch, as stored) padded with zeros to
        ``rows[1] x cols[1]``; ``k_major``: B transposed (N x K, as stored) copied K x N,
        always (its own layout puts the shared tile's rows across the threads at a stride of
        the step, and every thread's shared loads on the same banks: x @ w^T ran 3x slower
        than x @ w on an H200, 12.1 against 4.1 ms at 4096^3); the copy is filled along
        T's rows (``attrs["transposed"]``)."""
        (R, Rp), (C, Cp) = rows, cols
        if (R, C) == (Rp, Cp) and not k_major:
            return T

        def value(*idx):
            coords = idx[:-2] + (idx[-1], idx[-2]) if k_major else idx
            if (R, C) == (Rp, Cp):
                return T[coords]
            return zero_outside(T, coords, (None,) * nb + ((0, R), (0, C)))
        return te.compute(tuple(t_shape[:nb]) + ((Cp, Rp) if k_major else (Rp, Cp)), value,
                          name=f"{name}.{tag}", tag="gpu_matmul_pad",
                          attrs={"transposed": True} if k_major else None)
    m, n, kk = (M, Mp), (N, Np), (K, Kp)
    Ap = tile(A, a_shape, *((kk, m) if transpose_a else (m, kk)), "Apad")
    Bp = tile(B, b_shape, n, kk, "Bpad", k_major=True) if transpose_b else \
        tile(B, b_shape, kk, n, "Bpad")
    k = te.reduce_axis((0, KL), name="k")

    def fprod(*idx):
        part, (*b, y, x) = (idx[0], idx[1:]) if parts > 1 else (0, idx)
        kp = part * KL + k if parts > 1 else k
        a = Ap[at(a_shape, b, kp, y)] if transpose_a else Ap[at(a_shape, b, y, kp)]
        return te.sum(a * Bp[at(b_shape, b, kp, x)], axis=k)
    split = (parts,) if parts > 1 else ()
    return te.compute(split + nbatch + (Mp, Np), fprod, name=f"{name}.acc",
                      tag="gpu_matmul_acc", attrs={"config": cfg}), parts


def matmul(A, B, bias=None, tile=None, name="matmul"):
    """``C = A @ B (+ bias)`` for A of shape (M, K), B (K, N) and bias (N,)."""
    return _product(A, B, bias, False, False, tile, name)


def dense(x, weight, bias=None, tile=None, name="dense"):
    """PyTorch's Linear: ``x @ weight^T (+ bias)`` for x (M, K), weight (N, K), bias (N,)."""
    return _product(x, weight, bias, True, False, tile, name)


def matmul_tn(A, B, tile=None, name="matmul_tn"):
    """``C = A^T @ B`` for A of shape (K, M) and B (K, N): A is read transposed in place."""
    return _product(A, B, None, False, False, tile, name, transpose_a=True)


def batch_matmul(A, B, transpose_b=False, tile=None, name="batch_matmul", transpose_a=False):
    """``C[b] = A[b] @ B[b]``, each operand read transposed when asked (``A[b]^T``,
    ``B[b]^T``); a batch of 1 broadcasts."""
    return _product(A, B, None, transpose_b, True, tile, name, transpose_a)


def schedule_matmul(C):
    """Schedule for the output of ``matmul``, ``dense``, ``matmul_tn`` or ``batch_matmul``.

    packed / direct: C is cut into ``my x bn`` tiles (default 8 x 32). In each tile ``acc`` is
    computed in registers: the k loop outermost, then the ``my`` rows unrolled, then ``bn``
    columns as vector lanes, so the 16 accumulators (8 rows x 2 AVX-512 vectors) stay in
    registers and each k step is one broadcast of ``A[y, k]`` per row and a fused
    multiply-add against a row of the panel. Row tiles (fused with the batch) are the
    parallel loop; with fewer than 8 of them, column tiles are. ``packB`` is vectorized
    along its panel rows (along k when B is transposed) and parallel over panels.
    dot: one column of C at a time, parallel over columns: for every row, 16 partial sums
    over k in one vector (``rfactor``), the rows unrolled so that each k step loads the row
    of B once; the partial sums are added at the end.

    Measured (benchmarks/cpu.py, 2-core znver4, idle, medians; 1 / 2
    threads): 1024^3 107 / 198 GFLOP/s (numpy's OpenBLAS 99 / 192, torch 91 / 174);
    M, N, K = 1000, 1100, 900: 107 / 185 (numpy 104 / 196). Tiles from 4 x 32 to 12 x 32
    ran within noise of 8 x 32 on one thread; 16 x 32 (spills) lost 15%. Fused multiply-add
    matters: before codegen_llvm allowed LLVM to contract a * b + c, 256^3 on 2 threads ran
    at 121 GFLOP/s instead of 195. dense with 8 rows (dot): 1024 x 1024 weights in about
    0.6 ms on one thread (torch 0.7 ms, numpy 0.9-1.3 ms).
    """
    if getattr(C.op, "tag", "") != "matmul":
        raise ValueError(f"schedule_matmul: {C.name} is not the output of matmul, dense or "
                         "batch_matmul")
    s = te.create_schedule(C.op)
    acc = C.op.input_tensors()[0]
    packB = acc.op.input_tensors()[1]
    strategy = acc.op.attrs["strategy"]
    if strategy != "packed":
        s[packB].compute_inline()
    if strategy == "dot":
        _schedule_dot(s, C, acc)
        return s
    my, bn = acc.op.attrs["tile"]
    *batch, y, x = s[C].op.axis
    yo, xo, yi, xi = s[C].tile(y, x, my, bn)
    rows = s[C].fuse(*batch, yo) if batch else yo
    n_rows = 1
    for d in acc.shape[:-1]:
        n_rows *= d.value
    block = row_block(acc, my, bn) if strategy == "packed" else 0
    if n_rows // my >= ROW_TILES_MIN and block:
        # cache blocking: ``block`` row tiles share each packed panel of B while it is in L2
        # (all the panels of a large B stream from L3 or memory once per row tile otherwise)
        rb, rt = s[C].split(rows, factor=block)
        s[C].reorder(rb, xo, rt, yi, xi)
        s[C].parallel(rb)
        tile_loop = rt
    elif n_rows // my >= ROW_TILES_MIN:
        # column tiles stay a loop of their own, so that loop partitioning can split off the
        # last, partial one and the copy-out of the others stays vectorized
        s[C].parallel(rows)
        tile_loop = xo
    else:
        s[C].reorder(xo, rows, yi, xi)
        s[C].parallel(xo)
        tile_loop = rows
    s[C].vectorize(xi)
    s[acc].compute_at(s[C], tile_loop)
    *_, cy, cx = s[acc].op.axis
    (k,) = s[acc].op.reduce_axis
    s[acc].reorder(k, cy, cx)
    s[acc].unroll(cy)
    s[acc].vectorize(cx)
    if strategy == "packed":
        *pbatch, po, pk, pi = s[packB].op.axis
        s[packB].parallel(s[packB].fuse(*pbatch, po) if pbatch else po)
        if packB.op.attrs["transposed"]:
            # read B's rows along k (contiguous); the strided stores are cheaper than gathers
            pko, pki = s[packB].split(pk, factor=16)
            s[packB].reorder(pko, pi, pki)
            s[packB].vectorize(pki)
        else:
            s[packB].vectorize(pi)
    return s


def row_block(acc, my, bn):
    """Row tiles per cache block of the packed product (0: no blocking): as many as fit, with
    one packed panel of B (K x bn), in half the L2, where the host's knobs ask for blocking
    (``l2_block``) and all of packed B does not fit in half the L2 anyway; the number of
    blocks is a multiple of the cores, so that every thread gets the same share."""
    k = host.knobs("matmul")
    if not k.get("l2_block"):
        return 0
    K = acc.op.reduce_axis[0].dom.extent.value
    item = 4
    l2 = k["l2_bytes"]
    if K * acc.shape[-1].value * item <= l2 // 2:
        return 0
    room = l2 // 2 - K * bn * item
    fit = max(1, room // (my * K * item))
    # whole blocks per thread: the blocks are the parallel loop, and libgomp hands each
    # thread a contiguous run of them (5 blocks of 28 row tiles on 2 cores kept one core
    # idle 40% of the time: 1024^3 ran at 121 instead of about 190 GFLOP/s)
    # (this machine's cores, also under a forced family: the pool's size is this machine's)
    tiles = math.prod(d.value for d in acc.shape[:-1]) // my
    blocks = pad_to(-(-tiles // fit), host.detect().cores)
    return max(1, -(-tiles // blocks))


def _schedule_dot(s, C, acc):
    *batch, y, x = s[C].op.axis
    s[C].reorder(*batch, x, y)
    cols = s[C].fuse(*batch, x) if batch else x
    s[C].parallel(cols)
    (k,) = s[acc].op.reduce_axis
    _, ki = s[acc].split(k, factor=tile_knobs()[2])
    rf = s.rfactor(acc, ki, factor_axis=len(s[acc].op.axis))
    # all rows of one column at once: B's row is loaded once per k step for every row of A,
    # and the rows' sums are independent chains
    s[rf].compute_at(s[C], cols)
    s[acc].compute_at(s[C], cols)
    *_, ry, _, lane = s[rf].op.axis
    s[rf].reorder(*s[rf].op.reduce_axis, ry, lane)
    s[rf].unroll(ry)
    s[rf].vectorize(lane)
    *_, ay, _ = s[acc].op.axis
    s[acc].reorder(s[acc].op.reduce_axis[0], ay)
    s[acc].unroll(ay)
