"""Winograd convolution F(m x m, 3x3) for the CPU: 3x3 kernels, stride 1, no dilation, no groups.

Each m x m block of outputs (a *tile*) is computed from the (m + 2) x (m + 2) block of padded
input around it with (m + 2)^2 products per channel pair instead of 9 m^2 (m = 2: 2.25x
fewer multiply-adds, m = 4: 4x), as Lavin and Gray (2015) describe. With the transforms B, G
and A of F(m, 3) and E = (m + 2)^2 positions e = (m + 2) a + b:

    U[e, f, c]    = (G g G^T)[a, b]    g = kernel[f, c]                     (weights)
    V[e, c, r, t] = (B^T d B)[a, b]    d = the input block of tile (row r, column t)
    M[e, f, p]    = sum_c U[e, f, c] * V[e, c, p]   E matrix products, p = r * TW + t
    Y             = A^T M A            the m x m outputs of each tile

The stages, all te computes:

    pad[n, c, h, j, q]   the zero-padded input with its columns split into m phases (column
                         m q + j): the columns a row of tiles reads, m t .. m t + m + 1, are
                         pad[.., j % m, t + j // m], so every transform reads contiguous rows
    kernel_t, U[e, f, c] the kernel with its channels innermost, then G g G^T
    V[e, c, r, t]        B^T d B, rows of tiles r = n * TH + tile row (n: the image)
    acc[e, f, p]         the products, one register tile (8 channels x 32 tiles) at a time;
                         V is read as a matrix with p = r * TW + t (the simplifier merges the
                         flattened r * TW + t back into p, so the reads are contiguous)
    M[e, f, p]           acc copied out of the registers
    Y[n, f, y, j, t]     A^T M A: output row y, column m t + j
    out[n, f, y, x]      Y[n, f, y, x % m, x // m] (+ bias[f])

The transforms are written out as sums over the block with the matrices' coefficients; each
(a, b) is a select on the loop variables that unrolling turns into a constant, so the
generated code is the additions alone, and the E outputs of a block share its loads.
``default_tile`` chooses m, or the direct convolution, with a cost model fitted to
measurements (``benchmarks/conv.py``). F(4x4, 3x3) multiplies by up to 8 and 1/24: its
float32 results differ from a direct convolution's by a few more ulps (about 1e-5 relative
to the largest output for 64 channels).
"""
from __future__ import annotations

import te

from . import host
from .cpu_util import conv_output, const_shape, pad_to, padded_load, vector_lanes

# B^T, G and A^T of F(m, 3) by output tile m: F(2, 3) with the points 0, 1, -1 (and infinity);
# F(4, 3) with 0, 1, -1, 2, -2 (Lavin and Gray's matrices)
TRANSFORMS = {
    2: (((1, 0, -1, 0), (0, 1, 1, 0), (0, -1, 1, 0), (0, 1, 0, -1)),
        ((1, 0, 0), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5), (0, 0, 1)),
        ((1, 1, 1, 0), (0, 1, -1, -1))),
    4: (((4, 0, -5, 0, 1, 0), (0, -4, -4, 1, 1, 0), (0, 4, -4, -1, 1, 0),
         (0, -2, -1, 2, 1, 0), (0, 2, -1, -2, 1, 0), (0, 4, 0, -5, 0, 1)),
        ((1 / 4, 0, 0), (-1 / 6, -1 / 6, -1 / 6), (-1 / 6, 1 / 6, -1 / 6),
         (1 / 24, 1 / 12, 1 / 6), (1 / 24, -1 / 12, 1 / 6), (0, 0, 1)),
        ((1, 1, 1, 1, 1, 0), (0, 1, -1, 2, -2, 0), (0, 1, 1, 4, 4, 0), (0, 1, -1, 8, -8, 1))),
}
# the product's register tile: host.knobs("winograd") rows (output channels, 8 with
# AVX-512) x vectors of tiles (2 x 16 float32 lanes); see gemm_tile()
MIN_CHANNELS = 16   # fewer input or output channels: the transforms cost more than they save
TRANSFORM_COST = 35  # multiply-adds that one element of V or M costs (its stores, loads and
KERNEL_COST = 25     # additions), one of U, and one of the padded input (its loads are gathers:
PAD_COST = 16        # every m-th column): fitted to the measurements in default_tile
WINOGRAD_MIN_GAIN = 0.8     # Winograd when its modelled cost is below this times direct's
# the E planes of U and M are read or written together: their stride must not be a multiple
# of 4 KiB (the L1 cache's set stride), or the E streams fall into one set and evict each
# other (M's 64 x 800 planes: the inverse ran 1.5x slower). Pad it to 1 line past a multiple.
PLANE_ALIGN = (1024, 16)    # elements: stride % 1024 == 16
# the products read a panel of V down its channels: with a stride of 128 floats (8 images of
# 4x4 tiles) those rows fell into 8 of L1's 64 sets, and the products ran 3x slower. An odd
# number of 16-float lines between rows spreads them over all sets.
ROW_ALIGN = (32, 16)


def gemm_tile():
    """(rows, vectors) of the product's register tile for the host in force."""
    k = host.knobs("winograd")
    return k["rows"], k["vectors"]


def applies(kernel_size, stride, dilation, groups, channels, out_channels):
    """Whether Winograd's transforms can compute this convolution (and pay for themselves
    in channels; ``default_tile`` then says whether they do for the image size)."""
    return (tuple(kernel_size) == (3, 3) and tuple(stride) == (1, 1)
            and tuple(dilation) == (1, 1) and groups == 1
            and channels >= MIN_CHANNELS and out_channels >= MIN_CHANNELS)


def _combine(matrix, index, values, dtype):
    """``sum_k matrix[index][k] * values[k]`` with ``index`` a loop variable: a select per row
    (constant after unrolling), each row a sum of the values with coefficients +-1 or c."""
    def row(coeffs):
        total = None
        for c, v in zip(coeffs, values):
            if c == 0:
                continue
            term = v if abs(c) == 1 else v * te.const(abs(c), dtype)
            if total is None:
                total = term if c > 0 else te.const(0, dtype) - term
            else:
                total = total + term if c > 0 else total - term
        return total
    out = row(matrix[-1])
    for k in range(len(matrix) - 2, -1, -1):
        out = te.select(index.equal(k), row(matrix[k]), out)
    return out


def _transform(matrix, a, b, block, dtype):
    """``(matrix . block . matrix^T)[a, b]`` for a 2-d list ``block`` of expressions."""
    cols = len(block[0])
    rows = [_combine(matrix, a, [block[i][j] for i in range(len(block))], dtype)
            for j in range(cols)]
    return _combine(matrix, b, rows, dtype)


def conv2d_winograd(data, kernel, padding, name="conv2d", bias=None, tile=None):
    """Convolution of data (N, C, H, W) with a 3x3 kernel (F, C, 3, 3), stride 1, padding
    (top, left, bottom, right): (N, F, OH, OW), computed with F(m x m, 3x3), ``m = tile``
    (2 or 4; default: ``default_tile``)."""
    N, C, H, W = const_shape(data, name)
    F, _, KH, KW = const_shape(kernel, name)
    pt, pl, pb, pr = padding
    OH, OW = H + pt + pb - 2, W + pl + pr - 2
    lanes = vector_lanes(data.dtype)
    m = tile or default_tile(N, C, F, OH, OW, lanes) or 2
    if m not in TRANSFORMS:
        raise ValueError(f"{name}: Winograd tile must be one of {sorted(TRANSFORMS)}, got {m}")
    B_T, G, A_T = TRANSFORMS[m]
    alpha = m + 2
    E = alpha * alpha
    TH, TW = -(-OH // m), -(-OW // m)
    GEMM_ROWS, GEMM_VECTORS = gemm_tile()
    bn = GEMM_VECTORS * lanes
    P = N * TH * TW
    Pp = pad_to(P, bn)
    rows = -(-Pp // TW)                 # rows of tiles, with the padded GEMM columns' ones
    Fp = pad_to(F, GEMM_ROWS) if F > GEMM_ROWS else F
    dt = data.dtype

    def fpad(n, c, h, j, q):
        return padded_load(data, n, c, h, m * q + j, (H, W), (pt, pl))
    pad = te.compute((N, C, m * TH + 2, m, TW + (alpha - 1) // m), fpad, name=f"{name}.pad",
                     tag="pad")

    # the kernel with its channels innermost: the transform then reads whole vectors
    # (reading kernel[f, c, i, j] across c, 9 apart, cost 16 scalar loads per vector, which
    # LLVM could not share between the 36 outputs)
    kernel_t = te.compute((F, 3, 3, C), lambda f, i, j, c: kernel[f, c, i, j],
                          name=f"{name}.kernel_t", tag="winograd_kernel_t")

    def fkernel(e, f, c):
        g = [[kernel_t[f, i, j, c] for j in range(3)] for i in range(3)]
        return _transform(G, e // alpha, e % alpha, g, dt)
    U = te.compute((E, F, C), fkernel, name=f"{name}.U", tag="winograd_kernel")

    def fdata(e, c, r, t):
        rr = te.min(r, N * TH - 1) if rows > N * TH else r
        n, th = (rr // TH, rr % TH) if N > 1 else (0, rr)
        d = [[pad[n, c, m * th + i, j % m, t + j // m] for j in range(alpha)]
             for i in range(alpha)]
        return _transform(B_T, e // alpha, e % alpha, d, dt)
    V = te.compute((E, C, rows, TW), fdata, name=f"{name}.V", tag="winograd_data")

    k = te.reduce_axis((0, C), name="rc")

    def facc(e, f, p):
        fc = te.min(f, F - 1) if Fp != F else f
        return te.sum(U[e, fc, k] * V[e, k, p // TW, p % TW], axis=k)
    acc = te.compute((E, Fp, Pp), facc, name=f"{name}.acc", tag="winograd_acc")
    M = te.compute((E, F, Pp), lambda e, f, p: acc[e, f, p], name=f"{name}.M",
                   tag="winograd_product")

    def finverse(n, f, y, j, t):
        p = (n * TH + y // m) * TW + t
        block = [[M[alpha * a + b, f, p] for b in range(alpha)] for a in range(alpha)]
        return _transform(A_T, y % m, j, block, dt)
    Y = te.compute((N, F, m * TH, m, TW), finverse, name=f"{name}.Y", tag="winograd_inverse",
                   attrs={"tile": m})
    return conv_output(Y, (N, F, OH, OW), lambda n, f, y, x: Y[n, f, y, x % m, x // m], bias,
                     name)


def cost(m, batch, channels, out_channels, out_height, out_width, lanes=16):
    """The modelled cost of F(m x m, 3x3) in multiply-adds: the products (padded to whole
    register tiles), plus ``TRANSFORM_COST`` per element of V and M, ``KERNEL_COST`` per
    element of U and ``PAD_COST`` per element of the phase-split padded input, more when its
    rows are narrower than a vector (its vectors are then partly empty)."""
    E = (m + 2) ** 2
    th, tw = -(-out_height // m), -(-out_width // m)
    columns = pad_to(batch * th * tw, gemm_tile()[1] * lanes)
    pad_row = tw + (m + 1) // m
    used = max(_vector_width(pad_row, lanes), 4)
    pad = batch * channels * (m * th + 2) * m * pad_row
    return (E * columns * out_channels * channels
            + TRANSFORM_COST * E * columns * (channels + out_channels)
            + KERNEL_COST * E * out_channels * channels
            + PAD_COST * lanes / used * pad)


def default_tile(batch, channels, out_channels, out_height, out_width, lanes=16):
    """The output tile m of F(m x m, 3x3) with the least ``cost``; None when that is not
    below ``WINOGRAD_MIN_GAIN`` times the direct convolution's ``9 * outputs * channels``.

    Measured (2 threads, ms; direct / F(2x2) / F(4x4) / torch; the machine is shared, these
    moved by 10-30% between runs): 64x56x56 1.10 / 0.70 / 0.57 / 1.25; 128x28x28 1.11 / 0.69 /
    0.55 / 1.07; 256x14x14 1.08 / 1.06 / 1.06 / 1.08; 8 images 256x14x14 10.0 / 5.8 / 5.0 /
    7.8; 512x7x7 1.30 / 3.5 / 7.4 / 1.24; 50 images 32x16x16 1.17 / 0.99 / 0.86 / 1.14;
    50 images 16->32 32x32 2.8 / 5.2 / 4.0 / 2.9; 50 images 64->32 13x13 padded by 2 (the
    tutorial's input gradient) 2.29 / 3.28 / 2.92 / 1.65. The model keeps the direct
    convolution where the gain is uncertain (50 images of 32x16x16).
    """
    def c(m):
        return cost(m, batch, channels, out_channels, out_height, out_width, lanes)
    m = min(TRANSFORMS, key=lambda m: (c(m), m))
    direct = 9 * batch * out_height * out_width * out_channels * channels
    return m if c(m) < WINOGRAD_MIN_GAIN * direct else None


def schedule_winograd(s, out):
    """Schedule the stages of ``conv2d_winograd`` in ``s`` (``out``: its output).

    pad, U, V: parallel over channels (V: over channels x tile rows, the E outputs of a block
    unrolled, tile columns as vector lanes). The products: parallel over (e, column panel of
    32 tiles); in a panel, 8 output channels at a time in registers (k outermost, the 8 rows
    unrolled, 2 vectors of tiles), as ``schedule_matmul`` does, so a panel of V (C x 32) stays
    in L1 for all the channel tiles. Y is computed per output channel plane, inside the
    parallel loop of the output, where the copy-out reads it from cache. Rows of tiles that
    the vectors do not divide end with a vector shifted back (``tail="shift"``), not scalars.
    """
    Y = _inverse_of(out)
    M = Y.op.input_tensors()[0]
    U, V = M.op.input_tensors()[0].op.input_tensors()
    schedule_pad(s, V.op.input_tensors()[0])
    schedule_kernel_transform(s, U)
    schedule_data_transform(s, V)
    schedule_product(s, M)
    schedule_inverse(s, out)
    return s


def _vector_width(extent, lanes):
    """The lanes of ``_vectorize`` for an axis of ``extent``: ``lanes`` halved until they fit
    (0: too short; vectors of fewer than 4 lanes would not pay)."""
    while lanes > extent:
        lanes //= 2
    return lanes if lanes >= 4 else 0


def _vectorize(s, t, axis, extent, lanes):
    """Split ``axis`` (``extent`` values) into whole vectors of ``_vector_width`` lanes, the
    last one shifted back; returns (outer loop, vector loop), (axis, None) when the axis is
    too short."""
    lanes = _vector_width(extent, lanes)
    if not lanes:
        return axis, None
    outer, inner = s[t].split(axis, factor=lanes, tail="shift")
    s[t].vectorize(inner)
    return outer, inner


def schedule_pad(s, pad):
    pn, pc, *_ = s[pad].op.axis
    s[pad].parallel(s[pad].fuse(pn, pc))
    _vectorize(s, pad, s[pad].op.axis[-1], pad.shape[-1].value, vector_lanes(pad.dtype))


def schedule_kernel_transform(s, U):
    kernel_t = U.op.input_tensors()[0]
    kf, _, _, kc = s[kernel_t].op.axis
    s[kernel_t].parallel(kf)
    _vectorize(s, kernel_t, kc, kernel_t.shape[-1].value, vector_lanes(U.dtype))
    ue, uf, uc = s[U].op.axis
    s[U].reorder(uf, ue, uc)
    uc_o, uc_i = _vectorize(s, U, uc, U.shape[-1].value, vector_lanes(U.dtype))
    s[U].reorder(uc_o, ue)
    s[U].parallel(uf)
    s[U].unroll(ue)
    s[U].storage_align(ue, *PLANE_ALIGN)


def schedule_data_transform(s, V):
    ve, vc, vr, vt = s[V].op.axis
    s[V].storage_align(vc, *ROW_ALIGN)
    s[V].reorder(vc, vr, ve, vt)
    vt_o, _ = _vectorize(s, V, vt, V.shape[-1].value, vector_lanes(V.dtype))
    s[V].reorder(vt_o, ve)
    s[V].parallel(s[V].fuse(vc, vr))
    s[V].unroll(ve)


def schedule_product(s, M):
    acc = M.op.input_tensors()[0]
    me, mf, mp = s[M].op.axis
    s[M].storage_align(me, *PLANE_ALIGN)
    GEMM_ROWS, GEMM_VECTORS = gemm_tile()
    mp_o, mp_i = s[M].split(mp, factor=GEMM_VECTORS * vector_lanes(M.dtype))
    mf_o, mf_i = s[M].split(mf, factor=GEMM_ROWS)
    s[M].reorder(me, mp_o, mf_o, mf_i, mp_i)
    s[M].parallel(s[M].fuse(me, mp_o))
    s[M].vectorize(mp_i)
    s[acc].compute_at(s[M], mf_o)
    _, af, ap = s[acc].op.axis
    (k,) = s[acc].op.reduce_axis
    s[acc].reorder(k, af, ap)
    s[acc].unroll(af)
    s[acc].vectorize(ap)


def _inverse_of(out):
    """The inverse-transform stage Y feeding ``out``, or None."""
    return next((t for t in out.op.input_tensors()
                 if getattr(t.op, "tag", "") == "winograd_inverse"), None)


def is_winograd(out):
    """Whether ``out`` is the output of ``conv2d_winograd``."""
    return _inverse_of(out) is not None


def schedule_inverse(s, out):
    Y = _inverse_of(out)
    lanes = vector_lanes(out.dtype)
    n, f, y, x = s[out].op.axis
    plane = s[out].fuse(n, f)
    s[out].parallel(plane)
    _vectorize(s, out, x, out.shape[-1].value, lanes)
    s[Y].compute_at(s[out], plane)
    *_, yy, yj, yt = s[Y].op.axis
    y_o, y_i = s[Y].split(yy, factor=Y.op.attrs["tile"])
    s[Y].reorder(y_o, yt, y_i, yj)
    yt_o, yt_i = _vectorize(s, Y, yt, Y.shape[-1].value, lanes)
    s[Y].reorder(y_o, yt_o, y_i, yj, *([yt_i] if yt_i is not None else []))
    s[Y].unroll(y_i)
    s[Y].unroll(yj)
