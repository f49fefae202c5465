"""Names that TVM programs reach as ``tvm.tir.*`` (here ``te.tir.*``)."""
from .expr import (Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max, EQ, NE, LT, LE, GT,
                   GE, And, Or, Not, Cast, Call, IntImm, FloatImm, Var, const, floordiv,
                   floormod, truncdiv, truncmod, all_ as all, any_ as any, select as Select)
from .intrin import *  # noqa: F401,F403  (exp, log, if_then_else, ...)
from .intrin import if_then_else
from .extern import call_packed  # noqa: F401  (tvm.tir.call_packed in TVM's extern tutorial)
from .reduce import min_value, max_value
from .expr import Let, ProducerLoad, Reduce, StringImm  # noqa: F401
from .tir_ops import (bitwise_and, bitwise_not, bitwise_or, bitwise_xor, ceildiv,  # noqa: F401
                      div, likely, shift_left, shift_right)
from .reduce import comm_reducer, sum, min, max  # noqa: F401,A004  (tir.min(a, b) and reducers)
from .intrin import call_extern, call_llvm_intrin, call_llvm_pure_intrin, reinterpret  # noqa
from .tensor_intrin import decl_buffer  # noqa: F401  (tensor intrinsics' buffers)

indexdiv = floordiv
indexmod = floormod


def call_intrin(dtype, name, *args):
    """An intrinsic by name, as ``tvm.tir.call_intrin``: here the barrier
    ``call_intrin("int32", "tir.tvm_storage_sync", "shared")`` of ir_builder GPU code."""
    op = name[4:] if name.startswith("tir.") else name
    if op == "tvm_storage_sync":
        if args not in ((), ("shared",)):
            raise ValueError(f"call_intrin({name!r}): only the 'shared' scope is supported (a "
                             f"barrier of the threads of a block), got {args}")
        from schedule.ir import storage_sync      # te does not import schedule at import time
        return storage_sync().value         # a barrier of the block (shared memory)
    if op == "reinterpret" and len(args) == 1:
        return reinterpret(dtype, args[0])
    raise ValueError(f"call_intrin: unknown intrinsic {name!r}; te.tir has "
                     "call_intrin('int32', 'tir.tvm_storage_sync', 'shared') and the math "
                     "functions by name (te.exp, te.sqrt, ...)")


_LOOP_IR = ("PrimFunc", "For", "ForKind", "IfThenElse", "Evaluate", "Allocate", "SeqStmt",
            "LetStmt", "BufferStore", "BufferLoad", "Buffer", "Ramp", "Broadcast", "Stmt")


def __getattr__(name):
    if name in _LOOP_IR:                # the loop IR's nodes (tvm.tir.For, tvm.tir.PrimFunc, ...)
        from schedule import ir
        return getattr(ir, name)
    if name == "stmt":                  # tvm.tir.stmt.For: the module of the statement nodes
        from schedule import ir
        return ir
    if name == "ir_builder":            # te.tir.ir_builder.create(): loop IR for te.extern
        import importlib
        return importlib.import_module("schedule.ir_builder")
    raise AttributeError(f"module 'te.tir' has no attribute {name!r}")
