"""tensorweave's tensor-expression language, with classic TVM's names.

    import te
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    f = te.build(s, [A, B])

``create_schedule``, ``lower`` and ``build`` are facades over the ``schedule`` and ``codegen_*``
packages, imported on first use so that the language itself stays a leaf package.
"""
from .dtypes import canonical as _canonical_dtype
from .expr import (Expr, ExprOp, IntImm, FloatImm, Var, Cast, Call, Reduce, ProducerLoad,
                   const, floordiv, floormod, truncdiv, truncmod, all_ as all, any_ as any,
                   select)
from .tensor import (IterVar, Range, Tensor, Operation, PlaceholderOp, ComputeOp, TEError,
                     placeholder, compute, reduce_axis, thread_axis, var, size_var)
from .scan import ScanOp, scan
from .extern import (ExternOp, ExternBuffer, ExternError, extern, call_packed, register_func,
                     get_global_func)
from .reduce import comm_reducer, sum, max, min, prod, min_value, max_value, CommReducer
from .intrin import (exp, exp2, exp10, log, log2, log10, log1p, sqrt, rsqrt, tanh, sigmoid, erf,
                     sin, cos, tan, asin, acos, atan, sinh, cosh, floor, ceil, round, trunc,
                     nearbyint, abs, power, pow, if_then_else, isnan, isinf, isfinite,
                     fmod, popcount, clz)
from .intrin import call_llvm_intrin, call_llvm_pure_intrin, reinterpret
from .tensor_intrin import decl_tensor_intrin, TensorIntrin
from .tensor_compute import TensorComputeOp, TensorIntrinCall
from .autodiff import gradient

indexdiv = floordiv
indexmod = floormod

__version__ = "0.1.0"


def create_schedule(ops):
    """A schedule for the given output operation(s); ``s[T]`` is the stage of tensor T."""
    from schedule import create_schedule as make
    return make(ops)


def lower(sch, args, name="main", simple_mode=None, binds=None, target=None):
    """Lower a schedule to the loop IR; ``print()`` the result to see the loop nest.

    ``target="cuda"`` shows the nest as the GPU backend compiles it (no SIMD vectorization).
    """
    from schedule import lower as lower_
    return lower_(sch, args, name=name, target=target)


def build(sch, args=None, target="llvm", target_host=None, name="default_function",
          binds=None):
    """Compile a schedule (or a lowered function) into a callable module for ``target``.

    For ``target="llvm"`` the compiled code is kept in an on-disk cache keyed by the emitted LLVM
    IR and the target, so building the same function again, in any process, skips LLVM's
    optimization and code generation. The cache lives in ``TW_CACHE_DIR`` (default
    ``~/.cache/tensorweave``; ``TW_CACHE_DIR=""`` turns it off) or wherever
    ``codegen_llvm.cache.set_cache_dir(path)`` points (``None`` turns it off).
    """
    from .target import Target
    tgt = Target(target)
    if tgt.kind.name == "llvm":
        from codegen_llvm import build as build_llvm
        return build_llvm(sch, args, tgt, name)
    if tgt.kind.name == "cuda":
        try:
            from codegen_cuda import build as build_cuda
        except ImportError as err:
            raise NotImplementedError(f"target 'cuda' is not available: {err}") from err
        return build_cuda(sch, args, tgt, name)
    raise ValueError(f"unknown target {target!r}; use 'llvm' (CPU) or 'cuda'")


def __getattr__(name):
    if name == "schedule":              # tvm.te.schedule: InferBound, ScheduleOps, Fuse, ...
        import schedule
        return schedule
    if name in ("ScheduleError", "Schedule", "Stage"):
        import schedule
        return getattr(schedule, name)
    if name in ("nd", "testing", "tir", "target", "runtime"):
        import importlib
        return importlib.import_module(f"te.{name}")
    if name in ("device", "cpu", "cuda", "gpu", "Device"):
        from . import nd
        return getattr(nd, "cuda" if name == "gpu" else name)     # tvm.gpu: old name of cuda
    if name in ("set_num_threads", "get_num_threads"):
        import codegen_llvm
        return getattr(codegen_llvm, name)
    if name in ("topi", "arith"):       # tvm.topi (the operator library), tvm.arith
        import importlib
        return importlib.import_module(f"te.{name}")
    raise AttributeError(f"module 'te' has no attribute {name!r}")
