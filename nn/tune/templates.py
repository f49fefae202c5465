"""Ready-made templates: ``gemm`` (C = A @ B) and ``conv2d_nchw``, with numpy references.

Both follow the hand-written schedules of ``tutorials/05_opt_gemm.py`` and
``tutorials/04_conv2d.py`` and turn their constants into knobs: tile sizes, the loop order of
the accumulation tile, packing, unrolling and parallelism.
"""
from __future__ import annotations

import numpy as np

import te

from .template import template


def _gemm_reference(a, b, *_args):
    return a @ b


@template("gemm", reference=_gemm_reference)
def gemm(cfg, M, N, K, dtype="float32"):
    """C[M, N] = A[M, K] @ B[K, N]: output tiles accumulated in a write cache, k split."""
    cfg.define_split("tile_y", M, max_factor=64)
    cfg.define_split("tile_x", N, max_factor=64)
    cfg.define_split("tile_k", K, max_factor=16)
    cfg.define_knob("pack_b", [0, 1])
    cfg.define_knob("unroll_k", [0, 1])
    cfg.define_knob("parallel", [0, 1])
    cfg.add_flop(2 * M * N * K)

    A = te.placeholder((M, K), name="A", dtype=dtype)
    B = te.placeholder((K, N), name="B", dtype=dtype)
    k = te.reduce_axis((0, K), name="k")
    bn = cfg["tile_x"].size[-1]
    packed = None
    if cfg["pack_b"].val:
        # B in column panels of width bn, so the inner loop reads it contiguously
        packed = te.compute((N // bn, K, bn), lambda x, kk, xi: B[kk, x * bn + xi],
                            name="packedB")
        C = te.compute((M, N), lambda m, n: te.sum(A[m, k] * packed[n // bn, k, n % bn],
                                                   axis=k), name="C")
    else:
        C = te.compute((M, N), lambda m, n: te.sum(A[m, k] * B[k, n], axis=k), name="C")

    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    mo, mi = cfg["tile_y"].apply(s, C, C.op.axis[0])
    no, ni = cfg["tile_x"].apply(s, C, C.op.axis[1])
    s[C].reorder(mo, no, mi, ni)
    s[CC].compute_at(s[C], no)
    mc, nc = s[CC].op.axis
    ko, ki = cfg["tile_k"].apply(s, CC, s[CC].op.reduce_axis[0])
    # (ko, mc, ki, nc) is the tutorial's order; the others move k inside or outside the rows
    cfg.define_reorder("order", [ko, mc, ki, nc], candidate=[[0, 1, 2, 3], [0, 2, 1, 3],
                                                             [1, 0, 2, 3]])
    cfg["order"].apply(s, CC, [ko, mc, ki, nc])
    s[CC].vectorize(nc)
    if cfg["unroll_k"].val:
        s[CC].unroll(ki)
    if cfg["parallel"].val:
        s[C].parallel(mo)
    if packed is not None:
        panel, _, lane = s[packed].op.axis
        s[packed].vectorize(lane)
        if cfg["parallel"].val:
            s[packed].parallel(panel)
    return s, [A, B, C]


def _conv2d_reference(data, kernel, N, CI, H, W, CO, KH, KW, stride=1, padding=0):
    padded = np.pad(data.astype("float64"),
                    ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    OH = (H + 2 * padding - KH) // stride + 1
    OW = (W + 2 * padding - KW) // stride + 1
    out = np.zeros((N, CO, OH, OW))
    for dy in range(KH):
        for dx in range(KW):
            window = padded[:, :, dy:dy + (OH - 1) * stride + 1:stride,
                            dx:dx + (OW - 1) * stride + 1:stride]
            out += np.einsum("ncyx,fc->nfyx", window, kernel[:, :, dy, dx])
    return out.astype(data.dtype)


@template("conv2d_nchw", reference=_conv2d_reference)
def conv2d_nchw(cfg, N, CI, H, W, CO, KH, KW, stride=1, padding=0):
    """A direct NCHW convolution: output tiles (channels x columns) in a write cache, the
    padded input as a stage of its own or inlined."""
    OH = (H + 2 * padding - KH) // stride + 1
    OW = (W + 2 * padding - KW) // stride + 1
    cfg.define_split("tile_f", CO, max_factor=32)
    cfg.define_split("tile_x", OW, max_factor=32)
    cfg.define_split("tile_rc", CI, max_factor=16)
    cfg.define_knob("inline_pad", [0, 1])
    cfg.define_knob("unroll_kw", [0, 1])
    cfg.define_knob("parallel", [0, 1])
    cfg.add_flop(2 * N * CO * OH * OW * CI * KH * KW)

    data = te.placeholder((N, CI, H, W), name="data")
    kernel = te.placeholder((CO, CI, KH, KW), name="kernel")
    pad = te.compute(
        (N, CI, H + 2 * padding, W + 2 * padding),
        lambda n, c, y, x: te.if_then_else(
            te.all(y >= padding, y < H + padding, x >= padding, x < W + padding),
            data[n, c, y - padding, x - padding], te.const(0.0, data.dtype)),
        name="pad")
    rc = te.reduce_axis((0, CI), name="rc")
    ry = te.reduce_axis((0, KH), name="ry")
    rx = te.reduce_axis((0, KW), name="rx")
    conv = te.compute(
        (N, CO, OH, OW),
        lambda n, f, y, x: te.sum(pad[n, rc, y * stride + ry, x * stride + rx]
                                  * kernel[f, rc, ry, rx], axis=[rc, ry, rx]),
        name="conv")

    s = te.create_schedule(conv.op)
    if cfg["inline_pad"].val:
        s[pad].compute_inline()     # no padded copy, but a bounds test in the inner loop
    CC = s.cache_write(conv, "global")
    n, f, y, x = s[conv].op.axis
    fo, fi = cfg["tile_f"].apply(s, conv, f)
    xo, xi = cfg["tile_x"].apply(s, conv, x)
    s[conv].reorder(n, fo, y, xo, fi, xi)
    s[CC].compute_at(s[conv], xo)
    _, fc, _, xc = s[CC].op.axis
    rc, ry, rx = s[CC].op.reduce_axis
    rco, rci = cfg["tile_rc"].apply(s, CC, rc)
    axes = [rco, ry, rx, rci, fc, xc]
    # the reduction all outside the tile, or the channel block inside the rows of the tile
    cfg.define_reorder("order", axes, candidate=[[0, 1, 2, 3, 4, 5], [0, 3, 1, 2, 4, 5],
                                                 [0, 1, 2, 4, 3, 5]])
    cfg["order"].apply(s, CC, axes)
    s[CC].vectorize(xc)
    if cfg["unroll_kw"].val:
        s[CC].unroll(rx)
    if cfg["parallel"].val:
        s[conv].parallel(fo)
    return s, [data, kernel, conv]
