"""TVM's idioms around a GPU module (the reduction tutorial's), on numba's CUDA simulator: the
kernel source through ``imported_modules``, arguments as ``te.nd`` arrays on ``te.cuda(0)``."""
import numpy as np

import te
import gpu_cases


def test_cross_thread_rfactor_reduction_and_imported_module_source():
    s, (A, B), (a,), (b,), ref = gpu_cases.row_sum_cross_thread()
    fcuda = te.build(s, [A, B], "cuda")
    assert "@cuda.jit" in fcuda.imported_modules[0].get_source()
    dev = te.cuda(0)
    a_nd, b_nd = te.nd.array(a, dev), te.nd.array(np.zeros_like(b), dev)
    fcuda(a_nd, b_nd)
    te.testing.assert_allclose(b_nd.numpy(), ref(a), rtol=1e-4)
