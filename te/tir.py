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
