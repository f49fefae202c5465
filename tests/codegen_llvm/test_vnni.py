"""TVM's x86 int8 intrinsics (te.topi.x86.tensor_intrin) tensorizing an int8 dense in TVM's
packed weight layout; exact against numpy's int32 product. The runs need the instructions
(skipped on a host without them); the refusals on a host without them run everywhere, with
the host's features faked."""
import numpy as np
import pytest

import te
from codegen_llvm import CodegenError
from te.topi.x86 import tensor_intrin

RNG = np.random.default_rng(5)
HOST = tensor_intrin.host_features()
VNNI = {"avx512f", "avx512vnni"} <= HOST
needs_vnni = pytest.mark.skipif(not VNNI, reason="the host CPU has no AVX-512 VNNI")


def dense(M, N, K, lanes):
    A = te.placeholder((M, K), dtype="uint8", name="A")
    W = te.placeholder((N // lanes, K // 4, lanes, 4), dtype="int8", name="W")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(
        A[i, k].astype("int32") *
        W[j // lanes, k // 4, j % lanes, k % 4].astype("int32"), axis=k), name="C")
    return A, W, C


def schedule(C, intrin, lanes, rows=1):
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    io, ii = s[C].split(i, factor=rows)
    jo, ji = s[C].split(j, factor=lanes)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(io, jo, ko, ii, ji, ki)
    s[C].unroll(ii)
    s[C].tensorize(ji, intrin)
    return s


def run(f, M, N, K, lanes, a_max=256, b_lo=-128, b_hi=128):
    a = RNG.integers(0, a_max, (M, K)).astype("uint8")
    b = RNG.integers(b_lo, b_hi, (N, K)).astype("int8")
    packed = b.reshape(N // lanes, lanes, K // 4, 4).transpose(0, 2, 1, 3).copy()
    c = np.full((M, N), 123456, "int32")
    f(a, packed, c)
    np.testing.assert_array_equal(c, a.astype("int32") @ b.astype("int32").T)


@needs_vnni
def test_dot_16x1x16_cascadelake_dense_exact():
    M, N, K = 8, 32, 64
    A, W, C = dense(M, N, K, 16)
    s = schedule(C, tensor_intrin.dot_16x1x16_uint8_int8_int32_cascadelake(), 16, rows=4)
    f = te.build(s, [A, W, C])
    assert "vpdpbusd" in f.get_source("asm")
    run(f, M, N, K, 16)


@needs_vnni
def test_dispatch_picks_vnni_and_whole_reduction_uses_body():
    """K = 4: the reduction is wholly inside the nest, so the intrinsic's body (from zero)
    computes each output; no reset."""
    intrin = tensor_intrin.dot_16x1x16_uint8_int8_int32()
    assert intrin.name == "dot_16x1x16_uint8_int8_int32_cascadelake"
    M, N, K = 3, 16, 4
    A, W, C = dense(M, N, K, 16)
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=16)
    s[C].tensorize(ji, intrin)
    text = str(te.lower(s, [A, W, C]))
    assert text.count("tw_vstore") == 1 and "broadcast(0, 16)" in text
    run(te.build(s, [A, W, C]), M, N, K, 16)


@pytest.mark.skipif(not ({"avxvnni"} <= HOST or {"avx512vnni", "avx512vl"} <= HOST),
                    reason="the host CPU has neither AVX-VNNI nor AVX-512 VNNI + VL")
def test_dot_8x1x8_avxvnni_exact():
    M, N, K = 4, 24, 32
    A, W, C = dense(M, N, K, 8)
    s = schedule(C, tensor_intrin.dot_8x1x8_uint8_int8_int32_avxvnni(), 8, rows=2)
    run(te.build(s, [A, W, C]), M, N, K, 8)


@pytest.mark.skipif("avx512bw" not in HOST, reason="the host CPU has no AVX-512BW")
def test_dot_16x1x16_skylake_exact_without_saturation():
    """vpmaddubsw saturates a pair's int16 sum (as in TVM); values whose pairs stay below
    2^15 are exact."""
    M, N, K = 4, 16, 16
    A, W, C = dense(M, N, K, 16)
    s = schedule(C, tensor_intrin.dot_16x1x16_uint8_int8_int32_skylake(), 16)
    run(te.build(s, [A, W, C]), M, N, K, 16, a_max=100, b_lo=-100, b_hi=100)


def _fake(monkeypatch, features):
    monkeypatch.setattr(tensor_intrin, "host_features", lambda: set(features))


def test_host_without_vnni_is_refused(monkeypatch):
    _fake(monkeypatch, {"sse4.2", "avx2", "avx512f"})
    with pytest.raises(te.TEError, match="avx512f\\+avx512vnni"):
        tensor_intrin.dot_16x1x16_uint8_int8_int32_cascadelake()
    with pytest.raises(te.TEError, match="avxvnni or avx512vnni\\+avx512vl"):
        tensor_intrin.dot_8x1x8_uint8_int8_int32_avxvnni()
    with pytest.raises(te.TEError, match="neither AVX-512 VNNI"):
        tensor_intrin.dot_16x1x16_uint8_int8_int32()


def test_dispatch_falls_back_to_skylake(monkeypatch):
    _fake(monkeypatch, {"avx512f", "avx512bw"})
    assert tensor_intrin.dot_16x1x16_uint8_int8_int32().name == \
        "dot_16x1x16_uint8_int8_int32_skylake"


def test_avxvnni_host_gets_the_avxvnni_instruction(monkeypatch):
    _fake(monkeypatch, {"avx2", "avxvnni"})
    intrin = tensor_intrin.dot_8x1x8_uint8_int8_int32_avxvnni()
    # LLVM has no llvm.x86.avxvnni.* intrinsics (such a call is an unresolved symbol): the
    # 256-bit AVX-512 VNNI intrinsic, selected as the VEX instruction (the test below)
    assert "llvm.x86.avx512.vpdpbusd.256" in str(intrin.body)


def test_target_without_vnni_is_a_codegen_error(monkeypatch):
    """The declaration is made (features faked), but the build's target lacks VNNI: a
    CodegenError naming the feature, not LLVM's abort in instruction selection."""
    _fake(monkeypatch, {"avx512f", "avx512vnni"})
    M, N, K = 2, 16, 8
    A, W, C = dense(M, N, K, 16)
    s = schedule(C, tensor_intrin.dot_16x1x16_uint8_int8_int32_cascadelake(), 16)
    with pytest.raises(CodegenError, match="avx512vnni"):
        te.build(s, [A, W, C], target="llvm -mcpu=x86-64 -mattr=+avx2")


@needs_vnni
def test_tvm_style_intrinsic_source_runs_with_renames():
    """An intrinsic written as TVM's x86 code is (tvm.tir -> te.tir): call_intrin
    'tir.reinterpret', astype to a vector, const of a vector dtype, call_llvm_pure_intrin."""
    data = te.placeholder((4,), dtype="uint8", name="data")
    kernel = te.placeholder((16, 4), dtype="int8", name="kernel")
    k = te.reduce_axis((0, 4), name="k")
    C = te.compute((16,), lambda i: te.sum(data[k].astype("int32") *
                                           kernel[i, k].astype("int32"), axis=k), name="C")
    a_buffer = te.tir.decl_buffer(data.shape, dtype="uint8", name="a_buffer", offset_factor=1,
                                  strides=[1])
    b_buffer = te.tir.decl_buffer(kernel.shape, dtype="int8", name="b_buffer", offset_factor=1,
                                  strides=[te.var("ldw"), 1])

    def _intrin_func(ins, outs):
        def _instr(index):
            ib = te.tir.ir_builder.create()
            if index == 1:
                ib.emit(outs[0].vstore(0, te.tir.const(0, "int32x16")))
                return ib.get()
            a_int8 = ins[0].vload([0], "uint8x4")
            re_int32 = te.tir.call_intrin("int32", "tir.reinterpret", a_int8)
            vec_ai32 = re_int32.astype("int32x16")
            vec_b = ins[1].vload([0, 0], "int8x64")
            vec_bi32 = te.tir.call_intrin("int32x16", "tir.reinterpret", vec_b)
            vec_c = outs[0].vload([0], "int32x16") if index == 2 else te.tir.const(0, "int32x16")
            quad_reduction = te.tir.call_llvm_pure_intrin(
                "int32x16", "llvm.x86.avx512.vpdpbusd.512", te.tir.const(3, "uint32"),
                vec_c, vec_ai32, vec_bi32)
            ib.emit(outs[0].vstore(0, quad_reduction))
            return ib.get()
        return _instr(0), _instr(1), _instr(2)
    intrin = te.decl_tensor_intrin(C.op, _intrin_func, binds={data: a_buffer, kernel: b_buffer},
                                   default_buffer_params={"offset_factor": 1})
    M, N, K = 4, 32, 32
    A, W, Cd = dense(M, N, K, 16)
    run(te.build(schedule(Cd, intrin, 16, rows=2), [A, W, Cd]), M, N, K, 16)


def test_dot_8x1x8_for_an_avxvnni_only_cpu_is_the_vex_instruction(monkeypatch):
    """An AVX-VNNI host without AVX-512 (Alder Lake .. Arrow Lake, Zen 5 desktop parts): the
    8-lane intrinsic is LLVM's llvm.x86.avx512.vpdpbusd.256, which LLVM emits as the VEX
    ``{vex} vpdpbusd`` on ymm registers (there are no llvm.x86.avxvnni.* intrinsics). Built,
    not run: this host may not have AVX-VNNI."""
    _fake(monkeypatch, {"avx2", "avxvnni"})
    M, N, K = 4, 24, 32
    A, W, C = dense(M, N, K, 8)
    s = schedule(C, tensor_intrin.dot_8x1x8_uint8_int8_int32_avxvnni(), 8, rows=2)
    asm = te.build(s, [A, W, C], target="llvm -mcpu=alderlake -mattr=+avx2,+avxvnni") \
        .get_source("asm")
    assert "{vex}" in asm and "vpdpbusd" in asm and "ymm" in asm
    assert "zmm" not in asm


def test_named_cpu_without_mattr_gets_its_own_features(monkeypatch):
    """-mcpu=<name> alone: the CPU's features are LLVM's (the feature string is empty), so an
    intrinsic the CPU has builds (icelake-server has AVX-512 VNNI), and one it lacks is a
    CodegenError naming the feature and the CPU (haswell has no VNNI)."""
    _fake(monkeypatch, {"avx512f", "avx512vnni"})
    M, N, K = 2, 16, 8
    A, W, C = dense(M, N, K, 16)
    s = schedule(C, tensor_intrin.dot_16x1x16_uint8_int8_int32_cascadelake(), 16)
    asm = te.build(s, [A, W, C], target="llvm -mcpu=icelake-server").get_source("asm")
    assert "vpdpbusd" in asm and "zmm" in asm
    s = schedule(C, tensor_intrin.dot_16x1x16_uint8_int8_int32_cascadelake(), 16)
    with pytest.raises(CodegenError,
                       match=r"needs the CPU feature\(s\) avx512vnni, which -mcpu=haswell"):
        te.build(s, [A, W, C], target="llvm -mcpu=haswell")
