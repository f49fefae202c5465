"""2-d convolution in NCHW layout for the CPU: ``conv2d_nchw`` and ``schedule_conv2d_nchw``.

3x3 stride-1 convolutions with enough channels and tiles use Winograd's algorithm
(``cpu_winograd``; ``algorithm=`` chooses explicitly); the others, the direct convolution:

The declaration builds three stages:

    pad[n, c, h, p, q] = data with zeros around it, at column q * sw + p (and more zero
                         columns on the right, so that padded output columns read inside);
                         a select between zero and a load at clamped indices, so that its
                         rows are vector loads and stores (a branch on the lanes' condition
                         left this stage scalar)
    acc[n, f, y, x]    = sum_{rc, ry, rx} pad[n, g * cg + rc, y*sh + ry*dh, rx*dw % sw,
                                              x + rx*dw // sw] * kernel[f, rc, ry, rx]
                         (g: the group of output channel f, cg: input channels per group)
    out[n, f, y, x]    = acc[n, f, y, x] (+ bias[f])                     cropped

Splitting the padded columns into ``sw`` phases makes the columns that a row of outputs reads
contiguous for every stride (a stride-2 convolution read them with gathers: 3.7x slower).
``acc`` is padded to whole tiles of output channels and output columns (padded channels read
the last channel's weights; their results are never copied out), so its loops need no bounds
checks and stay vectorized for every size.

Dense convolutions (``groups == 1``, at least ``PACKED_MIN_CHANNELS`` input channels, default
tile) use a second layout that wastes no columns, with the output channels as vector lanes:

    kernel'[b, c, ry, rx, l] = kernel[b * 16 + l, c, ry, rx]           (l: 16 float32 lanes)
    acc[n, b, y, x, l]       = sum_{c, ry, rx} pad[...x + rx...] * kernel'[b, c, ry, rx, l]
    out[n, f, y, x]          = acc[n, f // 16, y, x, f % 16]

The columns are a register-blocked loop (7 columns x 2 channel vectors), so 56-wide rows are
no longer padded to 64 (12.5% of the multiply-adds were wasted).

Declared for the GPU (under ``Target("cuda")``), a dense convolution is an implicit GEMM for
``nn.ops.gpu.schedule_matmul`` (``_conv2d_implicit_gemm``).
"""
from __future__ import annotations

import te

from te.target import Target

from . import cpu_winograd, host
from .cpu_util import conv_output, const_shape, pad_to, padded_load, vector_lanes, zero_outside

# below this many input channels the packed convolution's short reduction does not pay for
# its copy-out: 3 -> 64 channels at 224x224 ran 1.9x slower than the column-tiled one
PACKED_MIN_CHANNELS = 16
COLUMN_COST = {64: 1.0, 32: 1.05, 16: 1.15, 8: 1.4}    # relative cost per output column


def _pair(v, what):
    if isinstance(v, int):
        return v, v
    if len(v) != 2:
        raise ValueError(f"conv2d_nchw: {what} must be an int or a pair, got {v!r}")
    return int(v[0]), int(v[1])


def _padding(p):
    """(top, left, bottom, right) from an int, a pair (h, w) or four sizes."""
    if isinstance(p, int):
        return p, p, p, p
    if len(p) == 2:
        return p[0], p[1], p[0], p[1]
    if len(p) == 4:
        return tuple(int(v) for v in p)
    raise ValueError(f"conv2d_nchw: padding must be an int, (h, w) or (top, left, bottom, "
                     f"right), got {p!r}")


def default_tile(out_channels, out_height, out_width, group_channels, accumulators=None,
                 lanes=None):
    """(channels, rows, columns) of the register tile: about ``accumulators`` vector
    accumulators (``nn.ops.host.knobs("conv2d")``: 16 with AVX-512's 32 registers).

    Columns are a power of two (LLVM splits odd vector widths badly: a 56-wide tile ran 6x
    slower than a 64-wide one), at most 64: the least padded width, weighted by
    ``COLUMN_COST`` (narrow tiles do less work per load). Narrow tiles take several rows.
    """
    acc = accumulators or host.knobs("conv2d")["accumulators"]
    lanes = lanes or max(1, host.vector_bits() // 32)
    cols = min(COLUMN_COST, key=lambda c: (pad_to(out_width, c) * COLUMN_COST[c], -c))
    vectors = max(1, cols // lanes)
    if group_channels == 1:
        fo = 2              # depthwise: channels share no input, more of them do not help
    else:               # measured: half-vector tiles run best as 4 channels x 4 rows
        fo = 4 if cols < lanes else max(1, min(8, acc // vectors))
    fo = min(fo, out_channels)
    rows = max(1, acc // (fo * vectors))
    rows = min(rows, out_height)
    while rows > 1 and pad_to(out_height, rows) > out_height * 1.15:
        rows -= 1
    return fo, rows, cols


def conv2d_nchw(data, kernel, stride=1, padding=0, dilation=1, groups=1, tile=None,
                name="conv2d", bias=None, algorithm=None):
    """Convolution of data (N, C, H, W) with kernel (F, C // groups, KH, KW): (N, F, OH, OW).

    ``groups == C == F`` is a depthwise convolution. ``bias`` (F,), when given, is added
    while the result is copied out. ``algorithm``: ``"direct"`` (the register-tiled loops of
    this module), ``"winograd"`` (``cpu_winograd``: 3x3 kernels, stride 1, no dilation, no
    groups) or None: Winograd where it applies (``cpu_winograd.applies``), no ``tile`` is
    given and the current target (``te.target.Target.current()``) is the CPU or unset, else
    direct. ``tile`` is, for the direct algorithm, (output channels, output
    rows, output columns) of the register tile (default: ``default_tile``); for Winograd,
    the output tile m of F(m x m, 3x3), 2 or 4 (default: ``cpu_winograd.default_tile``).
    """
    N, C, H, W = const_shape(data, name)
    F, CG, KH, KW = const_shape(kernel, name)
    sh, sw = _pair(stride, "stride")
    dh, dw = _pair(dilation, "dilation")
    pt, pl, pb, pr = _padding(padding)
    if groups < 1 or C % groups or F % groups or CG != C // groups:
        raise ValueError(f"{name}: data has {C} channels and kernel {tuple(kernel.shape)}; with "
                         f"groups={groups} the kernel must be ({F}, {C // max(groups, 1)}, KH, "
                         "KW) and both channel counts divisible by groups")
    OH = (H + pt + pb - dh * (KH - 1) - 1) // sh + 1
    OW = (W + pl + pr - dw * (KW - 1) - 1) // sw + 1
    if OH < 1 or OW < 1:
        raise ValueError(f"{name}: the output would be empty ({OH} x {OW})")
    FG = F // groups
    if algorithm not in (None, "direct", "winograd"):
        raise ValueError(f"{name}: algorithm must be 'direct', 'winograd' or None (choose), "
                         f"got {algorithm!r}")
    winograd = cpu_winograd.applies((KH, KW), (sh, sw), (dh, dw), groups, C, F)
    target = Target.current()
    on_cpu = target is None or target.kind.name == "llvm"
    if algorithm == "winograd" and not winograd:
        raise ValueError(f"{name}: algorithm='winograd' needs a 3x3 kernel, stride 1, "
                         f"dilation 1, groups 1 and at least {cpu_winograd.MIN_CHANNELS} "
                         f"input and output channels; got kernel {KH}x{KW}, stride "
                         f"{(sh, sw)}, dilation {(dh, dw)}, groups {groups}, {C} -> {F} "
                         "channels (use algorithm='direct')")
    if algorithm is None and tile is None and winograd and on_cpu:
        tile = cpu_winograd.default_tile(N, C, F, OH, OW, vector_lanes(data.dtype))
        algorithm = "winograd" if tile else None
    if algorithm == "winograd":
        return cpu_winograd.conv2d_winograd(data, kernel, (pt, pl, pb, pr), name, bias, tile)
    if tile is None and groups == 1 and not on_cpu:
        return _conv2d_implicit_gemm(data, kernel, (N, C, H, W, F, KH, KW, OH, OW), (sh, sw),
                                     (dh, dw), (pt, pl, pb, pr), name, bias)
    if tile is None and groups == 1 and C >= PACKED_MIN_CHANNELS:
        return _conv2d_packed(data, kernel, (N, C, H, W, F, KH, KW, OH, OW), (sh, sw),
                              (dh, dw), (pt, pl, pb, pr), name, bias)
    fo, ty, cols = tile or default_tile(F, OH, OW, CG)
    Fp, OHp, OWp = pad_to(F, fo), pad_to(OH, ty), pad_to(OW, cols)
    # zeros past the bottom and right edges: padded outputs must read inside the buffer
    Hp = max(H + pt + pb, (OHp - 1) * sh + (KH - 1) * dh + 1)
    Wq = -(-max(W + pl + pr, (OWp - 1) * sw + (KW - 1) * dw + 1) // sw)

    def fpad(n, c, h, p, q):
        w = q * sw + p
        return padded_load(data, n, c, h, w, (H, W), (pt, pl))
    pad = te.compute((N, C, Hp, sw, Wq), fpad, name=f"{name}.pad", tag="pad")
    rc = te.reduce_axis((0, CG), name="rc")
    ry = te.reduce_axis((0, KH), name="ry")
    rx = te.reduce_axis((0, KW), name="rx")

    def facc(n, f, y, x):
        fc = te.min(f, F - 1) if Fp != F else f
        c = rc if groups == 1 else fc // FG * CG + rc
        col = rx * dw
        row = pad[n, c, y * sh + ry * dh, col % sw, x + col // sw]
        return te.sum(row * kernel[fc, rc, ry, rx], axis=[rc, ry, rx])
    acc = te.compute((N, Fp, OHp, OWp), facc, name=f"{name}.acc", tag="conv2d_acc",
                     attrs={"tile": (fo, ty, cols), "private_input": CG == 1 and FG <= fo})
    return conv_output(acc, (N, F, OH, OW), lambda n, f, y, x: acc[n, f, y, x], bias, name)


def patch_value(data, sizes, stride, dilation, padding, k, p):
    """The input value that tap ``k = (c, ry, rx)`` of the kernel meets at output position
    ``p = (n, y, x)`` (both flattened): ``data[n, c, y*sh + ry*dh - top, x*sw + rx*dw -
    left]``, zero in the padding and past the last image or channel (im2col, gathered)."""
    N, C, H, W, _, KH, KW, OH, OW = sizes
    (sh, sw), (dh, dw), (pt, pl, _, _) = stride, dilation, padding
    t, q = k % (KH * KW), p % (OH * OW)
    h = q // OW * sh + t // KW * dh
    w = q % OW * sw + t % KW * dw
    return zero_outside(data, (p // (OH * OW), k // (KH * KW), h, w),
                        ((0, N), (0, C), (pt, H + pt), (pl, W + pl)))


def _conv2d_implicit_gemm(data, kernel, sizes, stride, dilation, padding, name, bias):
    """The convolution as one matrix product over all images, for
    ``nn.ops.gpu.schedule_matmul`` (an implicit GEMM):

        wk[f, k]   = kernel[f, c, ry, rx]                      k = (c, ry, rx) flattened
        xk[k, p]   = data[n, c, y*sh + ry*dh - top, x*sw + rx*dw - left]   p = (n, y, x)
        acc[f, p]  = sum_k wk[f, k] * xk[k, p]
        out[n, f, y, x] = acc[f, (n * OH + y) * OW + x] (+ bias[f])

    ``wk`` and ``xk`` are zero-padded to whole tiles (``gpu.matmul_config``) and become the
    shared-memory tiles: the input's patches (im2col) are gathered while the tiles fill and
    never stored."""
    from .gpu import matmul_block, matmul_config
    N, C, H, W, F, KH, KW, OH, OW = sizes
    taps, K, P = KH * KW, C * KH * KW, N * OH * OW
    cfg = matmul_config(F, P, K, cap_registers=False)      # the gathers need the registers
    rows, cols = matmul_block(cfg)
    Fp, Pp, Kp = pad_to(F, rows), pad_to(P, cols), pad_to(K, cfg["step"])

    def fw(f, k):
        t = k % taps
        return zero_outside(kernel, (f, k // taps, t // KW, t % KW), ((0, F), (0, C), None, None))
    wk = te.compute((Fp, Kp), fw, name=f"{name}.weight_tiles", tag="gpu_matmul_pad")

    xk = te.compute((Kp, Pp), lambda k, p: patch_value(data, sizes, stride, dilation, padding,
                                                       k, p),
                    name=f"{name}.patch_tiles", tag="gpu_matmul_pad")
    k = te.reduce_axis((0, Kp), name="k")
    acc = te.compute((Fp, Pp), lambda f, p: te.sum(wk[f, k] * xk[k, p], axis=k),
                     name=f"{name}.acc", tag="gpu_matmul_acc", attrs={"config": cfg})
    return conv_output(acc, (N, F, OH, OW),
                       lambda n, f, y, x: acc[f, (n * OH + y) * OW + x], bias, name)


def packed_tile(out_channels, out_width, lanes=16, accumulators=None):
    """(channel vectors, columns) of the register tile of the packed convolution.

    Two vectors of 16 output channels x 7 columns: 14 accumulators (the host's
    ``knobs("conv2d_packed")``); each step loads two vectors of weights and broadcasts 7
    inputs (which LLVM reuses across the kernel columns). Measured, one thread, 64x56x56:
    2 x 7 2.22-2.29 ms, 2 x 8 2.31-2.38, 4 x 4 2.24-2.27, 1 x 14 2.27-2.51; 2 x 14 and 4 x 7
    (28 accumulators) spill and run 2-3x slower.
    """
    acc = accumulators or host.knobs("conv2d_packed")["accumulators"]
    pref = max(2, acc // 2)
    vf = 1 if out_channels <= lanes else 2
    if out_width <= pref + 1:
        return vf, out_width
    cands = (pref, pref + 1) + tuple(range(pref - 1, max(1, pref // 2), -1))
    return vf, min(cands, key=lambda c: (pad_to(out_width, c), c != pref, -c))


def _conv2d_packed(data, kernel, sizes, stride, dilation, padding, name, bias):
    """Dense convolution with the output channels as vector lanes (see the module docstring)."""
    N, C, H, W, F, KH, KW, OH, OW = sizes
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = stride, dilation, padding
    lanes = vector_lanes(data.dtype)
    vf, cols = packed_tile(F, OW, lanes)
    Fp, OWp = pad_to(F, vf * lanes), pad_to(OW, cols)
    Hp = max(H + pt + pb, (OH - 1) * sh + (KH - 1) * dh + 1)
    Wq = -(-max(W + pl + pr, (OWp - 1) * sw + (KW - 1) * dw + 1) // sw)

    def fpad(n, c, h, p, q):
        w = q * sw + p
        return padded_load(data, n, c, h, w, (H, W), (pt, pl))
    pad = te.compute((N, C, Hp, sw, Wq), fpad, name=f"{name}.pad", tag="pad")

    def fpack(b, c, ry, rx, lane):
        f = b * lanes + lane
        return kernel[te.min(f, F - 1) if Fp != F else f, c, ry, rx]
    packed = te.compute((Fp // lanes, C, KH, KW, lanes), fpack, name=f"{name}.kernel",
                        tag="conv2d_kernel")
    rc = te.reduce_axis((0, C), name="rc")
    ry = te.reduce_axis((0, KH), name="ry")
    rx = te.reduce_axis((0, KW), name="rx")

    def facc(n, b, y, x, lane):
        col = rx * dw
        row = pad[n, rc, y * sh + ry * dh, col % sw, x + col // sw]
        return te.sum(row * packed[b, rc, ry, rx, lane], axis=[rc, ry, rx])
    acc = te.compute((N, Fp // lanes, OH, OWp, lanes), facc, name=f"{name}.acc",
                     tag="conv2d_acc", attrs={"packed": (vf, cols, lanes)})
    return conv_output(acc, (N, F, OH, OW),
                     lambda n, f, y, x: acc[n, f // lanes, y, x, f % lanes], bias, name)


def _schedule_packed(s, out, acc, pad, packed):
    vf, cols, lanes = acc.op.attrs["packed"]
    n, f, y, x = s[out].op.axis
    f_o, f_i = s[out].split(f, factor=vf * lanes)
    s[out].reorder(n, f_o, y, f_i, x)
    outer = s[out].fuse(n, f_o, y)
    s[out].parallel(outer)
    _, x_i = s[out].split(x, factor=8)
    s[out].vectorize(x_i)
    s[acc].compute_at(s[out], outer)
    _, ab, _, ax, lane = s[acc].op.axis
    ax_o, ax_i = s[acc].split(ax, factor=cols)
    rc, ry, rx = s[acc].op.reduce_axis
    s[acc].reorder(ax_o, rc, ry, rx, ab, ax_i, lane)
    s[acc].unroll(ab)
    s[acc].unroll(ax_i)
    s[acc].vectorize(lane)
    pb, pc, *_ = s[packed].op.axis
    s[packed].parallel(s[packed].fuse(pb, pc))
    s[packed].vectorize(s[packed].op.axis[-1])
    pn, pc, *_ = s[pad].op.axis
    s[pad].parallel(s[pad].fuse(pn, pc))
    _, pad_lanes = s[pad].split(s[pad].op.axis[-1], factor=16)
    s[pad].vectorize(pad_lanes)
    return s


def schedule_conv2d_nchw(out):
    """Schedule for the output of ``conv2d_nchw``.

    The output is cut into tiles of ``fo`` channels x ``ty`` rows x ``cols`` columns (4 x 1 x
    64 for 56-wide rows, 8 x 2 x 16 for 14-wide, 4 x 4 x 8 for 7-wide: about 16 vector
    accumulators); the loops over (image, channel tile, row tile) are fused into one parallel
    loop. In each tile ``acc`` is computed in registers: the reduction (input channel, kernel
    row, kernel column) outermost, then channels and rows unrolled, then the columns as vector
    lanes, so each step is one broadcast weight per channel and fused multiply-adds against
    rows of the padded input (contiguous for every stride). ``pad`` is computed once, parallel
    over channels; for depthwise convolutions it is computed per channel tile instead, inside
    the parallel loop, so that the padded channels are used while they are in cache.

    Dense convolutions built with the packed layout are cut into tiles of 32 output channels x
    one row (the parallel loop); ``acc`` for the tile is computed 7 columns at a time, the
    reduction outermost, then the two channel vectors and the 7 columns unrolled (14
    accumulators in zmm registers; each step: two weight vectors, 7 broadcasts, 14 FMAs),
    then copied out with the lanes transposed back to NCHW. Measured (benchmarks/cpu.py,
    medians, 1 / 2 threads): 1x64x56x56 k64 3x3 p1 2.29 / 1.17 ms, torch 2.23 / 1.17 ms
    (0.97x / 1.01x; the column-tiled layout: 0.88-0.90x / 0.89x). Other shapes vs torch
    (1 / 2 threads): 128x28x28 0.98 / 0.99, 256x14x14 0.93 / 0.97, stride 2 0.96 / 1.06.

    Column-tiled layout, measured (2-core znver4, idle, medians; PyTorch 2.13 uses oneDNN):
    1x64x56x56, 64 3x3 filters, pad 1: 94 / 171 GFLOP/s on 1 / 2 threads (torch 107 / 190,
    numpy im2col + BLAS 75 / 107); counting the 8 padded columns of each row (56 -> 64), the
    FMA units run at 107 GFLOP/s on one thread. One thread, vs torch:
    128x28x28 0.93-0.96x, 256x14x14 0.94x, 512x7x7 1.4x, stride 2 (64->128, 56x56) 0.90x,
    depthwise 32x112x112 0.78-0.88x, depthwise stride 2 0.90x.
    """
    if getattr(out.op, "tag", "") != "conv2d":
        raise ValueError(f"schedule_conv2d_nchw: {out.name} is not the output of conv2d_nchw")
    s = te.create_schedule(out.op)
    if cpu_winograd.is_winograd(out):
        return cpu_winograd.schedule_winograd(s, out)
    acc = next(t for t in out.op.input_tensors() if getattr(t.op, "tag", "") == "conv2d_acc")
    pad = acc.op.input_tensors()[0]
    if "packed" in acc.op.attrs:
        return _schedule_packed(s, out, acc, pad, acc.op.input_tensors()[1])
    fo, ty, cols = acc.op.attrs["tile"]
    n, f, y, x = s[out].op.axis
    f_o, f_i = s[out].split(f, factor=fo)
    y_o, y_i = s[out].split(y, factor=ty)
    x_o, x_i = s[out].split(x, factor=cols)
    s[out].reorder(n, f_o, y_o, x_o, f_i, y_i, x_i)
    if acc.op.attrs["private_input"]:
        # each channel tile reads its own input channels: pad them inside the parallel loop,
        # where they stay in cache, instead of padding the whole input first
        outer = s[out].fuse(n, f_o)
        s[pad].compute_at(s[out], outer)
    else:
        outer = s[out].fuse(n, f_o, y_o)
        pn, pc, *_ = s[pad].op.axis
        s[pad].parallel(s[pad].fuse(pn, pc))
    s[out].parallel(outer)
    s[out].vectorize(x_i)
    s[acc].compute_at(s[out], x_o)
    _, af, ay, ax = s[acc].op.axis
    rc, ry, rx = s[acc].op.reduce_axis
    s[acc].reorder(rc, ry, rx, af, ay, ax)
    s[acc].unroll(af)
    s[acc].unroll(ay)
    s[acc].vectorize(ax)
    _, pad_lanes = s[pad].split(s[pad].op.axis[-1], factor=16)
    s[pad].vectorize(pad_lanes)
    return s
