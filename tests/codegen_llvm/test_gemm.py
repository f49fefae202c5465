"""GEMM through the schedule steps of TVM's 'How to optimize GEMM on CPU'."""
import numpy as np
import pytest

import te
from te.testing import verify_schedule


def _gemm(M, K, N):
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    C = te.compute((M, N), lambda m, n: te.sum(A[m, k] * B[k, n], axis=k), name="C")
    return A, B, C, k


@pytest.mark.parametrize("M,K,N", [(64, 64, 64), (37, 29, 45)])
def test_tiled_vectorized_parallel(M, K, N):
    A, B, C, k = _gemm(M, K, N)
    s = te.create_schedule(C.op)
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 16)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(mo, no, ko, mi, ki, ni)
    s[C].vectorize(ni)
    s[C].parallel(mo)
    rng = np.random.default_rng(0)
    a = rng.random((M, K), dtype=np.float32)
    b = rng.random((K, N), dtype=np.float32)
    verify_schedule(s, [A, B, C], [a, b], [np.empty((M, N), "float32")], lambda a, b: a @ b,
                    rtol=1e-4)


def test_symbolic_shape_binds_from_arrays():
    n = te.var("n")
    A, B, C, k = _gemm(n, n, n)
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 8)
    s[C].vectorize(ji)
    f = te.build(s, [A, B, C])
    for size in (5, 16, 19):
        a = np.random.rand(size, size).astype("float32")
        b = np.random.rand(size, size).astype("float32")
        c = np.empty((size, size), "float32")
        f(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4)


def test_cache_write_pack_parallel():
    M = K = N = 64
    bn = 16
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    packedB = te.compute((N // bn, K, bn), lambda bigN, k, littleN: B[k, bigN * bn + littleN],
                         name="packedB")
    C = te.compute((M, N), lambda m, n: te.sum(A[m, k] * packedB[n // bn, k, n % bn], axis=k),
                   name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    s[CC].compute_at(s[C], no)
    mc, nc = s[CC].op.axis
    (kaxis,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(kaxis, factor=4)
    s[CC].reorder(ko, mc, ki, nc)
    s[CC].vectorize(nc)
    s[CC].unroll(ki)
    bigN, _, littleN = s[packedB].op.axis
    s[packedB].vectorize(littleN)
    s[packedB].parallel(bigN)
    s[C].parallel(mo)
    a = np.random.rand(M, K).astype("float32")
    b = np.random.rand(K, N).astype("float32")
    mod = verify_schedule(s, [A, B, C], [a, b], [np.empty((M, N), "float32")],
                          lambda a, b: a @ b, rtol=1e-4)
    ll = mod.get_source("ll")
    assert "<16 x float>" in ll or "<8 x float>" in ll
    assert "GOMP_parallel" in ll
