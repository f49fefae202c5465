"""The quantized conv2d for the CPU as a direct convolution (no im2col): uint8 activations
times int8 weights, int32 accumulation, the requantization epilogue of
``nn.ops.quantized`` fused, one te kernel.

Stages (``G`` groups, ``kb`` reduction values per lane (4, or 2 for ``vpmaddwd``), ``cgp`` =
channels per group rounded up to ``kb``):

    xp[g, n, y, x, c]          the input per group, channels last (NHWC), padded with the
                               input zero point (adds 0 after the correction) and with
                               zeros up to ``cgp`` channels; wide enough for whole row tiles
    acc[g, n, oy, ox, j]       sum over (ky, kx, c) of int32(xp[g, n, oy*s + ky*d, ox*s +
                               kx*d, c]) * int32(W[g, j // 16, ky, kx, c // kb, j % 16,
                               c % kb]) (kb adjacent channels of xp and 16 x kb weights: one
                               vpdpbusd / vpmaddwd)
    rowsum[g, n, oy, ox]       the window sums of xp, only when a weight zero point is not 0
    out[n, oy, ox, g, j]       the requantized output, channels last (NHWC, as PyTorch's x86
                               kernels; the caller sees it as an NCHW view), the row and the
                               channels padded to whole register tiles (the caller crops)

Schedule: tiles of ``rows`` output columns x ``16 * cb`` channels, each tile's ``acc`` in
registers (the reduction outermost, then the columns and the 16-lane blocks unrolled), the
16 lanes x ``kb`` channels tensorized as ``nn.ops.quantized``'s (``vpdpbusd`` on VNNI hosts,
``vpmaddwd`` on AVX-512BW, two 256-bit ``vpmaddwd`` on AVX2, vectorized int32 arithmetic
elsewhere); output rows (n, oy) are
the parallel loop. The input is read NCHW or
NHWC (``channels_last``: what this kernel gives, so that a chain of convolutions never
transposes).
"""
from __future__ import annotations

import te

from .cpu_util import const_shape, pad_to
from .quantized import LANES, _requant, blocks_for

ROW_CHOICES = (4, 8, 7, 6, 5, 3)    # output columns per register tile, best first


def conv_rows(ow) -> int:
    """Output columns per register tile: one that divides ``ow`` if any (no crop), else 4."""
    return next((r for r in ROW_CHOICES if ow % r == 0), 4)


def conv_packed_shape(groups, n, cg, kh, kw, kb=4) -> tuple:
    np_ = pad_to(n, LANES * blocks_for(n))
    return (groups, np_ // LANES, kh, kw, pad_to(cg, kb) // kb, LANES, kb)


def pack_conv_weight(w, groups, kb=4):
    """int8 weights (OC, C / groups, KH, KW) in the layout of ``conv_packed_shape``."""
    oc, cg, kh, kw = const_shape(w, "pack_conv_weight")
    n = oc // groups

    def body(g, jo, ky, kx, co, ji, ci):
        j, c = jo * LANES + ji, co * kb + ci
        value = w[g * n + te.min(j, n - 1), te.min(c, cg - 1), ky, kx]
        return te.select(te.all(j < n, c < cg), value, te.const(0, "int8"))
    return te.compute(conv_packed_shape(groups, n, cg, kh, kw, kb), body, name="qpack_conv",
                      tag="elemwise")


def qconv2d(x, W, ich, fch, p, out_channels, kernel, stride, padding, dilation, groups,
            mode="float", relu=False, has_wzp=False, channels_last=False):
    """Quantized conv2d of uint8 ``x`` (NCHW, or NHWC with ``channels_last``) with
    ``pack_conv_weight``'s weights ``W``; quint8 (N, OH, OWp, groups, Np), channels last (as
    PyTorch's x86 kernels give it), the row and the channels per group padded (crop to OW and
    ``out_channels / groups``)."""
    if channels_last:
        N, H, Wd, C = const_shape(x, "qconv2d")
    else:
        N, C, H, Wd = const_shape(x, "qconv2d")
    (KH, KW), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
    OW = (Wd + 2 * pw - dw * (KW - 1) - 1) // sw + 1
    cg, ng = C // groups, out_channels // groups
    kb = W.shape[6].value
    cgp, Np = W.shape[4].value * kb, W.shape[1].value * LANES
    rows = conv_rows(OW)
    OWp = pad_to(OW, rows)
    Hp, Wp = (OH - 1) * sh + (KH - 1) * dh + 1, (OWp - 1) * sw + (KW - 1) * dw + 1
    xzp = p[0].astype("uint8")

    def fxp(g, n, y, xx, c):
        yy, xw = y - ph, xx - pw
        inside = te.all(yy >= 0, yy < H, xw >= 0, xw < Wd)
        cc, yc, xc = g * cg + te.min(c, cg - 1), te.min(te.max(yy, 0), H - 1), \
            te.min(te.max(xw, 0), Wd - 1)
        load = x[n, yc, xc, cc] if channels_last else x[n, cc, yc, xc]
        return te.select(c < cg, te.select(inside, load, xzp), te.const(0, "uint8"))
    xp = te.compute((groups, N, Hp, Wp, cgp), fxp, name="qconv_input", tag="qconv_input")
    ry, rx = te.reduce_axis((0, KH), name="ry"), te.reduce_axis((0, KW), name="rx")
    rc = te.reduce_axis((0, cgp), name="rc")
    acc = te.compute((groups, N, OH, OWp, Np), lambda g, n, oy, ox, j: te.sum(
        xp[g, n, oy * sh + ry * dh, ox * sw + rx * dw, rc].astype("int32") *
        W[g, j // LANES, ry, rx, rc // kb, j % LANES, rc % kb].astype("int32"),
        axis=[ry, rx, rc]), name="qconv_acc", tag="qconv_acc", attrs={"rows": rows})
    rowsum = None
    if has_wzp:
        sy, sx = te.reduce_axis((0, KH), name="sy"), te.reduce_axis((0, KW), name="sx")
        sc = te.reduce_axis((0, cgp), name="sc")
        rowsum = te.compute((groups, N, OH, OWp), lambda g, n, oy, ox: te.sum(
            xp[g, n, oy * sh + sy * dh, ox * sw + sx * dw, sc].astype("int32"),
            axis=[sy, sx, sc]), name="qconv_rowsum")
    K = cg * KH * KW
    xzp32 = p[0].astype("int32")

    def fout(n, oy, ox, g, j):
        oc = g * ng + te.min(j, ng - 1)
        v = acc[g, n, oy, ox, j] - xzp32 * ich[0, oc]
        if has_wzp:
            v = v - ich[1, oc] * rowsum[g, n, oy, ox] + te.const(K, "int32") * xzp32 * \
                ich[1, oc]
        return _requant(v, oc, ich, fch, p, mode, relu)
    return te.compute((N, OH, OWp, groups, Np), fout, name="qconv2d", tag="qconv_out")


def schedule_qconv2d(out, path=None):
    """The schedule of ``qconv2d`` (see the module docstring); ``path`` as
    ``nn.ops.quantized.schedule_qgemm``'s."""
    from .quantized import BLOCKS, _producers, host_path, tensorize_lanes
    if getattr(out.op, "tag", "") != "qconv_out":
        raise ValueError(f"schedule_qconv2d: {out.name} is not the output of qconv2d")
    path = host_path() if path is None else path
    s = te.create_schedule(out.op)
    acc = next(t for t in _producers(out) if t.op.tag == "qconv_acc")
    xp = next(t for t in _producers(out) if t.op.tag == "qconv_input")
    rowsum = next((t for t in _producers(out) if t.name == "qconv_rowsum"), None)
    rows = acc.op.attrs["rows"]
    cb = acc.shape[4].value // LANES
    cb = next(b for b in range(min(BLOCKS, cb), 0, -1) if cb % b == 0)
    g_, n_, y_, x_, c_ = s[xp].op.axis
    s[xp].parallel(s[xp].fuse(g_, n_, y_))      # ~3% of the kernel at 64x56x56
    if rowsum is not None:
        rg, rn, ry_, rx_ = s[rowsum].op.axis
        s[rowsum].parallel(s[rowsum].fuse(rg, rn, ry_))
    n, oy, ox, g, j = s[out].op.axis
    jo, ji = s[out].split(j, factor=LANES * cb)
    oxo, oxi = s[out].split(ox, factor=rows)
    s[out].reorder(n, oy, oxo, g, jo, oxi, ji)
    s[out].parallel(s[out].fuse(n, oy))
    s[out].unroll(oxi)
    s[out].vectorize(ji)        # the epilogue on 16-lane vectors, stored contiguously
    s[acc].compute_at(s[out], jo)
    *_, aox, aj = s[acc].op.axis
    ary, arx, arc = s[acc].op.reduce_axis
    ajo, aji = s[acc].split(aj, factor=LANES)
    kb = acc.op.input_tensors()[1].shape[6].value
    arco, arci = s[acc].split(arc, factor=kb)
    s[acc].reorder(ary, arx, arco, aox, ajo, aji, arci)
    s[acc].unroll(aox)
    s[acc].unroll(ajo)
    tensorize_lanes(s[acc], aji, arci, path)
    return s
