"""The other quantized operators' te declarations (schedules: ``schedule_injective`` for the
elementwise ones, ``schedule_qpool`` for the pools), on the integers of quantized tensors, as
PyTorch's x86 kernels compute them:

- ``qclamp``: ReLU / ReLU6 / hardtanh on the integers, ``min(max(q, lo), hi)`` (same
  parameters in and out);
- ``qbatch_norm``: ``rint(fma(f32(q - zp_in), alpha[c], beta[c])) + zp_out`` clamped, with
  PyTorch's ``alpha = f32(inv_sigma * w) * (s_in / s_out)``, ``beta = (b - mean * inv_sigma *
  w) / s_out`` (``compute_fused_params``) given per channel;
- ``qmax_pool2d``: the largest integer of each window (padding never wins: masked with the
  dtype's minimum), same parameters;
- ``qadaptive_avg_pool2d``: ``rint(f32(sum) / f32(count))`` over PyTorch's adaptive windows
  (``floor(o * H / OH)`` to ``ceil((o + 1) * H / OH)``), same parameters;
- ``qembedding``: rows of per-row quantized weights, ``f32(q * scale[r] + bias[r])`` as
  PyTorch's byte-rowwise embedding (``bias = -zero_point * scale``).
"""
from __future__ import annotations

import te

from .cpu_util import const_shape


def _storage_range(dtype):
    import numpy as np
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def qclamp(q, p):
    """``min(max(q, p[0]), p[1])`` on integers ``q`` (``p`` float64: lo, hi)."""
    lo, hi = p[0].astype(q.dtype), p[1].astype(q.dtype)
    return te.compute(q.shape, lambda *i: te.min(te.max(q[i], lo), hi), name="qclamp",
                      tag="elemwise")


def qbatch_norm(q, ab, p, qdtype="quint8", relu=False):
    """Quantized batch norm of NC... integers ``q``: ``ab`` float32 (2, C) holds alpha and
    beta; ``p`` float64 (zp_in, zp_out)."""
    from nn.quantized.dtypes import QDTYPES
    info = QDTYPES[qdtype]
    zin, zout = p[0].astype("int32"), p[1].astype("int32")

    def body(*i):
        c = i[1]
        wide = (q[i].astype("int32") - zin).astype("float64") * \
            ab[0, c].astype("float64") + ab[1, c].astype("float64")
        v = te.round(wide.astype("float32"))
        v = te.min(te.max(v, te.const(-2.0 ** 20)), te.const(2.0 ** 20)).astype("int32") + zout
        low = zout if relu else te.const(info.qmin, "int32")
        return te.min(te.max(v, low), te.const(info.qmax, "int32")).astype(info.storage)
    return te.compute(q.shape, body, name="qbatch_norm", tag="elemwise")


def qmax_pool2d(q, kernel=(1, 1), stride=(1, 1), padding=(0, 0), dilation=(1, 1),
                out_size=(1, 1)):
    """The max of each window of NCHW integers ``q``."""
    N, C, H, W = const_shape(q, "qmax_pool2d")
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    ry, rx = te.reduce_axis((0, kh), name="ry"), te.reduce_axis((0, kw), name="rx")
    low = te.const(_storage_range(q.dtype)[0], q.dtype)

    def body(n, c, oy, ox):
        y, x = oy * sh - ph + ry * dh, ox * sw - pw + rx * dw
        inside = te.all(y >= 0, y < H, x >= 0, x < W)
        load = q[n, c, te.min(te.max(y, 0), H - 1), te.min(te.max(x, 0), W - 1)]
        return te.max(te.select(inside, load, low), axis=[ry, rx])
    return te.compute((N, C) + tuple(out_size), body, name="qmax_pool2d", tag="qpool")


def _adaptive(o, size, out):
    start = te.floordiv(o * size, out)
    end = te.floordiv((o + 1) * size + out - 1, out)
    return start, end


def qadaptive_avg_pool2d(q, out_size=(1, 1)):
    """``rint(sum / count)`` over each adaptive window of NCHW integers ``q``."""
    N, C, H, W = const_shape(q, "qadaptive_avg_pool2d")
    OH, OW = out_size
    kh = max(-(-((o + 1) * H) // OH) - (o * H) // OH for o in range(OH))
    kw = max(-(-((o + 1) * W) // OW) - (o * W) // OW for o in range(OW))
    ry, rx = te.reduce_axis((0, kh), name="ry"), te.reduce_axis((0, kw), name="rx")
    total = te.compute((N, C, OH, OW), lambda n, c, oy, ox: te.sum(te.select(
        te.all(_adaptive(oy, H, OH)[0] + ry < _adaptive(oy, H, OH)[1],
               _adaptive(ox, W, OW)[0] + rx < _adaptive(ox, W, OW)[1]),
        q[n, c, te.min(_adaptive(oy, H, OH)[0] + ry, H - 1),
          te.min(_adaptive(ox, W, OW)[0] + rx, W - 1)].astype("int32"),
        te.const(0, "int32")), axis=[ry, rx]), name="qadaptive_avg_pool2d.sum")
    lo, hi = _storage_range(q.dtype)

    def body(n, c, oy, ox):
        y0, y1 = _adaptive(oy, H, OH)
        x0, x1 = _adaptive(ox, W, OW)
        count = ((y1 - y0) * (x1 - x0)).astype("float32")
        v = te.round(total[n, c, oy, ox].astype("float32") / count).astype("int32")
        return te.min(te.max(v, te.const(lo, "int32")), te.const(hi, "int32")).astype(q.dtype)
    return te.compute((N, C, OH, OW), body, name="qadaptive_avg_pool2d", tag="qpool")


def qembedding(idx, q, sb):
    """``f32(q[idx] * scale + bias)`` for int64 indices ``idx`` into per-row quantized
    integers ``q`` (rows, dim); ``sb`` float32 (2, rows) holds scale and bias."""
    rows, dim = const_shape(q, "qembedding")

    def body(*i):
        r = te.min(te.max(idx[i[:-1]], te.const(0, idx.dtype)), te.const(rows - 1, idx.dtype))
        return q[r, i[-1]].astype("float32") * sb[0, r] + sb[1, r]
    return te.compute(tuple(idx.shape) + (dim,), body, name="qembedding", tag="elemwise")


def schedule_qpool(out):
    """Pools: the window sums computed per (n, c) plane, the planes parallel."""
    s = te.create_schedule(out.op)
    for t in out.op.input_tensors():
        if t.name.endswith(".sum"):
            s[t].compute_at(s[out], s[out].op.axis[1])
    axes = list(s[out].op.axis)
    outer = s[out].fuse(*axes[:2])
    s[out].parallel(outer)
    return s
