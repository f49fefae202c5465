"""What the LLVM emitter's modules (emit.py, emit_math.py, emit_loops.py) share: the LLVM
types and size limits, ``CodegenError``, ``ErrorSite`` (an error status the compiled function
can return), the per-LLVM-function context ``_Ctx`` and the byte-size helpers.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from te.expr import IntImm
from schedule.ir import Buffer

from .types import memory_type

I32 = ir.IntType(32)
I64 = ir.IntType(64)
I8 = ir.IntType(8)
PTR = ir.PointerType(I8)     # llvmlite's typed pointers; LLVM reads them as opaque ptr

STACK_LIMIT = 256 * 1024
WORKSPACE_LIMIT = 1 << 30   # bytes: larger constant allocations are malloc'ed (and checked)
ERROR_STATUS = 1000         # status ERROR_STATUS + k: error site k (Emitter.error_sites) failed
INT32_MAX = 2**31 - 1
STREAM_ALIGN = 64           # bytes: the alignment that non-temporal vector stores need
WORKSPACE_ALIGN = 64        # bytes: each workspace buffer starts at a multiple of this


class CodegenError(RuntimeError):
    pass


@dataclass(frozen=True, eq=False)
class ErrorSite:
    """A place where the compiled function can stop with status ``ERROR_STATUS + k``; the
    caller (module.py) makes the message. ``kind``: "alloc" (the byte count of an allocation
    of ``buffer`` overflows 64 bits or malloc returned NULL) or "index_width" (an int32-indexed
    buffer of more than 2^31 - 1 elements). The element count is the product of ``factors``."""
    kind: str
    buffer: Buffer
    factors: tuple
    itemsize: int


class _Ctx:
    """Per-LLVM-function state: builder, variable values, buffer pointers, loop ranges."""

    def __init__(self, fn, vars_=None, bufs=None, ranges=None):
        self.fn = fn
        entry = fn.append_basic_block("entry")
        self.alloca_builder = ir.IRBuilder(entry)
        body = fn.append_basic_block("body")
        self.alloca_builder.branch(body)
        self.alloca_builder.position_at_start(entry)
        self.builder = ir.IRBuilder(body)
        self.vars = dict(vars_ or {})
        self.bufs = dict(bufs or {})
        self.ranges = dict(ranges or {})
        self.live = []              # malloc'ed pointers live here: freed on an error return
        self.status_ptr = None      # where an outlined loop reports an error (i32*)


def _width(t):
    if isinstance(t, ir.VectorType):
        return _width(t.element)
    if isinstance(t, ir.IntType):
        return t.width
    return {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(t)]


def _nbytes(buf):
    """The bytes of an allocation of ``buf``: an int for a constant size, else None.
    Counted in Python's integers (alloc_size's int32 product wraps: 65536 * 65536 is 0)."""
    factors = (buf.shape[0], buf.strides[0]) if buf.strides else tuple(buf.shape)
    count = 1
    for f in factors:
        if not isinstance(f, IntImm):
            return None
        count *= max(0, f.value)
    return count * max(1, _width(memory_type(buf.dtype)) // 8)
