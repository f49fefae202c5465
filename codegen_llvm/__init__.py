"""CPU backend: loop IR -> LLVM IR (llvmlite) -> machine code -> a callable on numpy arrays."""
from __future__ import annotations

from llvmlite import ir

from te.expr import Var
from te.runtime.describe import shape_vars as _shape_vars

from . import cache
from .emit import CodegenError, Emitter
from .jit import JITModule, has_openmp, mvec_isas, target_options
from .module import BenchmarkResult, Module
from .runtime import ArgumentError, _gomp, get_num_threads, set_num_threads

__all__ = ["build", "Module", "ArgumentError", "CodegenError", "set_num_threads",
           "get_num_threads", "BenchmarkResult"]


def _check_free_vars(func, shape_vars):
    from schedule.analysis import uses
    known = set(p for p in func.params if isinstance(p, Var)) | set(shape_vars)
    for var in uses(func.body)[0]:
        if var not in known:
            raise CodegenError(f"build {func.name}: variable {var.name} is used but not bound; "
                               "pass it in the argument list (te.build(s, [..., "
                               f"{var.name}]))")


def build(sch, args, target, name="default_function"):
    """Lower (if needed) and compile for the CPU, or load from the compile cache; a Module."""
    from schedule import lower
    from schedule.ir import PrimFunc
    func = sch if isinstance(sch, PrimFunc) else lower(sch, args, name=name)
    _check_packed_functions(func)
    shape_vars = _shape_vars(func)
    _check_free_vars(func, shape_vars)
    options = target_options(target.mcpu, tuple(target.mattr))
    module = ir.Module(name=func.name)
    module.triple = options.triple
    _gomp()         # loads libgomp and applies TW_NUM_THREADS before the first parallel call
    emitter = Emitter(module, parallel=has_openmp(), mvec=mvec_isas(options.features),
                      features=options.features, cpu=options.cpu)
    emitter.emit_function(func, shape_vars)
    source = str(module)
    jit = JITModule(source, options)
    workspace = emitter.workspace_bytes if emitter.workspace is not None else None
    return Module(func, shape_vars, jit, source, target, workspace, emitter.packed_sites,
                  emitter.error_sites)


def _check_packed_functions(func):
    """Every function that a ``te.call_packed`` names must be registered."""
    from schedule.analysis import packed_calls
    from te.extern import get_global_func
    for name in dict.fromkeys(c.args[0].value for c in packed_calls(func.body)):
        if get_global_func(name, allow_missing=True) is None:
            raise CodegenError(f"build {func.name}: te.call_packed calls {name!r}, but no "
                               f"function is registered under that name; register it with "
                               f"@te.register_func({name!r}) before te.build")
