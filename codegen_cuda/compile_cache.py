"""PTX of generated kernels: cached on disk across processes, compiled in parallel workers.

``ptx_of(source, kernels, cc)`` is the PTX of each kernel of one build's source (the
``emit_source`` text and its ``emit.Kernel`` list); ``ptx_many(jobs, cc, workers)`` the PTX of
the kernels of many builds, each kernel a separate job for a pool of worker processes (a
tiled kernel takes seconds in numba and NVVM; independent kernels compile side by side).

Each kernel's PTX is kept in ``<cache>/cuda/ptx/<sha256>.ptx`` (``TW_CACHE_DIR``,
``te.runtime.cache_dir``), the key over the kernel's source text, name, argument types,
launch bounds, compute capability and the numba version, so that a later process, or a
later build of the same kernel, reads it instead of compiling. Identical kernels among the
jobs compile once.
"""
from __future__ import annotations

import concurrent.futures as futures
import hashlib
import json
import os
import time

from te.runtime.cache_dir import get_cache_dir

__all__ = ["ptx_of", "ptx_many", "kernel_key", "default_workers"]


def _signature(kernel):
    from .module import _scalar
    return ([f"{_scalar(b.dtype)}[::1]" for b in kernel.buffers]
            + [_scalar(v.dtype) for v in kernel.scalars])


def _numba_version():
    try:
        import numba
        return numba.__version__
    except ImportError:             # pragma: no cover - numba is a dependency
        return "none"


def kernel_key(source, kernel, cc) -> str:
    """The cache key of ``kernel`` (defined in ``source``) compiled for ``cc``."""
    from .emit import jit_takes_launch_bounds
    bounds = kernel.launch_bounds if jit_takes_launch_bounds() else None
    text = json.dumps([source, kernel.name, _signature(kernel), list(bounds or ()), list(cc),
                       _numba_version()])
    return hashlib.sha256(text.encode()).hexdigest()


def _path(key):
    root = get_cache_dir()
    return os.path.join(root, "cuda", "ptx", f"{key}.ptx") if root else None


def _read(key):
    path = _path(key)
    if path is None:
        return None
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def write_atomic(path, text):
    """Write ``text`` to ``path`` through a temporary file and ``os.replace`` (atomic: other
    processes see all of it or nothing); raises OSError."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _write(key, ptx):
    path = _path(key)
    if path is None:
        return
    try:
        write_atomic(path, ptx)
    except OSError:
        pass


_namespaces = {}        # source -> the executed namespace (per process)


def _compile(source, kernel, cc):
    """(PTX, seconds) of one kernel, compiled here (numba's compile_ptx)."""
    from numba import cuda, types
    from .emit import jit_takes_launch_bounds
    from .module import _load, _scalar
    t0 = time.perf_counter()
    g = _namespaces.get(source)
    if g is None:
        g = _namespaces[source] = _load(source, "op")
    sig = [getattr(types, _scalar(b.dtype))[::1] for b in kernel.buffers]
    sig += [getattr(types, _scalar(v.dtype)) for v in kernel.scalars]
    bounds = dict(launch_bounds=kernel.launch_bounds) if jit_takes_launch_bounds() else {}
    ptx, _ = cuda.compile_ptx(g[kernel.name].py_func, tuple(sig), cc=cc, **bounds)
    return ptx, time.perf_counter() - t0


def _job(args):
    """Worker: compile one kernel, store it in the cache, return (key, PTX, seconds)."""
    key, source, kernel, cc = args
    ptx, seconds = _compile(source, kernel, cc)
    _write(key, ptx)
    return key, ptx, seconds


def ptx_of(source, kernels, cc=(9, 0), use_cache=True):
    """[PTX] of ``kernels`` of ``source``, from the cache where present (compiled here)."""
    out = []
    for k in kernels:
        key = kernel_key(source, k, cc)
        ptx = _read(key) if use_cache else None
        if ptx is None:
            ptx, _ = _compile(source, k, cc)
            if use_cache:
                _write(key, ptx)
        out.append(ptx)
    return out


def default_workers() -> int:
    """Worker processes for parallel compiles: ``TW_COMPILE_WORKERS``, else the CPU count."""
    value = os.environ.get("TW_COMPILE_WORKERS")
    if value:
        n = int(value)
        if n < 1:
            raise ValueError(f"TW_COMPILE_WORKERS must be a positive integer, got {value!r}")
        return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:          # pragma: no cover - not Linux
        return os.cpu_count() or 1


def ptx_many(jobs, cc=(9, 0), workers=None, use_cache=True, log=None):
    """PTX of many builds' kernels: ``jobs`` is [(source, kernels)] or [(source, kernels,
    label)] (the label names the build in ``log``); returns [[PTX per kernel] per job].
    Cached kernels are read; the others (each distinct one once) compile in ``workers``
    processes (``default_workers()``; 1: in this process). ``log(name, seconds,
    cached)`` is called per kernel as it completes."""
    workers = default_workers() if workers is None else int(workers)
    if workers < 1:
        raise ValueError(f"ptx_many: workers must be a positive integer, got {workers}")
    results, todo = {}, {}
    keys = []
    names = {}
    for job in jobs:
        source, kernels = job[0], job[1]
        label = job[2] if len(job) > 2 else None
        row = []
        for k in kernels:
            key = kernel_key(source, k, cc)
            row.append(key)
            if key in results or key in todo:
                continue
            names[key] = f"{label}: {k.name}" if label else k.name
            ptx = _read(key) if use_cache else None
            if ptx is not None:
                results[key] = ptx
                if log:
                    log(names[key], 0.0, True)
            else:
                todo[key] = (key, source, k, cc)
        keys.append(row)
    if todo and workers == 1:
        for args in todo.values():
            key, ptx, seconds = _job(args) if use_cache else (args[0], *_compile(*args[1:]))
            results[key] = ptx
            if log:
                log(names[key], seconds, False)
    elif todo:
        # spawned workers: a forked numba/CUDA state is not safe to reuse; the longest
        # sources first, so that the slow tiled kernels do not finish last
        order = sorted(todo.values(), key=lambda a: -len(a[1]))
        import multiprocessing
        ctx = multiprocessing.get_context("spawn")
        with futures.ProcessPoolExecutor(min(workers, len(order)), mp_context=ctx,
                                         initializer=_init_worker,
                                         initargs=(get_cache_dir() if use_cache else None,
                                                   os.environ.get("NUMBA_ENABLE_CUDASIM"))) as ex:
            pending = [ex.submit(_job, a) for a in order]
            for fut in futures.as_completed(pending):
                key, ptx, seconds = fut.result()
                results[key] = ptx
                if log:
                    log(names[key], seconds, False)
    return [[results[key] for key in row] for row in keys]


def _init_worker(cache_dir, cudasim):
    from te.runtime.cache_dir import set_cache_dir
    set_cache_dir(cache_dir)
    if cudasim is not None:
        os.environ["NUMBA_ENABLE_CUDASIM"] = cudasim
