"""Convolution's backward kernels and padding, te declarations with their CPU schedules.

    conv2d            conv2d_nchw (nn/ops/cpu_conv.py) with a bias, its tuned schedule
    conv2d_grad_input the gradient for the input: a convolution of the gradient (zeros
                      between its elements for strided convolutions, cropped where the
                      forward padding exceeded the kernel) with the kernel flipped and its
                      channel axes swapped per group; conv2d_nchw's schedule
    conv2d_grad_input_phase, interleave_phases
                      the same for a strided, undilated convolution without the zeros: one
                      convolution per stride phase of the input, with every stride-th tap of
                      the kernel, then the phases interleaved (3.7 ms -> 1.7 ms for 64 -> 128
                      channels, 56x56, stride 2, one thread; torch 1.7 ms)
    conv2d_grad_weight the gradient for the kernel: per tap, a sum over images and output
                      positions of gradient x shifted input, laid out so that both operands
                      are contiguous along the reduction (see ``conv2d_grad_weight``)
    pad_nd            padding of the trailing axes: constant (negative sizes crop), reflect,
                      replicate, circular; elementwise, the injective schedule
    pad_fold          the adjoint of a reflect / replicate / circular padding along one axis:
                      every padded position's gradient added back into its source
"""
from __future__ import annotations

import te

from .cpu import schedule_injective
from te.target import Target

from .cpu_conv import conv2d_nchw, patch_value, schedule_conv2d_nchw
from .cpu_util import const_shape, pad_to, padded_load, vector_lanes, zero_outside
from te.topi.nn.pad import pad_nd  # noqa: F401  (the declaration lives in te.topi)

__all__ = ["conv2d", "schedule_conv2d", "conv2d_grad_input", "schedule_conv2d_grad_input",
           "grad_input_phase", "conv2d_grad_input_phase", "interleave_phases", "zeros",
           "conv2d_grad_weight", "schedule_conv2d_grad_weight", "pad_nd", "pad_fold",
           "transposed_padding"]

ACCUMULATORS = 24   # vector accumulators of conv2d_grad_weight's register tile (of 32 zmm)


def conv2d(data, kernel, bias=None, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1),
           groups=1):
    """``conv2d_nchw`` (+ bias), under a name of its own for the kernel counter."""
    return conv2d_nchw(data, kernel, stride=stride, padding=padding, dilation=dilation,
                       groups=groups, bias=bias)


def schedule_conv2d(out):
    """``schedule_conv2d_nchw``, with the stages feeding the convolution (a flipped kernel,
    a gradient with zeros between its elements) computed once or inlined."""
    s = schedule_conv2d_nchw(out)
    for stage in s.stages:
        if getattr(stage.op, "tag", "") == "dilate":
            stage.compute_inline()
    return s


def transposed_padding(in_size, out_size, kernel, stride, padding, dilation):
    """(top, left, bottom, right) padding of the gradient's convolution that gives back an
    ``in_size`` input from an ``out_size`` output of the forward convolution."""
    (H, W), (OH, OW), (KH, KW) = in_size, out_size, kernel
    (sh, sw), (dh, dw), (pt, pl, _, _) = stride, dilation, padding
    return (dh * (KH - 1) - pt, dw * (KW - 1) - pl,
            H - (OH - 1) * sh - 1 + pt, W - (OW - 1) * sw - 1 + pl)


def conv2d_grad_input(grad, kernel, in_size=(1, 1), stride=(1, 1), padding=(0, 0, 0, 0),
                      dilation=(1, 1), groups=1):
    """d conv2d / d data for the output gradient (N, F, OH, OW): (N, C, H, W)."""
    N, F, OH, OW = const_shape(grad, "conv2d_grad_input")
    _, CG, KH, KW = const_shape(kernel, "conv2d_grad_input")
    FG = F // groups
    (sh, sw), (H, W) = stride, in_size
    flipped = te.compute(
        (CG * groups, FG, KH, KW),
        lambda c, j, ky, kx: kernel[c // CG * FG + j, c % CG, KH - 1 - ky, KW - 1 - kx],
        name="conv2d_grad_input.kernel", tag="flip")
    top, left, bottom, right = transposed_padding(in_size, (OH, OW), (KH, KW), stride,
                                                  padding, dilation)
    data = grad
    if sh > 1 or sw > 1 or min(top, left, bottom, right) < 0:
        # zeros between the gradient's elements; a negative padding crops instead
        ct, cl = max(-top, 0), max(-left, 0)
        Hd = (OH - 1) * sh + 1 - ct - max(-bottom, 0)
        Wd = (OW - 1) * sw + 1 - cl - max(-right, 0)
        if Hd < 1 or Wd < 1:        # every output read only padding: no gradient reaches data
            return te.compute((N, CG * groups, H, W), lambda *i: te.const(0, grad.dtype),
                              name="conv2d_grad_input", tag="zeros")

        def fdilate(n, f, i, j):
            y, x = i + ct, j + cl
            hit = te.all((y % sh).equal(0), (x % sw).equal(0))
            return te.if_then_else(hit, grad[n, f, y // sh, x // sw], te.const(0, grad.dtype))
        data = te.compute((N, F, Hd, Wd), fdilate, name="conv2d_grad_input.dilated",
                          tag="dilate")
        top, left, bottom, right = (max(p, 0) for p in (top, left, bottom, right))
    return conv2d_nchw(data, flipped, stride=1, padding=(top, left, bottom, right),
                       dilation=dilation, groups=groups, name="conv2d_grad_input")


def schedule_conv2d_grad_input(out):
    """The convolution's schedule; an all-zero gradient is one parallel, vectorized loop."""
    if getattr(out.op, "tag", "") == "zeros":
        return schedule_injective(out)
    return schedule_conv2d(out)


def grad_input_phase(size, out_size, kernel, stride, pad, phase):
    """How the input positions ``phase``, ``phase + stride``, ... along one axis get their
    gradient (no dilation): (first tap, number of taps, padding before and after of the
    gradient, number of positions). Position phase + stride * i meets the output gradient
    at i + q - j through tap first + stride * j, for every j: a convolution with stride 1
    and a sub-kernel of every stride-th tap, instead of one over a gradient with stride - 1
    zeros between its elements."""
    count = (size - phase + stride - 1) // stride
    first = (phase + pad) % stride
    taps = (kernel - first + stride - 1) // stride if first < kernel else 0
    q = (phase + pad - first) // stride
    before = taps - 1 - q
    return first, taps, before, count - out_size - before + taps - 1, count


def conv2d_grad_input_phase(grad, kernel, stride=(1, 1), taps=((0, 1), (0, 1)),
                            padding=(0, 0, 0, 0), groups=1):
    """The input gradient at one stride phase (``grad_input_phase``): a convolution of the
    output gradient, cropped where a padding is negative, with the taps ``first + stride *
    j`` (j < count; ``taps`` per axis) of the kernel, flipped, channel axes swapped."""
    N, F, OH, OW = const_shape(grad, "conv2d_grad_input_phase")
    _, CG, _, _ = const_shape(kernel, "conv2d_grad_input_phase")
    FG = F // groups
    (sh, sw), ((fh, th), (fw, tw)) = stride, taps
    sub = te.compute(
        (CG * groups, FG, th, tw),
        lambda c, j, a, b: kernel[c // CG * FG + j, c % CG, fh + sh * (th - 1 - a),
                                  fw + sw * (tw - 1 - b)],
        name="conv2d_grad_input_phase.kernel", tag="flip")
    top, left, bottom, right = padding
    ct, cl, cb, cr = (max(-p, 0) for p in padding)
    data = grad
    if ct or cl or cb or cr:
        data = te.compute((N, F, OH - ct - cb, OW - cl - cr),
                          lambda n, f, i, j: grad[n, f, i + ct, j + cl],
                          name="conv2d_grad_input_phase.crop", tag="dilate")
    return conv2d_nchw(data, sub, padding=tuple(max(p, 0) for p in padding), groups=groups,
                       name="conv2d_grad_input_phase")


def zeros(like, shape=(1,)):
    """Zeros of ``like``'s dtype in ``shape``."""
    return te.compute(shape, lambda *i: te.const(0, like.dtype), name="zeros", tag="elemwise")


def interleave_phases(*phases, shape=(1, 1, 1, 1), stride=(1, 1), present=()):
    """(N, C, H, W) from the stride phases of its last two axes: element (h, w) is element
    (h // sh, w // sw) of the phase (h % sh, w % sw); ``present`` names the phase of each
    input, the phases not present are zero."""
    sh, sw = stride

    def body(n, c, h, w):
        value = te.const(0, phases[0].dtype)
        for t, (ph, pw) in zip(phases, present):
            hi, wi = t.shape[2].value, t.shape[3].value
            hit = te.all((h % sh).equal(ph), (w % sw).equal(pw))
            at = t[n, c, te.min(h // sh, hi - 1), te.min(w // sw, wi - 1)]
            value = te.select(hit, at, value)
        return value
    return te.compute(shape, body, name="interleave_phases", tag="elemwise")


def grad_weight_tile(out_channels, group_channels, kernel_width):
    """(output channels, input channels) of conv2d_grad_weight's register tile: with all
    ``kernel_width`` taps of a row, about ``ACCUMULATORS`` vector accumulators."""
    fo = max(1, min(4, ACCUMULATORS // kernel_width, out_channels))
    co = max(1, min(ACCUMULATORS // (fo * kernel_width), group_channels))
    return fo, co


def conv2d_grad_weight(data, grad, kernel_size=(1, 1), stride=(1, 1), padding=(0, 0, 0, 0),
                       dilation=(1, 1), groups=1):
    """d conv2d / d kernel for data (N, C, H, W) and output gradient (N, F, OH, OW).

    Three stages:

        xs[n, c, ph, pw, t]  the padded input split into stride phases (rows h = hq*sh + ph,
                             columns w = wq*sw + pw), each phase plane flattened: t = hq*Wq+wq
        gs[n, f, r]          the gradient with rows Wq wide (zeros past OW), flattened
        acc[f, c, ky, kx, l] = sum_{n, ro} gs[n, f, ro*L + l] * xs[n, c', phase(ky, kx),
                                                ro*L + l + offset(ky, kx)]
        out[f, c, ky, kx]    = sum_l acc[f, c, ky, kx, l]

    In the phase planes the input that tap (ky, kx) meets at output r = y*Wq + x sits at
    r + offset(ky, kx), so both operands are read as contiguous vectors of L lanes for every
    stride and dilation, and the L partial sums are added once at the end.
    """
    N, C, H, W = const_shape(data, "conv2d_grad_weight")
    _, F, OH, OW = const_shape(grad, "conv2d_grad_weight")
    KH, KW = kernel_size
    target = Target.current()
    if groups == 1 and target is not None and target.kind.name == "cuda":
        return _grad_weight_implicit_gemm(data, grad, (N, C, H, W, F, KH, KW, OH, OW), stride,
                                          dilation, padding)
    (sh, sw), (dh, dw), (pt, pl, _, _) = stride, dilation, padding
    CG, FG = C // groups, F // groups
    lanes = vector_lanes(data.dtype)
    Wq = OW + (KW - 1) * dw // sw
    R = pad_to(OH * Wq, lanes)
    T = R + (KH - 1) * dh // sh * Wq + (KW - 1) * dw // sw
    zero = te.const(0, data.dtype)

    def fxs(n, c, ph, pw, t):
        return padded_load(data, n, c, t // Wq * sh + ph, t % Wq * sw + pw, (H, W), (pt, pl))
    xs = te.compute((N, C, sh, sw, T), fxs, name="conv2d_grad_weight.data", tag="layout",
                    attrs={"row": Wq})

    def fgs(n, f, r):
        y, x = r // Wq, r % Wq
        inside = te.all(y < OH, x < OW)
        return te.select(inside, grad[n, f, te.min(y, OH - 1), te.min(x, OW - 1)], zero)
    gs = te.compute((N, F, R), fgs, name="conv2d_grad_weight.grad", tag="layout")
    fo, co = grad_weight_tile(F, CG, KW)
    Fp, CGp = pad_to(F, fo), pad_to(CG, co)
    n = te.reduce_axis((0, N), name="n")
    ro = te.reduce_axis((0, R // lanes), name="ro")

    def facc(f, c, ky, kx, lane):
        f = te.min(f, F - 1) if Fp != F else f
        c = te.min(c, CG - 1) if CGp != CG else c
        channel = c if groups == 1 else f // FG * CG + c
        r = ro * lanes + lane
        at = r + ky * dh // sh * Wq + kx * dw // sw
        return te.sum(gs[n, f, r] * xs[n, channel, ky * dh % sh, kx * dw % sw, at],
                      axis=[n, ro])
    acc = te.compute((Fp, CGp, KH, KW, lanes), facc, name="conv2d_grad_weight.acc",
                     tag="conv2d_grad_weight_acc", attrs={"tile": (fo, co)})
    lane = te.reduce_axis((0, lanes), name="lane")
    return te.compute((F, CG, KH, KW),
                      lambda f, c, ky, kx: te.sum(acc[f, c, ky, kx, lane], axis=lane),
                      name="conv2d_grad_weight", tag="conv2d_grad_weight")


def _grad_weight_implicit_gemm(data, grad, sizes, stride, dilation, padding):
    """The kernel gradient declared for the GPU: products over the output positions for
    ``nn.ops.gpu.schedule_matmul`` (as the forward convolution, ``cpu_conv``), the positions
    split into S parts (split-K: the F x C*KH*KW outputs are few and the reduction long, so
    the parts are a batch of products that fill the GPU; their sum is a last, short
    reduction):

        gk[s, f, l]  = grad[n, f, y, x]                  p = s * L + l = (n, y, x) flattened
        xk[s, l, k]  = the input that tap k = (c, ry, rx) meets at p  (``patch_value``)
        acc[s, f, k] = sum_l gk[s, f, l] * xk[s, l, k]
        out[f, c, ry, rx] = sum_s acc[s, f, (c * KH + ry) * KW + rx]

    both operands zero-padded to whole tiles, which are the shared-memory tiles."""
    from .gpu import matmul_block, matmul_config, split_k_parts
    N, C, _, _, F, KH, KW, OH, OW = sizes
    K, P, Q = C * KH * KW, N * OH * OW, OH * OW
    cfg = matmul_config(F, K, P, cap_registers=False)      # the gathers need the registers
    rows, cols = matmul_block(cfg)
    Fp, Kp, step = pad_to(F, rows), pad_to(K, cols), cfg["step"]
    parts = split_k_parts(Fp // rows * (Kp // cols), P, step)
    L = pad_to(-(-P // parts), step)

    def fg(s, f, l):
        p = s * L + l
        q = p % Q
        return zero_outside(grad, (p // Q, f, q // OW, q % OW), ((0, N), (0, F), None, None))
    gk = te.compute((parts, Fp, L), fg, name="conv2d_grad_weight.grad_tiles",
                    tag="gpu_matmul_pad")
    xk = te.compute((parts, L, Kp), lambda s, l, k: patch_value(
        data, sizes, stride, dilation, padding, k, s * L + l),
        name="conv2d_grad_weight.patch_tiles", tag="gpu_matmul_pad")
    r = te.reduce_axis((0, L), name="l")
    acc = te.compute((parts, Fp, Kp), lambda s, f, k: te.sum(gk[s, f, r] * xk[s, r, k], axis=r),
                     name="conv2d_grad_weight.acc", tag="gpu_matmul_acc",
                     attrs={"config": cfg})
    if parts == 1:
        return te.compute((F, C, KH, KW),
                          lambda f, c, ry, rx: acc[0, f, (c * KH + ry) * KW + rx],
                          name="conv2d_grad_weight", tag="conv2d_grad_weight")
    part = te.reduce_axis((0, parts), name="part")
    return te.compute((F, C, KH, KW),
                      lambda f, c, ry, rx: te.sum(acc[part, f, (c * KH + ry) * KW + rx],
                                                  axis=part),
                      name="conv2d_grad_weight", tag="conv2d_grad_weight")


def schedule_conv2d_grad_weight(out):
    """Schedule for ``conv2d_grad_weight``.

    The kernel gradient is cut into tiles of ``fo`` output channels x ``co`` input channels x
    one kernel row (4 x 2 x 3 for 3x3 kernels: 24 vector accumulators); the (channel tile,
    channel tile) loops are fused into the parallel loop. In a tile, ``acc`` runs the
    reduction (images, then output positions in steps of L lanes) outermost and the tile's
    channels and kernel columns unrolled inside, the lanes as one vector: each step loads
    ``fo`` gradient vectors and ``co x KW`` input vectors for ``fo x co x KW`` fused
    multiply-adds. The two layout stages run first, parallel over (image, channel).
    """
    s = te.create_schedule(out.op)
    acc = out.op.input_tensors()[0]
    gs, xs = acc.op.input_tensors()
    fo, co = acc.op.attrs["tile"]
    f, c, ky, kx = s[out].op.axis
    f_o, f_i = s[out].split(f, factor=fo)
    c_o, c_i = s[out].split(c, factor=co)
    s[out].reorder(f_o, c_o, ky, f_i, c_i, kx)
    outer = s[out].fuse(f_o, c_o)
    s[out].parallel(outer)
    s[acc].compute_at(s[out], ky)
    af, ac, _, akx, alane = s[acc].op.axis
    rn, rro = s[acc].op.reduce_axis
    s[acc].reorder(rn, rro, af, ac, akx, alane)
    s[acc].unroll(af)
    s[acc].unroll(ac)
    s[acc].unroll(akx)
    s[acc].vectorize(alane)
    row = xs.op.attrs["row"]
    for stage in (xs, gs):
        *lead, last = s[stage].op.axis
        s[stage].parallel(s[stage].fuse(*lead[:2]))
        # whole rows, so that the row and column of an element need no division
        _, cols = s[stage].split(last, factor=row)
        _, vec = s[stage].split(cols, factor=16)
        s[stage].vectorize(vec)
    return s


# ----------------------------------------------------------------------------- padding

def _origin(o, size, lo, mode):
    """The input index whose value padded position ``o`` (outside the input) holds."""
    src = o - lo
    if mode == "reflect":
        return -src if src < 0 else 2 * (size - 1) - src
    if mode == "replicate":
        return min(max(src, 0), size - 1)
    return src % size


def pad_fold(g, axis=0, size=1, before=0, after=0, mode="reflect"):
    """The gradient of padding axis ``axis`` (to ``size`` + before + after) in ``mode``:
    the inner part of ``g`` plus, at each source position, the padded copies of it."""
    shape = const_shape(g, "pad_fold")
    out_shape = shape[:axis] + (size,) + shape[axis + 1:]
    outside = [o for o in range(shape[axis]) if not before <= o < before + size]
    pairs = [(o, _origin(o, size, before, mode)) for o in outside]
    zero = te.const(0, g.dtype)

    def body(*idx):
        def at(k):
            return g[idx[:axis] + (k,) + idx[axis + 1:]]
        i = idx[axis]
        if before >= 0 and after >= 0:
            total = at(i + before)
        else:                       # a cropped side: its positions have no inner copy
            k = i + before
            total = te.select(te.all(k >= 0, k < shape[axis]),
                              at(te.min(te.max(k, 0), shape[axis] - 1)), zero)
        for o, src in pairs:
            total = total + te.if_then_else(i.equal(src), at(o), zero)
        return total
    return te.compute(out_shape, body, name="pad_fold", tag="elemwise")
