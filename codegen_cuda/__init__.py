"""NVIDIA GPU backend: loop IR -> numba.cuda kernels (source you can read) -> launches."""
from __future__ import annotations

import numpy as _np

from .emit import CudaCodegenError, emit_source
from .module import CudaModule, compile_ptx, kernels_ptx, simulator

# numba-cuda 0.30 registers an overload of np.row_stack when its CUDA target loads (at the
# first compile or cache load); numpy 2.5 removed that alias of np.vstack, and the load then
# fails with "module 'numpy' has no attribute 'row_stack'" (seen with numpy 2.5.2 on an
# H200 machine: GPU training stopped at its first kernel). Give numpy back the alias it had.
if not hasattr(_np, "row_stack"):
    _np.row_stack = _np.vstack

__all__ = ["build", "CudaModule", "CudaCodegenError", "compile_ptx", "kernels_ptx", "simulator"]


def build(sch, args, target, name="default_function"):
    """Lower (if needed) for the GPU and compile to numba.cuda kernels."""
    from te.runtime.describe import shape_vars
    from schedule import lower
    from schedule.ir import PrimFunc
    func = sch if isinstance(sch, PrimFunc) else lower(sch, args, name=name, target="cuda")
    _refuse_extern(func)
    svars = shape_vars(func)
    source, kernels, names = emit_source(func, svars)
    return CudaModule(func, svars, source, kernels, names, target)


def _refuse_extern(func):
    """Extern stages call Python functions on host memory: not inside CUDA kernels."""
    from schedule.analysis import packed_calls
    calls = packed_calls(func.body)
    if calls:
        raise CudaCodegenError(f"build {func.name}: the extern call {calls[0].args[0].value!r} "
                               "(te.extern) "
                               "runs on the CPU only; build this schedule with "
                               "target='llvm'")
