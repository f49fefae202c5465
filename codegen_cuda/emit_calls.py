"""numba.cuda source for the calls of tensor intrinsics' bodies on the GPU.

A GPU intrinsic's body is numba code: ``te.tir.call_extern(dtype, "name", ...)`` calls the
device function registered with ``register_extern("name", fn)`` (``fn`` a
``numba.cuda.jit(device=True)`` function, or a plain Python function on the simulator), and
each ``buf.access_ptr(...)`` argument becomes two arguments, the flat device array and the
element offset of the region (numba has no pointers)::

    @cuda.jit(device=True)
    def gemv_update(cc, cc_off, aa, aa_off, bb, bb_off, m, l, stride):
        for i in range(m):
            for j in range(l):
                cc[cc_off + i] += aa[aa_off + j] * bb[bb_off + i * stride + j]
        return 0
    register_extern("gemv_update", gemv_update)

Scalar ``vload`` / ``vstore`` (one element) are array reads and writes; vectors of several
lanes, ``reinterpret`` and LLVM intrinsics have no numba form and are refused.
"""
from __future__ import annotations

from te import dtypes

EXTERNS = {}        # name -> device function (register_extern)


def register_extern(name, fn, override=False):
    """Make ``fn`` (a numba device function) the GPU body of ``call_extern(..., name, ...)``."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"register_extern: the name must be a C identifier, got {name!r}")
    if not callable(fn):
        raise ValueError(f"register_extern({name!r}): {fn!r} is not callable")
    if name in EXTERNS and EXTERNS[name] is not fn and not override:
        raise ValueError(f"register_extern: {name!r} is already registered; pass "
                         "override=True to replace it")
    EXTERNS[name] = fn
    return fn


def _error(msg):
    from .emit import CudaCodegenError
    return CudaCodegenError(f"cuda codegen: {msg}")


class CudaCallEmitter:
    """Mixin of ``CudaEmitter``: tensor intrinsics' calls as numba source."""

    CALLS = ("call_extern", "tvm_access_ptr", "tw_vload", "tw_vstore", "reinterpret",
             "call_llvm_intrin", "call_llvm_pure_intrin")

    def _intrinsic_call(self, e) -> str:
        if e.op == "call_extern":
            return self._call_extern(e)
        if e.op in ("tw_vload", "tw_vstore"):
            return self._scalar_access(e)
        if e.op == "tvm_access_ptr":
            raise _error("access_ptr(...) is only an argument of call_extern on the GPU")
        raise _error(f"{e.op} has no numba form; write the GPU intrinsic's body with "
                     "call_extern of a device function (codegen_cuda.emit_calls."
                     "register_extern) or scalar vload/vstore")

    def _array_and_offset(self, load):
        """(array, element index) of a touched element; the index an int64 (a device
        function adds its own ints to it: numba types uint64 + int64 as a float)."""
        if load.buffer in self.registers:
            raise _error(f"buffer {load.buffer.name} lives in registers; an extern call "
                         "cannot take a pointer into it")
        return self.names(load.buffer, load.buffer.name), f"i64({self.expr(load.indices[0])})"

    def _call_extern(self, e) -> str:
        name = e.args[0].value
        if name not in EXTERNS:
            raise _error(f"call_extern({name!r}): no device function is registered under "
                         f"that name; register one with codegen_cuda.emit_calls."
                         f"register_extern({name!r}, fn)")
        args = []
        for a in e.args[1:]:
            if getattr(a, "op", None) == "tvm_access_ptr":
                args += self._array_and_offset(a.args[0])
            else:
                args.append(self.expr(a))
        self.externs.add(name)
        return f"tw_extern_{name}({', '.join(args)})"

    def _scalar_access(self, e) -> str:
        first = e.args[0]
        value = e.args[2] if e.op == "tw_vstore" else None
        lanes = dtypes.lanes(value.dtype if value is not None else e.dtype)
        if lanes != 1:
            raise _error(f"{e.op[3:]} of {lanes} lanes of buffer {first.buffer.name}: numba "
                         "has no vector values; use one element per vload/vstore (loops of "
                         "the ir_builder) or a device function")
        if value is None:
            return self.expr(first)
        # an Evaluate: emitted as a statement line
        if first.buffer in self.registers:
            return f"{self._register(first.buffer, first.indices[0])} = {self.expr(value)}"
        array = self.names(first.buffer, first.buffer.name)
        return f"{array}[{self.index(first.indices[0])}] = {self.expr(value)}"

    def _extern_prelude(self) -> list:
        """Source lines that bind the registered device functions the kernels call."""
        if not self.externs:
            return []
        lines = ["import codegen_cuda.emit_calls as _tw_calls"]
        lines += [f"tw_extern_{n} = _tw_calls.EXTERNS[{n!r}]" for n in sorted(self.externs)]
        return lines + [""]
