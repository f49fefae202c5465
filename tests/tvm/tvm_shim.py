"""The few pieces of ``tvm.testing`` / ``tvm.ir`` / ``tvm.tir.stmt_functor`` that TVM's te unit
tests use and that are test helpers rather than compiler API (the ports in this directory
import them from here; everything else they reach through ``te``)."""
from __future__ import annotations

import contextlib

import te
from schedule.functor import post_order_visit as _post_order_visit
from schedule.functor import substitute as _substitute
from schedule.simplify import simplify

TVMError = te.ScheduleError      # tvm.error.TVMError: what a schedule primitive raises


def convert(value):
    """``tvm.runtime.convert``: a Python number -> a constant; a dict is kept as it is (its
    keys and values are expressions already)."""
    if isinstance(value, dict):
        return {k: convert(v) for k, v in value.items()}
    return te.const(value) if isinstance(value, (int, float)) else value


def assert_prim_expr_equal(lhs, rhs):
    """``tvm.testing.assert_prim_expr_equal``: lhs - rhs simplifies to 0."""
    diff = simplify(te.expr.convert(lhs) - te.expr.convert(rhs))
    assert isinstance(diff, te.IntImm) and diff.value == 0, f"{lhs} != {rhs} (diff {diff})"


class stmt_functor:        # noqa: N801  (tvm.tir.stmt_functor, a module in TVM)
    @staticmethod
    def post_order_visit(node, fn):
        _post_order_visit(node, fn)

    @staticmethod
    def substitute(node, vmap):
        return simplify(_substitute(node, dict(vmap)))


def schedule_to_module(sch, args, name="main"):
    """``tvm.driver.build_module.schedule_to_module``: here te.lower's PrimFunc, which
    answers ``mod["main"]``."""
    return te.lower(sch, args, name=name)


@contextlib.contextmanager
def PassContext(opt_level=2, disabled_pass=None, config=None):     # noqa: N802
    """``tvm.transform.PassContext``: this compiler has no pass options to set."""
    yield
