"""The arithmetic simplifier of the lowering passes: ``te.arith``, which sits below both IRs
(expressions are simplified the same in the te graph and in the loop IR); the statement-level
pass that uses it is ``schedule.passes.simplify``."""
from te.arith import (INF, Linear, Simplifier, can_prove, const_bounds, equal, simplify,
                      skey)

__all__ = ["INF", "Linear", "Simplifier", "can_prove", "const_bounds", "equal", "simplify",
           "skey"]
