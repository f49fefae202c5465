"""Loop IR -> numba.cuda source: one ``@cuda.jit`` kernel per top-level loop nest, and a host
function that allocates intermediate buffers and launches the kernels in order.

Loops bound to ``blockIdx.*``/``threadIdx.*`` become reads of the hardware indices (guarded when
the launch dimension is larger than the loop); ``vthread`` loops run serially in each thread.
Buffers of scope "shared" become ``cuda.shared.array`` and are fenced with ``syncthreads``
around the statements that fill them; "local" buffers become ``cuda.local.array``.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import keyword
import os
import re

from te import dtypes
from te.expr import (Add, And, Call, EQ, FloorDiv, FloorMod, GE, GT, IntImm, LE, LT, Max,
                     Mul, NE, Or, Sub, Div)
from schedule.analysis import (allocation_chain, has_storage_sync, loads_from, stored_buffers,
                               stores_to, thread_loops, uses)
from schedule.build_loops import SCAN_STEPS
from schedule.functor import post_order_visit
from schedule.interp import alloc_size
from schedule.ir import (Allocate, Buffer, BufferLoad, BufferStore, For, ForKind, IfThenElse,
                         LetStmt, SeqStmt, is_storage_sync)
from schedule.simplify import equal, simplify
from schedule.stage import ScheduleError

from .emit_calls import CudaCallEmitter

MAX_THREADS = 1024
MAX_SHARED_BYTES = 48 * 1024
# CUDA's limits on each launch dimension (x, y, z) of the block and of the grid
MAX_BLOCK_DIMS = (1024, 1024, 64)
MAX_GRID_DIMS = (2 ** 31 - 1, 65535, 65535)

NUMBA_TYPE = {"float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8",
              "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16",
              "uint32": "u32", "uint64": "u64", "bool": "b1"}
INFIX = {Add: "+", Sub: "-", Mul: "*", FloorDiv: "//", FloorMod: "%", EQ: "==", NE: "!=",
         LT: "<", LE: "<=", GT: ">", GE: ">=", And: "and", Or: "or"}
MATH = {"exp": "math.exp", "log": "math.log", "log2": "math.log2", "log10": "math.log10",
        "log1p": "math.log1p", "sqrt": "math.sqrt", "tanh": "math.tanh", "erf": "math.erf",
        "sin": "math.sin", "cos": "math.cos", "tan": "math.tan", "asin": "math.asin",
        "acos": "math.acos", "atan": "math.atan", "sinh": "math.sinh", "cosh": "math.cosh",
        "fabs": "abs"}
TO_INT = {"floor": "math.floor", "ceil": "math.ceil", "trunc": "math.trunc", "round": "round"}
HW = {"blockIdx": "cuda.blockIdx", "threadIdx": "cuda.threadIdx"}
_ARRAY_DECL = re.compile(r"\s*\w+ = cuda\.(shared|local)\.array\(")


def _guard_around_barriers(stmt, cond):
    """``stmt`` run where ``cond`` holds, except its barriers, which every thread reaches: the
    condition moves down to the largest parts without a barrier (a loop bound to fewer
    threads than the block has, around a cross-thread reduction, for one)."""
    if not has_storage_sync(stmt):
        return IfThenElse(cond, stmt)
    if isinstance(stmt, SeqStmt):
        return SeqStmt(tuple(_guard_around_barriers(c, cond) for c in stmt.seq))
    if isinstance(stmt, (For, Allocate, LetStmt)):
        return dataclasses.replace(stmt, body=_guard_around_barriers(stmt.body, cond))
    if isinstance(stmt, IfThenElse):
        return IfThenElse(stmt.condition, _guard_around_barriers(stmt.then_case, cond),
                          None if stmt.else_case is None else
                          _guard_around_barriers(stmt.else_case, cond))
    return stmt                         # the barrier itself


class CudaCodegenError(ScheduleError):
    """A schedule that cannot run as CUDA kernels; the message says what to change."""


class Kernel:
    """One generated kernel: its name, parameters and launch dimensions (as host exprs)."""

    def __init__(self, name, buffers, scalars, grid, block, shared_bytes, launch_bounds=None):
        self.name, self.buffers, self.scalars = name, buffers, scalars
        self.grid, self.block, self.shared_bytes = grid, block, shared_bytes
        self.launch_bounds = launch_bounds      # (threads per block[, min blocks per SM])


# names that the kernel source uses for itself (modules, builtins, the cast functions)
RESERVED = {"math", "cuda", "np", "range", "min", "max", "abs", "round", "float", "int", "bool",
            "host", "_launch", "fmax_nan", "fmin_nan", *NUMBA_TYPE.values()}

# Float max/min propagate NaN as numpy's maximum/minimum (te.max's documented semantics):
# Python's max(a, b), which numba follows, is order-dependent (max(nan, 1) is nan, max(1, nan)
# is 1), and numba's np.maximum returns a on ties (numpy: b). Functions, not inline expressions,
# which would repeat their operands (nested max would grow exponentially, a load be made twice);
# defined inside each kernel that calls them, where numba inlines them: a device function
# (cuda.jit(device=True)) would need a GPU to compile, and compile_ptx works without one.
NAN_MINMAX = {
    "fmax_nan": ("max", "a if a != a or a > b else b"),
    "fmin_nan": ("min", "a if a != a or a < b else b"),
}


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


class CudaEmitter(CudaCallEmitter):
    def __init__(self, func):
        self.func = func
        self.externs = set()        # device functions of call_extern (emit_calls.py)
        self.align_shared = shared_takes_alignment()
        self.names = _Names()
        self.lines = []
        self.kernels = []
        self.host = []
        self.helpers = set()        # the NAN_MINMAX functions the kernels call

    # ------------------------------------------------------------------ expressions
    def expr(self, e) -> str:
        text = self._expr(e)
        if type(e) in (Add, Sub, Mul, FloorDiv, Div) and dtypes.is_int(e.dtype) and \
                dtypes.bits(e.dtype) < 32:
            # numba computes 8- and 16-bit integer arithmetic in int64 on the GPU: wrap each
            # result to its dtype, as the CPU backend and numpy do (int8(100) + int8(100) is
            # -56 before it meets a division or a comparison)
            text = f"{NUMBA_TYPE[e.dtype]}({_wrapped(text, 'int64', e.dtype)})"
        return text

    def _expr(self, e) -> str:
        m = getattr(self, "e_" + type(e).__name__, None)
        if m is not None:
            return m(e)
        if type(e) in (FloorDiv, FloorMod) and dtypes.is_int(e.dtype) and \
                not (isinstance(e.b, IntImm) and e.b.value != 0):
            # x // 0 and x % 0 are 0, as numpy's and the CPU backend's (not an exception)
            b = self.expr(e.b)
            return f"(({self.expr(e.a)} {INFIX[type(e)]} {b}) if {b} != 0 else 0)"
        if type(e) in INFIX:
            return f"({self.expr(e.a)} {INFIX[type(e)]} {self.expr(e.b)})"
        raise CudaCodegenError(f"cuda codegen: no rule for {type(e).__name__}")

    def e_IntImm(self, e):
        if e.dtype == "bool":
            return "True" if e.value else "False"
        return str(e.value) if e.dtype in ("int32", "int64") else \
            f"{NUMBA_TYPE[e.dtype]}({e.value})"

    def e_FloatImm(self, e):
        v = repr(float(e.value))
        if v in ("inf", "-inf", "nan"):
            v = f"float('{v}')"
        return f"{NUMBA_TYPE[_compute(e.dtype)]}({v})"

    def e_Var(self, e):
        return self.names(e, e.name)

    def e_Div(self, e):
        a, b = self.expr(e.a), self.expr(e.b)
        if dtypes.is_float(e.dtype):
            return f"({a} / {b})"
        return _truncdiv(a, b)

    def e_Mod(self, e):
        a, b = self.expr(e.a), self.expr(e.b)
        if dtypes.is_float(e.dtype):
            return f"({a} - {_truncdiv(a, b)} * {b})"
        return f"(({a} - {_truncdiv(a, b)} * {b}) if {b} != 0 else 0)"

    def e_Min(self, e):
        return self._extreme("min", e)

    def e_Max(self, e):
        return self._extreme("max", e)

    def _extreme(self, op, e):
        if not dtypes.is_float(e.dtype):
            return f"{op}({self.expr(e.a)}, {self.expr(e.b)})"
        name = f"f{op}_nan"
        self.helpers.add(name)
        return f"{name}({self.expr(e.a)}, {self.expr(e.b)})"

    def _helper_source(self):
        """The NAN_MINMAX functions the kernel being emitted calls, as its first lines."""
        lines = []
        for name in sorted(self.helpers):
            op, body = NAN_MINMAX[name]
            lines += [f"    def {name}(a, b):",
                      f"        # {op}(a, b) of floats: NaN if a or b is NaN, b when they tie",
                      f"        return {body}"]
        return lines

    def e_Not(self, e):
        return f"(not {self.expr(e.a)})"

    def e_Select(self, e):
        return (f"({self.expr(e.true_value)} if {self.expr(e.condition)} else "
                f"{self.expr(e.false_value)})")

    def e_Cast(self, e):
        v = self.expr(e.value)
        if dtypes.is_bool(e.dtype):
            return f"({v} != 0)"
        if dtypes.is_float(e.value.dtype) and dtypes.is_int(e.dtype):
            # saturating, NaN -> 0, as the CPU backend (te.dtypes.float_to_int): the simulator's
            # math.trunc(nan) would raise; on the GPU cvt.rzi saturates already
            # (te.dtypes.float_to_int: int64 saturating, then wrapped to the target)
            t = NUMBA_TYPE[e.dtype]
            top = 2.0 ** 63
            wide = (f"(i64(0) if {v} != {v} else i64({-2**63}) if {v} < {-top!r} else "
                    f"i64({2**63 - 1}) if {v} >= {top!r} else i64(math.trunc({v})))")
            if dtypes.element(e.dtype) == "uint64":
                return (f"(u64({2**64 - 1}) if {v} >= {2.0**64!r} else "
                        f"u64(math.trunc({v})) if {v} >= {top!r} else u64({wide}))")
            return f"{t}({_wrapped(wide, 'int64', e.dtype)})"
        if e.dtype == "float16":
            return f"f32(f16({v}))"
        if dtypes.is_int(e.dtype) and dtypes.is_int(e.value.dtype):
            v = _wrapped(v, e.value.dtype, e.dtype)
        return f"{NUMBA_TYPE[e.dtype]}({v})"

    def e_Call(self, e):
        if e.op in self.CALLS:
            return self._intrinsic_call(e)
        args = [self.expr(a) for a in e.args]
        t = NUMBA_TYPE[_compute(e.dtype)]
        op = e.op
        if op == "if_then_else":
            return f"({args[1]} if {args[0]} else {args[2]})"
        if op in MATH:
            return f"{t}({MATH[op]}({args[0]}))"
        if op in TO_INT:
            return f"{t}({TO_INT[op]}({args[0]}))"
        if op == "rsqrt":
            return f"({t}(1.0) / math.sqrt({args[0]}))"
        if op == "sigmoid":
            return f"({t}(1.0) / ({t}(1.0) + math.exp(-{args[0]})))"
        if op == "exp2":
            return f"{t}(math.pow({t}(2.0), {args[0]}))"
        if op == "exp10":
            return f"{t}(math.pow({t}(10.0), {args[0]}))"
        if op == "pow":
            return f"{t}(math.pow({args[0]}, {args[1]}))"
        if op == "fmod":
            return f"{t}(math.fmod({args[0]}, {args[1]}))"
        if op in ("popcount", "clz"):
            return self._bit_count(op, args[0], e.args[0].dtype, t)
        bitwise = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}
        if op in bitwise:
            return f"{t}({args[0]} {bitwise[op]} {args[1]})"
        if op in ("shift_left", "shift_right"):
            # numpy's rule: an amount outside [0, bits) gives 0 (or the sign, shifting right)
            x, n = args
            width = dtypes.bits(e.dtype)
            fill = "0" if op == "shift_left" or not dtypes.is_signed(e.dtype) else \
                f"(-1 if {x} < 0 else 0)"
            sym = "<<" if op == "shift_left" else ">>"
            return f"({t}({x} {sym} {n}) if 0 <= {n} < {width} else {t}({fill}))"
        raise CudaCodegenError(f"cuda codegen: unknown intrinsic {op}")

    @staticmethod
    def _bit_count(op, x, dtype, t):
        """popc/clz on the unsigned bit pattern: signed values would count their sign."""
        width = dtypes.bits(dtype)
        wide = 64 if width > 32 else 32
        pattern = f"u{wide}(u{width}({x}))"          # zero-extend, never sign-extend
        if op == "popcount":
            return f"{t}(cuda.popc({pattern}))"
        narrow = f" - {wide - width}" if wide > width else ""
        return f"{t}(cuda.clz({pattern}){narrow})"

    def e_Let(self, e):
        raise CudaCodegenError("cuda codegen: let expressions are not supported")

    def e_BufferLoad(self, e):
        if e.buffer in self.registers:
            return self._register(e.buffer, e.indices[0])
        v = f"{self.names(e.buffer, e.buffer.name)}[{self.index(e.indices[0])}]"
        return f"f32({v})" if e.buffer.dtype == "float16" else v

    def _register(self, buf, index):
        return f"{self.names(buf, buf.name)}_{index.value}"

    def index(self, e) -> str:
        """An element index; unsigned, so that numba skips its negative-index wraparound. A
        base that several statements of the current straight-line run share (``base + c``) is
        computed once, into a variable, before its first use."""
        if isinstance(e, IntImm):
            return str(e.value)
        base, offset = _base_offset(e)
        if self.bases is not None and _shareable(base):
            key = self.expr(base)
            entry = self.bases.get(key)
            if entry is not None:
                if entry[0] is None:
                    entry[0] = self.names(object(), "i")
                    self.emit(f"{entry[0]} = {key}", self.bases_indent)
                return f"u64({entry[0]} + {offset})" if offset else f"u64({entry[0]})"
        return f"u64({self.expr(e)})"

    def run(self, items, indent):
        """A straight-line run of statements: their element indices are scanned first, and a
        base that two or more of them use (``(i * 32 + j) + 8``, ``(i * 32 + j) + 16``) is
        emitted once (numba compiles a long unrolled body much faster with fewer
        operations; NVVM would merge them anyway). The stores of nested sequences and
        allocations belong to the run (same level, no control flow); a statement in a loop,
        a branch or after a let starts a run of its own."""
        if self.bases is not None and indent == self.bases_indent:
            for item in items:                  # part of the run being emitted: scanned
                self._run_item(item, indent, self.bases)
            return
        counts = {}
        for store in self._run_stores(items):
            for idx in self._indices(store):
                base, _ = _base_offset(idx)
                if _shareable(base):
                    key = self.expr(base)
                    counts[key] = counts.get(key, 0) + 1
        shared = {k: [None] for k, n in counts.items() if n > 1}
        outer = self.bases, self.bases_indent
        self.bases_indent = indent
        for item in items:
            self._run_item(item, indent, shared)
        self.bases, self.bases_indent = outer

    def _run_item(self, item, indent, shared):
        self.bases = shared if isinstance(item, (BufferStore, Allocate, SeqStmt)) else None
        self.stmt(item, indent)

    def _run_stores(self, items):
        for item in items:
            if isinstance(item, BufferStore):
                yield item
            elif isinstance(item, SeqStmt):
                yield from self._run_stores(item.seq)
            elif isinstance(item, Allocate):
                yield from self._run_stores(allocation_chain(item)[1])

    def _indices(self, store):
        """The element indices of a store and of the loads in its value (not of registers)."""
        out = [] if store.buffer in self.registers else [store.indices[0]]

        def visit(n):
            if isinstance(n, BufferLoad) and n.buffer not in self.registers:
                out.append(n.indices[0])
        post_order_visit(store.value, visit)
        return out

    def e_Ramp(self, e):
        raise CudaCodegenError("cuda codegen: vector expressions are not supported")

    e_Broadcast = e_Ramp

    # ------------------------------------------------------------------ statements
    def emit(self, line, indent):
        self.lines.append("    " * indent + line)

    def stmt(self, s, indent):
        getattr(self, "s_" + type(s).__name__)(s, indent)

    def s_SeqStmt(self, s, indent):
        self.run(list(s.seq), indent)

    def s_Evaluate(self, s, indent):
        if is_storage_sync(s):
            self._sync(indent)
        else:
            self.emit(self.expr(s.value), indent)

    def _sync(self, indent):
        """A barrier, unless one already ends the code at this level (only array declarations
        after it: the fills of two shared stages share the barrier between them)."""
        line = "    " * indent + "cuda.syncthreads()"
        for prev in reversed(self.lines):
            if prev == line:
                return
            if not _ARRAY_DECL.match(prev):
                break
        self.emit("cuda.syncthreads()", indent)

    def s_LetStmt(self, s, indent):
        self.emit(f"{self.names(s.var, s.var.name)} = {self.expr(s.value)}", indent)
        self.stmt(s.body, indent)

    def s_BufferStore(self, s, indent):
        value = self.expr(s.value)
        if s.buffer.dtype == "float16":
            value = f"f16({value})"
        if s.buffer in self.registers:
            self.emit(f"{self._register(s.buffer, s.indices[0])} = {value}", indent)
            return
        name = self.names(s.buffer, s.buffer.name)
        self.emit(f"{name}[{self.index(s.indices[0])}] = {value}", indent)

    def block(self, s, indent):
        """A nested statement; ``pass`` where it emits nothing (a body simplified away)."""
        start = len(self.lines)
        self.stmt(s, indent)
        if len(self.lines) == start:
            self.emit("pass", indent)

    def s_IfThenElse(self, s, indent):
        self.emit(f"if {self.expr(s.condition)}:", indent)
        self.block(s.then_case, indent + 1)
        if s.else_case is not None:
            self.emit("else:", indent)
            self.block(s.else_case, indent + 1)

    def s_For(self, s, indent):
        var = self.names(s.loop_var, s.loop_var.name)
        if s.kind == ForKind.THREAD_BINDING and s.thread_tag != "vthread":
            kind, axis = s.thread_tag.split(".")
            launch = self.launch[s.thread_tag]
            if all(isinstance(e, IntImm) and e.value == 1 for e in (s.extent, launch)) and \
                    s.loop_var not in uses(s.body)[0]:
                self.block(s.body, indent)          # one thread along it: nothing to index
                return
            self.emit(f"{var} = {HW[kind]}.{axis}", indent)
            body = s.body
            if not equal(s.extent, launch):
                if has_storage_sync(body):      # every thread must reach the barriers
                    body = _guard_around_barriers(body, s.loop_var < s.extent)
                else:
                    self.emit(f"if {var} < {self.expr(s.extent)}:", indent)
                    indent += 1
            self.inside_threads += kind == "threadIdx"
            self.block(body, indent)
            self.inside_threads -= kind == "threadIdx"
            return
        start = self.expr(s.min)
        end = self.expr(simplify(s.min + s.extent))
        rng = end if start == "0" else f"{start}, {end}"
        self.emit(f"for {var} in range({rng}):", indent)
        self.block(s.body, indent + 1)

    def s_Allocate(self, s, indent):
        chain, items = allocation_chain(s)
        shared = []
        for buf in (a.buffer for a in chain):
            size = alloc_size(buf)
            if not isinstance(size, IntImm):
                raise CudaCodegenError(
                    f"buffer {buf.name} inside a GPU kernel has the non-constant size {size}; "
                    "use constant split factors for the loops it is computed at")
            scope = buf.scope
            if scope == "global":
                scope = "local" if self.inside_threads else "shared"
            if scope == "shared":
                shared.append(buf)
                nbytes = size.value * max(1, dtypes.bits(buf.dtype) // 8)
                self.shared_bytes += nbytes
                self.shared_bufs.append(f"{buf.name} {nbytes} bytes")
            kind = "shared" if scope == "shared" else "local"
            if buf in self.registers:       # one variable per element
                name = self.names(buf, buf.name)
                # defined once per kernel, at the first allocation: numba needs a definition
                # on every path to a read (guarded partial tiles assign under conditions)
                if name not in self.declared and size.value > 0:     # (size 0: unread)
                    self.declared.add(name)
                    zero = f"{NUMBA_TYPE[buf.dtype]}(0)"
                    self.emit(" = ".join(f"{name}_{k}" for k in range(size.value)) +
                              f" = {zero}", indent)
                continue
            # 16-byte aligned shared arrays let NVVM merge four neighbouring 32-bit loads
            # into one 128-bit ld.shared.v4 (numba's simulator takes no alignment argument)
            align = ", alignment=16" if kind == "shared" and self.align_shared else ""
            # a size-0 buffer (an empty stage: nothing reads it) gets one element: the
            # simulator cannot make an empty array
            self.emit(f"{self.names(buf, buf.name)} = cuda.{kind}.array({max(size.value, 1)}, "
                      f"{NUMBA_TYPE[buf.dtype]}{align})", indent)
        # Statements that fill shared buffers are fenced by barriers: before (the previous
        # readers are done) and after (the data is there). Consecutive fills share the pair
        # when none reads what an earlier one of them wrote, so that all their global loads
        # are in flight together.
        k = 0
        while k < len(items):
            end, filled = k, set()
            while end < len(items) and not loads_from(items[end], filled):
                written = {b for b in shared if stores_to(items[end], {b})}
                if not written:
                    break
                filled |= written
                end += 1
            if end == k:
                end = k + 1
                while end < len(items) and not stores_to(items[end], set(shared)):
                    end += 1
                self.run(items[k:end], indent)
                k = end
                continue
            self._sync(indent)
            self.run(items[k:end], indent)
            self._sync(indent)
            k = end

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


def _base_offset(e):
    """(base, constant offset) of an index ``base + c``; (e, 0) otherwise."""
    if isinstance(e, Add) and isinstance(e.b, IntImm):
        return e.a, e.b.value
    return e, 0


def _shareable(e):
    """Whether an index base is worth a variable of its own and safe to compute early: some
    arithmetic on variables (loop, thread and let variables do not change within a run), no
    loads (a store of the run might change what they read) and no calls."""
    if not isinstance(e, (Add, Sub, Mul, FloorDiv, FloorMod)):
        return False
    pure = [True]

    def visit(n):
        if isinstance(n, (BufferLoad, Call)):
            pure[0] = False
    post_order_visit(e, visit)
    return pure[0]


def _wrapped(v, src, dst):
    """``v`` reduced to ``dst``'s range as a two's-complement conversion does, for a cast that
    may not keep the value (narrower, or another signedness below 64 bits): numba's casts on
    the GPU wrap, but the simulator's refuse a Python int out of range (u8(-2))."""
    bits = dtypes.bits(dst)
    keeps = dtypes.is_signed(src) == dtypes.is_signed(dst) and bits >= dtypes.bits(src)
    if keeps or bits >= 64:
        return v
    mask = (1 << bits) - 1
    wide = f"{NUMBA_TYPE['int64']}({v})"       # int8 & 255 would not fit the simulator's int8
    if not dtypes.is_signed(dst):
        return f"({wide} & {mask})"
    half = 1 << (bits - 1)
    return f"((({wide} + {half}) & {mask}) - {half})"


def _truncdiv(a, b):
    # the floor quotient, moved up by one where it was rounded down past zero (abs() of the
    # dtype's minimum wraps: abs(int16(-32768)) // 2 gave +16384 for -32768 / 2)
    q = f"({a} // {b})"
    up = f"(1 if ({a} % {b} != 0 and (({a} < 0) != ({b} < 0))) else 0)"
    return f"(({q} + {up}) if {b} != 0 else 0)"


def _compute(dtype):
    return "float32" if dtypes.element(dtype) == "float16" else dtypes.element(dtype)


def _np_name(dtype):
    return "bool_" if dtype == "bool" else dtype


def _written(stmt):
    return list(dict.fromkeys(b.name for b in stored_buffers(stmt)))


def emit_source(func, shape_vars):
    """(source text, kernels) of a lowered PrimFunc for numba.cuda."""
    em = CudaEmitter(func)
    em.shape_vars = shape_vars
    return em.source(), em.kernels, em.names
