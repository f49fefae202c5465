"""Replace each UNROLLED loop of constant extent by copies of its body."""
from __future__ import annotations

from te.expr import IntImm, Select, const

from ..functor import IRMutator, IRSubstitute
from ..ir import ForKind, seq
from ..simplify import simplify


class _SubstituteFold(IRSubstitute):
    """Substitution that keeps only the chosen value of a select whose condition becomes a
    constant: a select on the unrolled index (Winograd's transforms pick their coefficients
    that way) is not copied with every alternative first."""

    def visit_Select(self, node):
        cond = self.visit(node.condition)
        folded = simplify(cond)
        if isinstance(folded, IntImm):
            return self.visit(node.true_value if folded.value else node.false_value)
        return Select(cond, self.visit(node.true_value), self.visit(node.false_value),
                      node.dtype)


class _Unroll(IRMutator):
    def visit_For(self, node):
        node = self.generic_visit(node)
        if node.kind != ForKind.UNROLLED or not isinstance(node.extent, IntImm):
            return node
        base = node.min
        return seq(*[_SubstituteFold({node.loop_var: base + const(k, base.dtype)})
                     .visit(node.body) for k in range(node.extent.value)])


def unroll_loops(stmt):
    """Unroll the loops marked ``unroll``; their bodies are repeated with the index substituted."""
    return _Unroll().visit(stmt)
