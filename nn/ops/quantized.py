"""Quantized products for the CPU: ``qlinear`` (and, in ``nn.ops.quantized_conv``, the
direct ``qconv2d``): uint8 activations times int8 weights (as fbgemm), int32 accumulation and
the requantization epilogue in one te kernel.

Stages (``G = 1`` group):

    cols[g, m, k]      the activations as a matrix: x itself, or a copy padded to whole row
                       tiles and to K a multiple of kb
    acc[g, m, j]       sum_k int32(cols[g, m, k]) * int32(W[g, j // 16, k // kb, j % 16,
                       k % kb]); W packed as TVM's x86 int8 dense: the kb = 4 (2 for
                       ``vpmaddwd``) reduction values of each of 16 output lanes adjacent (one
                       64-byte vector per ``vpdpbusd``)
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
channels; each tile's ``acc`` is computed in registers (k by ``kb`` outermost, then the rows
and the 16-lane blocks unrolled), each 16-lane step tensorized (``host_path``): one
``vpdpbusd`` of ``te.topi.x86.tensor_intrin`` on AVX-512 VNNI hosts (``kb = 4``), one
``vpmaddwd`` of ``dot_16x1x16_pmaddwd`` on AVX-512BW hosts (``kb = 2``), two 256-bit
``vpmaddwd`` of ``dot_16x1x16_pmaddwd256`` on AVX2 hosts (``kb = 2``), else the same loops
vectorized in plain int32 arithmetic; all exact. Tiles are the parallel loop.
"""
from __future__ import annotations

import te

from .cpu_util import const_shape, pad_to

LANES = 16          # output channels per vpdpbusd (16 int32 lanes)
ROWS = 4            # rows of a register tile
BLOCKS = 4          # 16-lane blocks of a register tile (64 channels)
QMIN, QMAX = 0, 255 # quint8


PATHS = ("vnni", "pmaddwd", "pmaddwd256", "plain")                # fastest first
K_BLOCK = {"vnni": 4, "pmaddwd": 2, "pmaddwd256": 2, "plain": 4}   # reduction values per lane
NEEDS = {"vnni": {"avx512f", "avx512vnni"}, "pmaddwd": {"avx512f", "avx512bw"},
         "pmaddwd256": {"avx2"}, "plain": set()}    # each path's CPU features (LLVM's names)


def vnni_available() -> bool:
    """Whether this host runs AVX-512 VNNI (LLVM's view of the CPU, as te.topi.x86)."""
    from te.topi.x86.tensor_intrin import host_features
    return {"avx512f", "avx512vnni"} <= host_features()


def host_paths(features=None) -> tuple:
    """The paths a CPU with ``features`` (None: this host's) can run, fastest first."""
    from te.topi.x86.tensor_intrin import host_features
    have = host_features() if features is None else set(features)
    return tuple(p for p in PATHS if NEEDS[p] <= have)


def host_path() -> str:
    """The product's instructions on this host: ``vnni`` (AVX-512 VNNI ``vpdpbusd``: 64
    u8 x s8 products per instruction), ``pmaddwd`` (AVX-512BW: the bytes widened to int16,
    ``vpmaddwd``: 32 exact products per instruction), ``pmaddwd256`` (AVX2 without
    AVX-512BW: the same on 256-bit registers, 16) or ``plain`` (int32 vector arithmetic, any
    CPU). All are exact. (``vpmaddubsw``, TVM's AVX-512BW / AVX2 sequence, saturates its
    int16 pair sums, so it is not used.)"""
    return host_paths()[0]


def _declare_pair(name, intrin_func):
    """The tensor intrinsic ``name``: 16 int32 lanes, each ``data[0:2] . kernel[lane, 0:2]``
    (uint8 x int8) accumulated, its body ``intrin_func``."""
    from te import compute, decl_tensor_intrin, placeholder, reduce_axis, var
    from te import sum as te_sum
    from te.tir import decl_buffer
    data = placeholder((2,), dtype="uint8", name="data")
    kernel = placeholder((LANES, 2), dtype="int8", name="kernel")
    k = reduce_axis((0, 2), name="k")
    C = compute((LANES,), lambda i: te_sum(data[k].astype("int32") *
                                           kernel[i, k].astype("int32"), axis=k), name="C")
    a_buffer = decl_buffer(data.shape, dtype="uint8", name="a_buffer", offset_factor=1,
                           strides=[1])
    b_buffer = decl_buffer(kernel.shape, dtype="int8", name="b_buffer", offset_factor=1,
                           strides=[var("ldw"), 1])
    return decl_tensor_intrin(C.op, intrin_func, name=name,
                              binds={data: a_buffer, kernel: b_buffer},
                              default_buffer_params={"offset_factor": 1})


def dot_16x1x16_pmaddwd():
    """A tensor intrinsic: 16 int32 lanes, each ``data[0:2] . kernel[lane, 0:2]`` (uint8 x
    int8), accumulated, by one ``vpmaddwd`` on the values widened to int16 (exact)."""
    from te import const
    from te.intrin import call_llvm_pure_intrin, reinterpret

    def intrin_func(ins, outs):
        pair = ins[0].vload([0], "uint8x2").astype("int16x2")
        a = reinterpret("int16x32", reinterpret("int32", pair).astype("int32x16"))
        b = ins[1].vload([0, 0], "int8x32").astype("int16x32")
        prod = call_llvm_pure_intrin("int32x16", "llvm.x86.avx512.pmaddw.d.512",
                                     const(2, "uint32"), a, b)
        return (outs[0].vstore(0, prod), outs[0].vstore(0, const(0, "int32x16")),
                outs[0].vstore(0, outs[0].vload([0], "int32x16") + prod))
    return _declare_pair("dot_16x1x16_uint8_int8_int32_pmaddwd", intrin_func)


def dot_16x1x16_pmaddwd256():
    """``dot_16x1x16_pmaddwd``'s intrinsic on AVX2 (256-bit registers, no AVX-512): the 16
    lanes as two halves of 8 int32, each one ``vpmaddwd`` (``llvm.x86.avx2.pmadd.wd``) of the
    values widened to int16 (exact: no int16 sum saturates)."""
    from schedule.ir import seq
    from te import const
    from te.intrin import call_llvm_pure_intrin, reinterpret
    half = LANES // 2

    def intrin_func(ins, outs):
        pair = ins[0].vload([0], "uint8x2").astype("int16x2")
        a = reinterpret("int16x16", reinterpret("int32", pair).astype("int32x8"))
        prods = [call_llvm_pure_intrin(
            "int32x8", "llvm.x86.avx2.pmadd.wd", const(2, "uint32"), a,
            ins[1].vload([h * half, 0], "int8x16").astype("int16x16")) for h in (0, 1)]
        zero = const(0, "int32x8")
        return (seq(*(outs[0].vstore(h * half, prods[h]) for h in (0, 1))),
                seq(*(outs[0].vstore(h * half, zero) for h in (0, 1))),
                seq(*(outs[0].vstore(h * half, outs[0].vload([h * half], "int32x8") +
                                     prods[h]) for h in (0, 1))))
    return _declare_pair("dot_16x1x16_uint8_int8_int32_pmaddwd256", intrin_func)


def tensorize_lanes(stage, lanes_axis, k_inner, path):
    """The 16 lanes x ``K_BLOCK[path]`` reduction values of a tile step: tensorized
    (``vnni``, ``pmaddwd``, ``pmaddwd256``) or vectorized int32 arithmetic (``plain``)."""
    if path == "vnni":
        from te.topi.x86 import tensor_intrin
        stage.tensorize(lanes_axis, tensor_intrin.dot_16x1x16_uint8_int8_int32_cascadelake())
    elif path == "pmaddwd":
        stage.tensorize(lanes_axis, dot_16x1x16_pmaddwd())
    elif path == "pmaddwd256":
        stage.tensorize(lanes_axis, dot_16x1x16_pmaddwd256())
    elif path == "plain":
        stage.vectorize(lanes_axis)
        stage.unroll(k_inner)
    else:
        raise ValueError(f"quantized product: path must be one of {PATHS}, got {path!r}")


def blocks_for(n) -> int:
    """16-lane blocks per register tile for ``n`` output channels (per group)."""
    return max(1, min(BLOCKS, pad_to(n, LANES) // LANES))


def packed_shape(groups, n, k, kb=4) -> tuple:
    """The shape of the packed int8 weights of ``groups`` groups of ``n`` x ``k``, ``kb``
    reduction values per lane adjacent."""
    np_ = pad_to(n, LANES * blocks_for(n))
    return (groups, np_ // LANES, pad_to(k, kb) // kb, LANES, kb)


def pack_weight(w, groups, kb=4):
    """The int8 weights (OC, K) in the packed layout of ``packed_shape``, zero-padded (a te
    kernel; done once, when a module's weights are set)."""
    oc, k = const_shape(w, "pack_weight")
    n = oc // groups
    shape = packed_shape(groups, n, k, kb)

    def body(g, jo, ko, ji, ki):
        j, kk = jo * LANES + ji, ko * kb + ki
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
    Np, kb = W.shape[1].value * LANES, W.shape[4].value
    k = te.reduce_axis((0, Kp), name="k")
    acc = te.compute((G, Mp, Np), lambda g, m, j: te.sum(
        cols[g, m, k].astype("int32") *
        W[g, j // LANES, k // kb, j % LANES, k % kb].astype("int32"), axis=k),
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
    Kp = W.shape[2].value * W.shape[4].value
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

def schedule_qgemm(out, path=None):
    """The schedule of ``qlinear`` (see the module docstring); ``path`` (``PATHS``; None:
    ``host_path()``) picks the instructions of the product."""
    if getattr(out.op, "tag", "") != "qgemm_out":
        raise ValueError(f"schedule_qgemm: {out.name} is not the output of qlinear")
    path = host_path() if path is None else path
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
    kb = acc.op.input_tensors()[1].shape[4].value     # reduction values per lane
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
    ako, aki = s[acc].split(ak, factor=kb)
    s[acc].reorder(ako, am, ajo, aji, aki)
    s[acc].unroll(am)
    s[acc].unroll(ajo)
    tensorize_lanes(s[acc], aji, aki, path)
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
