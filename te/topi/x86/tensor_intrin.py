"""x86 int8 dot-product tensor intrinsics (TVM's ``topi.x86.tensor_intrin``).

Each declares ``C[i] = sum_k int32(data[k]) * int32(kernel[i, k])`` over 4 uint8 values of
``data`` and ``lanes`` rows of 4 int8 values of ``kernel`` (TVM's packed weight layout: the
4 reduction values of each output lane are adjacent), and computes it with one
``vpdpbusd`` (VNNI: per 32-bit lane, 4 products of unsigned and signed bytes summed into the
accumulator):

- ``dot_16x1x16_uint8_int8_int32_cascadelake()``: 16 lanes, AVX-512 VNNI
  (``llvm.x86.avx512.vpdpbusd.512``);
- ``dot_8x1x8_uint8_int8_int32_avxvnni()``: 8 lanes, AVX-VNNI or AVX-512 VNNI with VL (both
  ``llvm.x86.avx512.vpdpbusd.256``: LLVM emits ``{vex} vpdpbusd`` on an AVX-VNNI host);
- ``dot_16x1x16_uint8_int8_int32_skylake()``: 16 lanes on AVX-512BW without VNNI
  (``vpmaddubsw`` + ``vpmaddwd``; as in TVM, the pairwise int16 sums saturate when both
  products of a pair are near 255 * 127);
- ``dot_16x1x16_uint8_int8_int32()``: the best of these for the host.

The CPU features come from LLVM's view of the host (``host_features()``); an intrinsic the
host cannot run is refused with the features it needs. Each intrinsic gives ``body`` (the
whole 4-value reduction), ``reduce_reset`` (zero) and ``reduce_update`` (accumulate), so the
reduction axis may be split with its outer part outside the tensorized loop.
"""
from __future__ import annotations

from te import const, compute, decl_tensor_intrin, placeholder, reduce_axis, sum as te_sum, var
from te.intrin import call_llvm_pure_intrin, reinterpret
from te.tensor import TEError
from te.tir import decl_buffer

NUM_INT8 = 4        # int8 values per int32 lane


def host_features() -> set:
    """The CPU features (LLVM's names: avx512vnni, avxvnni, ...) of this host."""
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    return {name for name, on in llvm.get_host_cpu_features().items() if on}


def _require(name, *options):
    """The first option (a tuple of features) that the host has, else an error naming them."""
    have = host_features()
    for feats in options:
        if set(feats) <= have:
            return feats
    need = " or ".join("+".join(f) for f in options)
    raise TEError(f"topi.x86.tensor_intrin.{name}: this host's CPU lacks {need} (LLVM "
                  "feature names; VNNI is on Intel Cascade Lake / Ice Lake and later, AMD "
                  "Zen 4 and later); use a schedule without tensorize, or "
                  "dot_16x1x16_uint8_int8_int32(), which picks what the host has")


def _declare(lanes, name, make_instr):
    data = placeholder((NUM_INT8,), dtype="uint8", name="data")
    kernel = placeholder((lanes, NUM_INT8), dtype="int8", name="kernel")
    k = reduce_axis((0, NUM_INT8), name="k")
    C = compute((lanes,), lambda i: te_sum(data[k].astype("int32") *
                                           kernel[i, k].astype("int32"), axis=k), name="C")
    a_buffer = decl_buffer(data.shape, dtype="uint8", name="a_buffer", offset_factor=1,
                           strides=[1])
    b_buffer = decl_buffer(kernel.shape, dtype="int8", name="b_buffer", offset_factor=1,
                           strides=[var("ldw"), 1])

    def intrin_func(ins, outs):
        vec = f"int32x{lanes}"
        a4 = ins[0].vload([0], "uint8x4")
        a_bcast = reinterpret("int32", a4).astype(vec)        # the 4 bytes in every lane
        b = ins[1].vload([0, 0], f"int8x{lanes * NUM_INT8}")
        zero = const(0, vec)
        body = outs[0].vstore(0, make_instr(zero, a_bcast, b, vec))
        reset = outs[0].vstore(0, zero)
        update = outs[0].vstore(0, make_instr(outs[0].vload([0], vec), a_bcast, b, vec))
        return body, reset, update

    return decl_tensor_intrin(C.op, intrin_func, name=name,
                              binds={data: a_buffer, kernel: b_buffer},
                              default_buffer_params={"offset_factor": 1})


def _vpdpbusd(llvm_name):
    def instr(acc, a, b, vec):
        return call_llvm_pure_intrin(vec, llvm_name, const(3, "uint32"), acc, a,
                                     reinterpret(vec, b))
    return instr


def dot_16x1x16_uint8_int8_int32_cascadelake():
    """16 int32 lanes, each the dot product of data[0:4] (uint8) with kernel[lane, 0:4]
    (int8), by AVX-512 VNNI's ``vpdpbusd``."""
    _require("dot_16x1x16_uint8_int8_int32_cascadelake", ("avx512f", "avx512vnni"))
    return _declare(16, "dot_16x1x16_uint8_int8_int32_cascadelake",
                    _vpdpbusd("llvm.x86.avx512.vpdpbusd.512"))


def dot_8x1x8_uint8_int8_int32_avxvnni():
    """8 int32 lanes (256-bit registers) by ``vpdpbusd``: AVX-VNNI, or AVX-512 VNNI + VL."""
    feats = _require("dot_8x1x8_uint8_int8_int32_avxvnni", ("avxvnni",),
                     ("avx512vnni", "avx512vl"))
    del feats   # one LLVM intrinsic for both: LLVM selects the VEX form on AVX-VNNI hosts
    return _declare(8, "dot_8x1x8_uint8_int8_int32_avxvnni",
                    _vpdpbusd("llvm.x86.avx512.vpdpbusd.256"))


def dot_16x1x16_uint8_int8_int32_skylake():
    """16 int32 lanes on AVX-512BW: ``vpmaddubsw`` (pairs of u8 x s8 summed, saturating to
    int16) then ``vpmaddwd`` with ones (pairs of int16 summed to int32)."""
    _require("dot_16x1x16_uint8_int8_int32_skylake", ("avx512bw",))

    def instr(acc, a, b, vec):
        pairs = call_llvm_pure_intrin("int16x32", "llvm.x86.avx512.pmaddubs.w.512",
                                      const(2, "uint32"), reinterpret("int8x64", a), b)
        quads = call_llvm_pure_intrin(vec, "llvm.x86.avx512.pmaddw.d.512", const(2, "uint32"),
                                      pairs, const(1, "int16x32"))
        return quads if acc.dtype == vec and _is_zero(acc) else quads + acc
    return _declare(16, "dot_16x1x16_uint8_int8_int32_skylake", instr)


def _is_zero(e) -> bool:
    return getattr(e, "value", None) == 0


def dot_16x1x16_uint8_int8_int32():
    """The 16-lane int8 dot product with the best instructions this host has (VNNI, else
    AVX-512BW), as TVM's dispatch."""
    have = host_features()
    if {"avx512f", "avx512vnni"} <= have:
        return dot_16x1x16_uint8_int8_int32_cascadelake()
    if "avx512bw" in have:
        return dot_16x1x16_uint8_int8_int32_skylake()
    raise TEError("topi.x86.tensor_intrin.dot_16x1x16_uint8_int8_int32: this host's CPU has "
                  "neither AVX-512 VNNI (avx512vnni) nor AVX-512BW (avx512bw); use "
                  "dot_8x1x8_uint8_int8_int32_avxvnni() on AVX-VNNI CPUs, or a schedule "
                  "without tensorize")
