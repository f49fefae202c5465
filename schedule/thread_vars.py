"""Loops bound to one GPU thread index share its value (TVM binds them to one variable).

A local stage computed per thread (bound.py's ``_per_thread``) may place its region at the
loop variable of a reader's thread loop that is not in scope where the stage is computed; the
hardware index is the same there, so the variable is replaced by that of the enclosing loop
bound to the same thread index (refused when there is none).
"""
from __future__ import annotations

from .functor import IRMutator, post_order_visit
from .ir import For, ForKind
from .stage import ScheduleError


def unify_thread_vars(stmt):
    """``stmt`` with every out-of-scope thread loop variable replaced by the in-scope loop
    variable bound to the same thread index."""
    tags = {}

    def visit(node):
        if isinstance(node, For) and node.kind == ForKind.THREAD_BINDING and \
                node.thread_tag != "vthread":
            tags[node.loop_var] = node.thread_tag
    post_order_visit(stmt, visit)
    if len(set(tags.values())) == len(tags):
        return stmt                 # one loop per thread index: nothing to unify
    return _Unify(tags).visit(stmt)


class _Unify(IRMutator):
    def __init__(self, tags):
        self.tags = tags
        self.scope = {}             # thread tag -> the loop variable in scope
        self.inside = set()         # the thread loop variables in scope

    def visit_For(self, node):
        tag = self.tags.get(node.loop_var)
        if tag is None:
            return self.generic_visit(node)
        saved = self.scope.get(tag)
        self.scope[tag] = node.loop_var
        self.inside.add(node.loop_var)
        try:
            return self.generic_visit(node)
        finally:
            self.inside.discard(node.loop_var)
            if saved is None:
                self.scope.pop(tag)
            else:
                self.scope[tag] = saved

    def visit_Var(self, node):
        tag = self.tags.get(node)
        if tag is None or node in self.inside:
            return node
        cur = self.scope.get(tag)
        if cur is None:
            raise ScheduleError(f"the region of a local stage depends on {node.name}, a loop "
                                f"bound to {tag}, where no loop bound to {tag} encloses it; "
                                f"bind a loop of the stage to {tag} or attach it inside")
        return cur
