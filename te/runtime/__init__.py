"""te.runtime: what a built function needs at run time, below both backends (TVM's
``tvm.runtime``).

The calling convention (``Signature``: argument checks, size variables, call-time
preconditions, the messages of failed checks), ``ArgumentError``, the thread pool of parallel
loops, workspace arenas, ``BenchmarkResult`` and the compile-cache directory are shared by
``codegen_llvm`` and ``codegen_cuda``; ``load_module`` loads a library that ``export_library``
wrote, in a process that never loads the compiler (LLVM, ``schedule``). Importing this package
imports neither the compiler nor numba.
"""
from .bench import BenchmarkResult
from .cache_dir import get_cache_dir, set_cache_dir
from .describe import shape_vars
from .errors import ArgumentError, LibraryError
from .info import FunctionInfo
from .library import Module, load_module
from .signature import Signature, as_array_view, dtype_label
from .threads import get_num_threads, set_num_threads


__all__ = ["ArgumentError", "LibraryError", "BenchmarkResult", "FunctionInfo", "Module",
           "Signature", "as_array_view", "dtype_label", "get_cache_dir", "set_cache_dir",
           "get_num_threads", "set_num_threads", "load_module", "shape_vars"]
