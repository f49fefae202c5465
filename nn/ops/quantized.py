"""Quantized products for the CPU: ``qlinear`` (and, in ``nn.ops.quantized_conv``, the
direct ``qconv2d``): uint8 activations times int8 weights (as fbgemm), int32 accumulation and
the requantization epilogue in one te kernel.

Stages (``G = 1`` group):

    cols[g, m, k]      the activations as a matrix: x itself, or a copy padded to whole row
                       tiles and to K a multiple of 4
    acc[g, m, j]       sum_k int32(cols[g, m, k]) * int32(W[g, j // 16, k // 4, j % 16, k % 4])
                       W packed as TVM's x86 int8 dense: the 4 reduction values of each of 16
                       output lanes adjacent (one 64-byte vector per ``vpdpbusd``)
    rowsum[g, m]       sum_k cols[g, m, k], only when a weight zero point is not 0
    out                requant(acc - x_zp * colsum[j] - w_zp[j] * rowsum[m] + K x_zp w_zp[j])

The epilogue (``requant``), with ``v`` the exact int32 product of ``(x - x_zp)(w - w_zp)``:

- ``mode="float"`` (fbgemm's ``ReQuantizeOutput`` with a float bias, what PyTorch's x86 and
  fbgemm engines compute): ``q = rint((f32(v) + bterm[j]) * mult[j]) + out_zp``, ``rint`` half
  to even, with ``mult = f32(f32(sx * sw[j]) / f32(so))`` and ``bterm = f32(bias / f32(sx *
  sw))`` (per channel a division; per tensor ``bias * f32(1 / (sx * sw))``, fbgemm's
  reciprocal), all given by the caller as ``fch = [bterm, mult]``;
- ``mode="integer"`` (TFLite / gemmlowp): ``q = MultiplyByQuantizedMultiplier(v + qbias[j],
  m[j], shift[j]) + out_zp`` with ``qbias = rint(bias / (sx * sw[j]))`` in int32 and ``(m,
  shift)`` of ``quantize_multiplier(sx * sw[j] / so)``;

then clamped to quint8 (below at ``out_zp`` for a fused ReLU). ``ich = [colsum, w_zp, qbias,
m, shift]`` (int32, one column per output channel), ``p = [x_zp, out_zp]`` (float64).

Schedule (``schedule_qgemm``): the output is cut into tiles of ``ROWS`` rows x ``16 * cb``
channels; each tile's ``acc`` is computed in registers (k by 4 outermost, then the rows and
the 16-lane blocks unrolled), each 16-lane step one ``vpdpbusd`` through ``tensorize`` with
``te.topi.x86.tensor_intrin`` on hosts with AVX-512 VNNI (``vnni=True``), else the same loops
vectorized in plain int32 arithmetic (exact everywhere). Tiles are the parallel loop.
"""
from __future__ import annotations

import te

from .cpu_util import const_shape, pad_to

LANES = 16          # output channels per vpdpbusd (16 int32 lanes)
ROWS = 4            # rows of a register tile
BLOCKS = 4          # 16-lane blocks of a register tile (64 channels)
QMIN, QMAX = 0, 255 # quint8


def vnni_available() -> bool:
    """Whether this host runs AVX-512 VNNI (LLVM's view of the CPU, as te.topi.x86)."""
    from te.topi.x86.tensor_intrin import host_features
    return {"avx512f", "avx512vnni"} <= host_features()


def blocks_for(n) -> int:
    """16-lane blocks per register tile for ``n`` output channels (per group)."""
    return max(1, min(BLOCKS, pad_to(n, LANES) // LANES))


def packed_shape(groups, n, k) -> tuple:
    """The shape of the packed int8 weights of ``groups`` groups of ``n`` x ``k``."""
    np_ = pad_to(n, LANES * blocks_for(n))
    return (groups, np_ // LANES, pad_to(k, 4) // 4, LANES, 4)


def pack_weight(w, groups):
    """The int8 weights (OC, K) in the packed layout of ``packed_shape``, zero-padded (a te
    kernel; done once, when a module's weights are set)."""
    oc, k = const_shape(w, "pack_weight")
    n = oc // groups
    shape = packed_shape(groups, n, k)

    def body(g, jo, ko, ji, ki):
        j, kk = jo * LANES + ji, ko * 4 + ki
        inside = te.all(j < n, kk < k)
        value = w[g * n + te.min(j, n - 1), te.min(kk, k - 1)]
        return te.select(inside, value, te.const(0, "int8"))
    return te.compute(shape, body, name="qpack", tag="elemwise")


def weight_sums(w):
    """The row sums of int8 weights (OC, K) in int32 (fbgemm's column offsets)."""
    _, k = const_shape(w, "weight_sums")
    r = te.reduce_axis((0, k), name="k")
    return te.compute((w.shape[0],), lambda j: te.sum(w[j, r].astype("int32"), axis=r),
                      name="qweight_sums")


# ----------------------------------------------------------------------------- epilogue

def _requant(v, j, ich, fch, p, mode, relu):
    """The requantized quint8 value of the exact int32 product ``v`` of channel ``j``."""
    from nn.quantized.kernels import fixed_point_multiply
    ozp = p[1].astype("int32")
    if mode == "float":
        q = te.round((v.astype("float32") + fch[0, j]) * fch[1, j])
        q = te.min(te.max(q, te.const(-2.0 ** 20)), te.const(2.0 ** 20)).astype("int32") + ozp
    else:
        q = fixed_point_multiply((v + ich[2, j]).astype("int64"), ich[3, j].astype("int64"),
                                 ich[4, j].astype("int64")).astype("int32") + ozp
    low = ozp if relu else te.const(QMIN, "int32")
    return te.min(te.max(q, low), te.const(QMAX, "int32")).astype("uint8")


def _product(cols, W, ich, p, K, has_wzp):
    """``acc`` and the zero-point-corrected value ``value(g, m, j, oc)`` of the product."""
    G, Mp, Kp = const_shape(cols, "quantized product")
    Np = W.shape[1].value * LANES
    k = te.reduce_axis((0, Kp), name="k")
    acc = te.compute((G, Mp, Np), lambda g, m, j: te.sum(
        cols[g, m, k].astype("int32") *
        W[g, j // LANES, k // 4, j % LANES, k % 4].astype("int32"), axis=k),
        name="qacc", tag="qgemm_acc")
    rowsum = None
    if has_wzp:
        r = te.reduce_axis((0, Kp), name="r")
        rowsum = te.compute((G, Mp), lambda g, m: te.sum(cols[g, m, r].astype("int32"),
                                                         axis=r), name="qrowsum")
    xzp = p[0].astype("int32")

    def value(g, m, j, oc):
        v = acc[g, m, j] - xzp * ich[0, oc]
        if has_wzp:
            v = v - ich[1, oc] * rowsum[g, m] + te.const(K, "int32") * xzp * ich[1, oc]
        return v
    return acc, value


def qlinear(x, W, ich, fch, p, out_features, mode="float", relu=False, has_wzp=False):
    """Quantized ``x @ w^T + bias`` for uint8 ``x`` (M, K) and packed int8 weights ``W``
    (``pack_weight`` of (out_features, K)); quint8 (M, Np): the channels padded to whole
    register tiles, the first ``out_features`` are the result."""
    M, K = const_shape(x, "qlinear")
    Kp = W.shape[2].value * 4
    Mp = pad_to(M, ROWS)
    if (Mp, Kp) == (M, K):
        cols = te.compute((1, M, K), lambda g, m, kk: x[m, kk], name="qcols", tag="qcols_view")
    else:
        cols = te.compute((1, Mp, Kp), lambda g, m, kk: te.select(
            te.all(m < M, kk < K), x[te.min(m, M - 1), te.min(kk, K - 1)],
            te.const(0, "uint8")), name="qcols", tag="qcols")
    acc, value = _product(cols, W, ich, p, K, has_wzp)
    Np = acc.shape[2].value
    # the channels padded to whole tiles (the caller crops them): a cropped output would
    # shrink the last tile's region of acc below the intrinsic's 16 lanes
    return te.compute((M, Np), lambda m, j: _requant(
        value(0, m, j, te.min(j, out_features - 1)), te.min(j, out_features - 1), ich, fch,
        p, mode, relu), name="qlinear", tag="qgemm_out")


# ----------------------------------------------------------------------------- schedule

def schedule_qgemm(out, vnni=None):
    """The schedule of ``qlinear`` (see the module docstring); ``vnni=None`` asks the
    host."""
    if getattr(out.op, "tag", "") != "qgemm_out":
        raise ValueError(f"schedule_qgemm: {out.name} is not the output of qlinear")
    if vnni is None:
        vnni = vnni_available()
    s = te.create_schedule(out.op)
    acc = next(t for t in _producers(out) if t.op.tag == "qgemm_acc")
    cols = acc.op.input_tensors()[0]
    rowsum = next((t for t in _producers(out) if t.name == "qrowsum"), None)
    cb = acc.shape[2].value // LANES
    cb = next(b for b in range(min(BLOCKS, cb), 0, -1) if cb % b == 0)
    if cols.op.tag == "qcols_view":
        s[cols].compute_inline()
    else:
        g_, m_, k_ = s[cols].op.axis
        s[cols].parallel(s[cols].fuse(g_, m_))
        ko, ki = s[cols].split(k_, factor=4)
        s[cols].unroll(ki)
    if rowsum is not None:
        rg, rm = s[rowsum].op.axis
        s[rowsum].parallel(s[rowsum].fuse(rg, rm))
    m, j = s[out].op.axis
    mo, jo, mi, ji = s[out].tile(m, j, ROWS, LANES * cb)
    # channel tiles outside row tiles: one 64-channel panel of W (64 KB at K = 1024) stays
    # in L2 while every row tile uses it (rows outside re-read all of W from memory per row
    # tile: 1.73 -> 1.59 ms at 256 x 1024 x 1024); the two fused are the parallel loop
    s[out].reorder(jo, mo, mi, ji)
    tiles = s[out].fuse(jo, mo)
    s[out].parallel(tiles)
    s[out].vectorize(ji)
    s[acc].compute_at(s[out], tiles)
    _, am, aj = s[acc].op.axis
    (ak,) = s[acc].op.reduce_axis
    ajo, aji = s[acc].split(aj, factor=LANES)
    ako, aki = s[acc].split(ak, factor=4)
    s[acc].reorder(ako, am, ajo, aji, aki)
    s[acc].unroll(am)
    s[acc].unroll(ajo)
    if vnni:
        from te.topi.x86 import tensor_intrin
        s[acc].tensorize(aji, tensor_intrin.dot_16x1x16_uint8_int8_int32_cascadelake())
    else:
        s[acc].vectorize(aji)
        s[acc].unroll(aki)
    return s


def _producers(t):
    seen, stack, out = set(), [t], []
    while stack:
        cur = stack.pop()
        for inp in cur.op.input_tensors():
            if inp.op not in seen and hasattr(inp.op, "axis"):
                seen.add(inp.op)
                out.append(inp)
                stack.append(inp)
    return out
