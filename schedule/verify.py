"""The IR verifier: every variable bound before use, operand dtypes agree, extents and indices
are integers, buffers are used inside their allocation, stores match their buffer's dtype."""
from __future__ import annotations

from te import dtypes
from te.expr import Binary, COMPARISONS, Var
from te.functor import free_vars

from .functor import IRVisitor
from .ir import Buffer


class IRVerifyError(AssertionError):
    pass


class _Verifier(IRVisitor):
    def __init__(self, func):
        self.func = func
        self.scope = set(p for p in func.params if isinstance(p, Var))
        self.buffers = set(p for p in func.params if isinstance(p, Buffer))
        for b in list(self.buffers):
            for d in b.shape:
                self.scope.update(free_vars(d))

    def fail(self, msg):
        raise IRVerifyError(f"IR verification failed in {self.func.name}: {msg}")

    def visit_Var(self, node):
        if node not in self.scope:
            self.fail(f"variable {node.name} is used outside the scope that binds it")

    def visit_Binary(self, node):
        self.generic_visit(node)
        a, b = node.a.dtype, node.b.dtype
        if a != b:
            self.fail(f"operands of {type(node).__name__} {_show(node)} have dtypes {a} and "
                      f"{b} (mixed index widths reach LLVM as 'Operands must be the same "
                      "type'); build the node with te.expr.binary, which casts both to one "
                      "dtype")
        expect_bool = type(node) in COMPARISONS
        if expect_bool and not dtypes.is_bool(node.dtype):
            self.fail(f"comparison {type(node).__name__} has dtype {node.dtype}")

    def visit_Select(self, node):
        self.generic_visit(node)
        t, f = node.true_value.dtype, node.false_value.dtype
        if len({dtypes.element(x) for x in (t, f, node.dtype)}) > 1:
            self.fail(f"select {_show(node)} has branches of dtypes {t} and {f} and dtype "
                      f"{node.dtype}; cast the branches to one dtype")

    def visit_For(self, node):
        for e in (node.min, node.extent):
            self.visit(e)
            if not dtypes.is_int(e.dtype):
                self.fail(f"loop {node.loop_var.name} has a non-integer bound {e}")
        self.scope.add(node.loop_var)
        self.visit(node.body)
        self.scope.discard(node.loop_var)

    def visit_LetStmt(self, node):
        self.visit(node.value)
        self.scope.add(node.var)
        self.visit(node.body)
        self.scope.discard(node.var)

    def visit_Let(self, node):
        self.visit(node.value)
        self.scope.add(node.var)
        self.visit(node.body)
        self.scope.discard(node.var)

    def visit_Allocate(self, node):
        for d in node.buffer.shape:
            self.visit(d)
        self.buffers.add(node.buffer)
        self.visit(node.body)
        self.buffers.discard(node.buffer)

    def _access(self, buf, indices):
        if buf not in self.buffers:
            self.fail(f"buffer {buf.name} is used outside its allocation")
        for i in indices:
            self.visit(i)
            if not dtypes.is_int(i.dtype):
                self.fail(f"index {i} of {buf.name} is not an integer")

    def visit_BufferLoad(self, node):
        self._access(node.buffer, node.indices)
        if dtypes.element(node.dtype) != dtypes.element(node.buffer.dtype):
            self.fail(f"load from {node.buffer.name} has dtype {node.dtype}")

    def visit_BufferStore(self, node):
        self._access(node.buffer, node.indices)
        self.visit(node.value)
        if dtypes.element(node.value.dtype) != dtypes.element(node.buffer.dtype):
            self.fail(f"store of {node.value.dtype} into {node.buffer.name} "
                      f"({node.buffer.dtype})")


for _cls in Binary.__subclasses__():
    setattr(_Verifier, "visit_" + _cls.__name__, _Verifier.visit_Binary)


def _show(node):
    """The node as the printer writes it (cut short when long)."""
    from .printer import expr_str
    text = expr_str(node)
    return text if len(text) <= 200 else text[:197] + "..."


def verify(func):
    """Raise IRVerifyError if ``func`` is not well formed."""
    _Verifier(func).visit(func.body)
