"""Replace each UNROLLED loop of constant extent by copies of its body."""
from __future__ import annotations

from te.expr import IntImm, const

from ..functor import IRMutator, substitute
from ..ir import ForKind, seq


class _Unroll(IRMutator):
    def visit_For(self, node):
        node = self.generic_visit(node)
        if node.kind != ForKind.UNROLLED or not isinstance(node.extent, IntImm):
            return node
        base = node.min
        return seq(*[substitute(node.body, {node.loop_var: base + const(k, base.dtype)})
                     for k in range(node.extent.value)])


def unroll_loops(stmt):
    """Unroll the loops marked ``unroll``; their bodies are repeated with the index substituted."""
    return _Unroll().visit(stmt)
