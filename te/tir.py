"""Names that TVM programs reach as ``tvm.tir.*`` (here ``te.tir.*``)."""
from .expr import (Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max, EQ, NE, LT, LE, GT,
                   GE, And, Or, Not, Cast, Call, IntImm, FloatImm, Var, const, floordiv,
                   floormod, truncdiv, truncmod, all_ as all, any_ as any, select as Select)
from .intrin import *  # noqa: F401,F403  (exp, log, if_then_else, ...)
from .intrin import if_then_else
from .extern import call_packed  # noqa: F401  (tvm.tir.call_packed in TVM's extern tutorial)
from .reduce import min_value, max_value

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
    raise ValueError(f"call_intrin: unknown intrinsic {name!r}; te.tir has "
                     "call_intrin('int32', 'tir.tvm_storage_sync', 'shared') and the math "
                     "functions by name (te.exp, te.sqrt, ...)")


def __getattr__(name):
    if name == "ir_builder":            # te.tir.ir_builder.create(): loop IR for te.extern
        import importlib
        return importlib.import_module("schedule.ir_builder")
    raise AttributeError(f"module 'te.tir' has no attribute {name!r}")
