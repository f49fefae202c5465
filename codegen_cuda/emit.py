"""Loop IR -> numba.cuda source: one ``@cuda.jit`` kernel per top-level loop nest, and a host
function that allocates intermediate buffers and launches the kernels in order.

Loops bound to ``blockIdx.*``/``threadIdx.*`` become reads of the hardware indices (guarded when
the launch dimension is larger than the loop); ``vthread`` loops run serially in each thread.
Buffers of scope "shared" become ``cuda.shared.array`` and are fenced with ``syncthreads``
around the statements that fill them; "local" buffers become ``cuda.local.array``.

The emitter is assembled from mixins: emit_expr.py (expressions and element indices),
emit_stmt.py (statements inside a kernel) and emit_calls.py (tensor intrinsics' calls);
this module holds the kernels, the host function, the launch limits and ``emit_source``.
"""
from __future__ import annotations

import functools
import inspect
import keyword
import os
import re

from te.expr import IntImm, Max
from schedule.analysis import stored_buffers, thread_loops, uses
from schedule.build_loops import SCAN_STEPS
from schedule.functor import post_order_visit
from schedule.interp import alloc_size
from schedule.ir import Allocate, Buffer, BufferLoad, BufferStore, For, ForKind, SeqStmt
from schedule.simplify import equal, simplify

from .emit_base import NUMBA_TYPE, CudaCodegenError
from .emit_calls import CudaCallEmitter
from .emit_expr import ExprEmitter
from .emit_stmt import StmtEmitter
# the other public names that emit.py defined before the split stay importable from here
from .emit_expr import INFIX, MATH, NAN_MINMAX, TO_INT  # noqa: F401
from .emit_stmt import HW  # noqa: F401

MAX_THREADS = 1024
MAX_SHARED_BYTES = 48 * 1024
# CUDA's limits on each launch dimension (x, y, z) of the block and of the grid
MAX_BLOCK_DIMS = (1024, 1024, 64)
MAX_GRID_DIMS = (2 ** 31 - 1, 65535, 65535)


class Kernel:
    """One generated kernel: its name, parameters and launch dimensions (as host exprs)."""

    def __init__(self, name, buffers, scalars, grid, block, shared_bytes, launch_bounds=None):
        self.name, self.buffers, self.scalars = name, buffers, scalars
        self.grid, self.block, self.shared_bytes = grid, block, shared_bytes
        self.launch_bounds = launch_bounds      # (threads per block[, min blocks per SM])


# names that the kernel source uses for itself (modules, builtins, the cast functions)
RESERVED = {"math", "cuda", "np", "range", "min", "max", "abs", "round", "float", "int", "bool",
            "host", "_launch", "fmax_nan", "fmin_nan", *NUMBA_TYPE.values()}


class _Names:
    def __init__(self):
        self.by_obj, self.taken = {}, set()

    def __call__(self, obj, hint):
        name = self.by_obj.get(obj)
        if name is None:
            base = re.sub(r"\W", "_", hint) or "v"
            if base[0].isdigit() or base in RESERVED or keyword.iskeyword(base):
                base = "v_" + base
            name, k = base, 1
            while name in self.taken:
                name, k = f"{base}_{k}", k + 1
            self.taken.add(name)
            self.by_obj[obj] = name
        return name


def simulator() -> bool:
    """Whether numba runs kernels on its CUDA simulator (NUMBA_ENABLE_CUDASIM=1)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"


@functools.lru_cache(maxsize=None)
def _numba_takes(api, option) -> bool:
    """Whether ``numba.cuda.<api>`` of this numba takes keyword ``option``: not on numba's
    simulator, nor in numba-cuda releases older than the option (the GPU machines may have
    one)."""
    if simulator():
        return False
    from numba import cuda
    fn = functools.reduce(getattr, api.split("."), cuda)
    return option in inspect.signature(fn).parameters


def jit_takes_launch_bounds() -> bool:
    return _numba_takes("jit", "launch_bounds")


def shared_takes_alignment() -> bool:
    return _numba_takes("shared.array", "alignment")


class CudaEmitter(ExprEmitter, StmtEmitter, CudaCallEmitter):
    def __init__(self, func):
        self.func = func
        self.externs = set()        # device functions of call_extern (emit_calls.py)
        self.align_shared = shared_takes_alignment()
        self.names = _Names()
        self.lines = []
        self.kernels = []
        self.host = []
        self.helpers = set()        # the NAN_MINMAX functions the kernels call

    # ------------------------------------------------------------------ kernels and host
    def kernel(self, stmt, host_indent):
        loops = thread_loops(stmt)
        if not loops:
            written = _written(stmt)
            raise CudaCodegenError(
                f"the loop nest that computes {', '.join(written) or 'a stage'} has no loop "
                "bound to a GPU thread; bind its loops, e.g. bx, tx = s[T].split(axis, "
                "factor=64); s[T].bind(bx, te.thread_axis('blockIdx.x')); "
                "s[T].bind(tx, te.thread_axis('threadIdx.x'))")
        self.launch = {}
        for loop in loops:
            tag = loop.thread_tag
            if tag == "vthread":
                continue
            cur = self.launch.get(tag)
            if cur is None:
                self.launch[tag] = loop.extent
            elif not equal(cur, loop.extent):
                self.launch[tag] = simplify(Max(cur, loop.extent, cur.dtype))
        free, bufs = uses(stmt)
        name = self.names(object(), f"{self.func.name}_kernel{len(self.kernels)}")
        params = [self.names(b, b.name) for b in bufs] + [self.names(v, v.name) for v in free]
        start = len(self.lines)
        self.inside_threads, self.shared_bytes, self.shared_bufs = 0, 0, []
        self.registers, self.declared = _registers(stmt), set()
        self.bases, self.bases_indent = None, 0
        self.emit(f"def {name}({', '.join(params)}):", 0)
        self.helpers = set()
        self.stmt(stmt, 1)
        self.lines[start + 1:start + 1] = self._helper_source()
        computes = ", ".join(_written(stmt))
        if self.shared_bytes > MAX_SHARED_BYTES:
            raise CudaCodegenError(f"kernel {name} (computes {computes}) uses "
                                   f"{self.shared_bytes} bytes of shared memory "
                                   f"({', '.join(self.shared_bufs)}), over the "
                                   f"{MAX_SHARED_BYTES // 1024} KB limit; use smaller tiles for "
                                   "the shared stages (smaller split factors for the loops they "
                                   "are computed at)")
        dims = {}
        for kind in ("blockIdx", "threadIdx"):
            dims[kind] = [self.launch.get(f"{kind}.{a}", IntImm(1, "int32")) for a in "xyz"]
        threads = simplify(dims["threadIdx"][0] * dims["threadIdx"][1] * dims["threadIdx"][2])
        known = {kind: [d.value if isinstance(d, IntImm) else None for d in dims[kind]]
                 for kind in dims}
        excess = launch_excess(known["threadIdx"], known["blockIdx"])
        if excess is not None:
            raise CudaCodegenError(f"kernel {name} (computes {computes}) launches "
                                   + launch_excess_message(excess, dims["threadIdx"]))
        bounds = _launch_bounds(loops, threads, computes)
        # numba's simulator (and numba-cuda before launch bounds existed) takes none
        self.lines[start:start] = [f"@cuda.jit(launch_bounds={bounds})"
                                   if bounds and jit_takes_launch_bounds() else "@cuda.jit"]
        self.lines.append("")
        grid = ", ".join(self.expr(d) for d in dims["blockIdx"])
        block = ", ".join(self.expr(d) for d in dims["threadIdx"])
        pad = "    " * host_indent
        self.host.append(f"{pad}_launch({name}, ({grid}), ({block}), {', '.join(params)})")
        self.kernels.append(Kernel(name, bufs, free, dims["blockIdx"], dims["threadIdx"],
                                   self.shared_bytes, bounds))

    def host_stmt(self, s, indent):
        if isinstance(s, SeqStmt):
            for x in s.seq:
                self.host_stmt(x, indent)
        elif isinstance(s, Allocate):
            buf = s.buffer
            size = self.expr(alloc_size(buf))
            self.host.append("    " * indent + f"{self.names(buf, buf.name)} = "
                             f"cuda.device_array({size}, np.{_np_name(buf.dtype)})")
            self.host_stmt(s.body, indent)
        elif isinstance(s, For) and s.kind != ForKind.THREAD_BINDING and _launches(s.body):
            # a loop around kernels (a scan's steps, say) runs on the host: its iterations
            # may depend on each other across blocks, which only separate launches order;
            # the kernels take its variable as a scalar argument
            var = self.names(s.loop_var, s.loop_var.name)
            start, end = self.expr(s.min), self.expr(simplify(s.min + s.extent))
            rng = end if start == "0" else f"{start}, {end}"
            self.host.append("    " * indent + f"for {var} in range({rng}):")
            self.host_stmt(s.body, indent + 1)
        else:
            scan = [v for k, v in getattr(s, "annotations", ()) if k == SCAN_STEPS]
            if scan:
                raise CudaCodegenError(
                    f"a step of scan {scan[0]} computes {', '.join(_written(s.body))}, and not "
                    "every stage of it is bound to GPU threads; the steps run on the host, one "
                    "launch per stage: bind the loops of every stage of the step (or "
                    "compute_at it inside a bound stage)")
            self.kernel(s, indent)

    def source(self):
        """The module source: kernels, then ``host(<params>)`` that launches them."""
        buffers = [p for p in self.func.params if isinstance(p, Buffer)]
        scalars = [p for p in self.func.params if not isinstance(p, Buffer)]
        params = [self.names(p, p.name) for p in buffers + scalars + list(self.shape_vars)]
        self.host.append(f"def host({', '.join(params)}):")
        self.host_stmt(self.func.body, 1)
        if len(self.host) == 1:
            self.host.append("    pass")
        return "\n".join(self._extern_prelude() + self.lines + self.host) + "\n"


def launch_excess(block, grid):
    """The first of CUDA's launch limits that ``block`` threads (x, y, z) per block in a grid
    of ``grid`` blocks exceed, as (what, value, limit) with what "threads per block" or an
    index ("threadIdx.z"); None if within them. An extent of None is not known yet."""
    threads = None if None in block else block[0] * block[1] * block[2]
    if threads is not None and threads > MAX_THREADS:
        return "threads per block", threads, MAX_THREADS
    for kind, dims, limits in (("threadIdx", block, MAX_BLOCK_DIMS),
                               ("blockIdx", grid, MAX_GRID_DIMS)):
        for axis, dim, limit in zip("xyz", dims, limits):
            if dim is not None and dim > limit:
                return f"{kind}.{axis}", dim, limit
    return None


def launch_excess_message(excess, block) -> str:
    """What ``launch_excess`` found and what to do about it, after "launches": the value, the
    limit, and the thread extents ``block`` when the threads per block are too many."""
    what, value, limit = excess
    if what == "threads per block":
        return (f"{value} threads per block (threadIdx extents {[str(d) for d in block]}), over "
                f"CUDA's limit of {limit}; use smaller thread splits (split the axes bound to "
                "threadIdx.* with smaller factors)")
    kind, axis = what.split(".")
    also = "" if axis == "x" else f" (or bind it to {kind}.x)"
    return (f"{value} along {what}, over CUDA's limit of {limit}; split the axis bound to "
            f"{what} and bind the parts to two indices{also}")


MIN_BLOCKS = "min_blocks_per_sm"


def _launch_bounds(loops, threads, computes):
    """CUDA's __launch_bounds__ of a kernel: its threads per block when constant (the register
    allocator plans for no more), and the blocks per SM that a ``pragma(axis,
    "min_blocks_per_sm", n)`` on one of its thread-bound loops asks for (registers capped so
    that n blocks fit on an SM)."""
    asked = [(loop, v) for loop in loops for k, v in loop.annotations if k == MIN_BLOCKS]
    for loop, v in asked:
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise CudaCodegenError(f"pragma {MIN_BLOCKS} on loop {loop.loop_var.name} (kernel "
                                   f"computing {computes}) must be a positive int, got {v!r}")
    if not isinstance(threads, IntImm):
        if asked:
            raise CudaCodegenError(f"pragma {MIN_BLOCKS} on loop {asked[0][0].loop_var.name} "
                                   f"(kernel computing {computes}) needs a constant number of "
                                   f"threads per block, not {threads}; bind constant splits")
        return None
    if asked:
        return (threads.value, max(v for _, v in asked))
    return (threads.value,)


REGISTER_MAX = 256     # local buffers up to this size with constant indices become variables
REGISTER_DTYPES = {"float32", "float64", "int32", "int64"}


def _launches(s) -> bool:
    """Whether every statement of ``s`` (through sequences and allocations) holds a loop
    bound to GPU threads, so that the host can launch each as a kernel."""
    if isinstance(s, SeqStmt):
        return bool(s.seq) and all(_launches(x) for x in s.seq)
    if isinstance(s, Allocate):
        return _launches(s.body)
    return bool(thread_loops(s))


def _registers(stmt):
    """Local buffers of ``stmt`` whose every access has a constant index (the unrolled
    fragments and accumulators of a tiled kernel): emitted as one variable per element, which
    keeps them in registers and makes numba compile big unrolled kernels several times faster
    than array accesses do."""
    local, other = set(), set()

    def visit(n):
        if isinstance(n, Allocate) and n.buffer.scope == "local" and \
                n.buffer.dtype in REGISTER_DTYPES:
            size = alloc_size(n.buffer)
            if isinstance(size, IntImm) and size.value <= REGISTER_MAX:
                local.add(n.buffer)
        elif isinstance(n, (BufferLoad, BufferStore)) and \
                not all(isinstance(i, IntImm) for i in n.indices):
            other.add(n.buffer)
    post_order_visit(stmt, visit)
    return local - other


def _np_name(dtype):
    return "bool_" if dtype == "bool" else dtype


def _written(stmt):
    return list(dict.fromkeys(b.name for b in stored_buffers(stmt)))


def emit_source(func, shape_vars):
    """(source text, kernels) of a lowered PrimFunc for numba.cuda."""
    em = CudaEmitter(func)
    em.shape_vars = shape_vars
    return em.source(), em.kernels, em.names
