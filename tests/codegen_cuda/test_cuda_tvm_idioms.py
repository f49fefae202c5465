"""TVM's reduction tutorial, ported with renames only, on numba's CUDA simulator."""
import numpy as np

import te


def test_cross_thread_rfactor_reduction_and_imported_module_source():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    xo, xi = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    s[B].set_store_predicate(tx.var.equal(0))
    fcuda = te.build(s, [A, B], "cuda")
    assert "@cuda.jit" in fcuda.imported_modules[0].get_source()
    dev = te.cuda(0)
    a = te.nd.array(np.random.uniform(size=(37, 41)).astype(A.dtype), dev)
    b = te.nd.array(np.zeros(37, dtype=B.dtype), dev)
    fcuda(a, b)
    te.testing.assert_allclose(b.numpy(), np.sum(a.numpy(), axis=1), rtol=1e-4)
