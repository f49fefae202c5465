"""``te.gradient``: reverse-mode differentiation of tensor expressions, as TVM's.

``gradient(output, inputs, head)`` returns one adjoint tensor per input, each a te compute
that schedules and builds like any other. The tensors between the inputs and the output are
visited from the output back (reverse topological order); the adjoint of a tensor is the sum,
over every load of it in every consumer, of the consumer's local adjoint (``derivative``) summed
over the consumer's iterations that load the element (``solve``). No Jacobian is formed: the
index equations of a load are solved for the consumer's loop variables, so the adjoint of a
matrix product is a product over the remaining axis, and that of a convolution a transposed
convolution over the kernel taps that reach each input element (guarded for stride and
padding). Reductions by sum, prod, max and min are differentiated (max and min send the
adjoint to the first extreme element, found by an argmax stage, as PyTorch's max pooling).
Several outputs can be differentiated in one pass, each with its head (an extension of TVM's
signature that ``nn.autograd.Function.from_te`` uses for declarations with several outputs).
"""
from __future__ import annotations

from .. import dtypes
from ..expr import IntImm, Reduce, Var, all_, cast, const, select
from ..expr import Add, Max, Min, Mul
from ..functor import substitute
from ..intrin import if_then_else
from ..reduce import comm_reducer, prod as te_prod, sum as te_sum
from ..tensor import (ComputeOp, TEError, Tensor, compute, reduce_axis)
from .derivative import backprop, fadd, fmul
from .solve import Domain, iadd, same, solve, unclamp

__all__ = ["gradient"]


def gradient(output, inputs, head=None):
    """The adjoints of ``inputs`` for ``output``: ``head`` (shape prefix + output.shape,
    default the identity, which gives Jacobians) times d output / d input, one tensor of shape
    prefix + input.shape per input.

    ``output`` may also be a list of tensors with a list of heads (one each, of one prefix):
    the adjoints are then the sums over the outputs, computed in one pass (a tensor that
    several outputs depend on has one adjoint, not one per output)."""
    single = isinstance(inputs, Tensor)
    inputs = [inputs] if single else list(inputs)
    outputs, heads = _seeds(output, head)
    for out in outputs:
        _check(out, inputs)
    graph = _Graph(outputs, inputs)
    seeds = dict(zip(outputs, [h for h, _ in heads]))
    builder = _Adjoints(graph, seeds, heads[0][1])
    grads = [builder.adjoint(x) for x in inputs]
    # an output that nothing else reads has its head as its adjoint: return a copy (a compute)
    grads = [compute(g.shape, lambda *i, g=g: g[i], name=f"{x.op.name}_grad")
             if any(g is h for h in seeds.values()) else g for x, g in zip(inputs, grads)]
    return grads[0] if single else grads


def _seeds(output, head):
    """The outputs and their (head, prefix) pairs."""
    if not isinstance(output, (list, tuple)):
        return [output], [_head(output, head)]
    outputs = list(output)
    if not isinstance(head, (list, tuple)) or len(head) != len(outputs):
        raise TEError(f"te.gradient: {len(outputs)} outputs need a list of as many heads "
                      f"(one per output, of shape prefix + output.shape); got {head!r}")
    heads = [_head(o, h) for o, h in zip(outputs, head)]
    for (h, prefix), (h0, prefix0) in zip(heads, heads[:1] * len(heads)):
        if len(prefix) != len(prefix0) or not all(same(a, b) or _equal_size(a, b)
                                                  for a, b in zip(prefix, prefix0)):
            raise TEError(f"te.gradient: heads {h0.name} and {h.name} have different "
                          f"prefixes {list(prefix0)} and {list(prefix)}; give every head the "
                          "same leading dimensions")
    return outputs, heads


# ----------------------------------------------------------------------------- checks

def _check(output, inputs):
    if not isinstance(output, Tensor):
        raise TEError(f"te.gradient: output must be a te.Tensor, got {type(output).__name__}")
    if not dtypes.is_float(output.dtype):
        raise TEError(f"te.gradient: output {output.name} has dtype {output.dtype}; only "
                      "floating-point tensors have gradients (cast it with .astype)")
    for x in inputs:
        if not isinstance(x, Tensor):
            raise TEError(f"te.gradient: inputs must be te.Tensors, got {type(x).__name__}")
        if not dtypes.is_float(x.dtype):
            raise TEError(f"te.gradient: input {x.name} has dtype {x.dtype}; only "
                          "floating-point tensors have gradients (pass integer tensors as "
                          "arguments of the build, not as inputs to differentiate)")


def _head(output, head):
    if head is None:
        shape = tuple(output.shape)
        n = len(shape)

        def identity(*idx):
            eq = all_(*[idx[k].equal(idx[n + k]) for k in range(n)]) if n else const(True)
            return select(eq, const(1, output.dtype), const(0, output.dtype))
        return compute(shape + shape, identity, name=f"{output.op.name}_identity"), shape
    if not isinstance(head, Tensor):
        raise TEError(f"te.gradient: head must be a te.Tensor, got {type(head).__name__}")
    n = len(output.shape)
    tail = tuple(head.shape[len(head.shape) - n:]) if n else ()
    if len(head.shape) < n or not all(same(a, b) or _equal_size(a, b)
                                      for a, b in zip(tail, output.shape)):
        raise TEError(f"te.gradient: head {head.name} has shape {list(head.shape)}, which "
                      f"does not end with the shape {list(output.shape)} of output "
                      f"{output.name}; give a head of shape prefix + output.shape")
    if not dtypes.is_float(head.dtype):
        raise TEError(f"te.gradient: head {head.name} has dtype {head.dtype}; give a "
                      "floating-point head")
    return head, tuple(head.shape[:len(head.shape) - n])


def _equal_size(a, b):
    return isinstance(a, IntImm) and isinstance(b, IntImm) and a.value == b.value


# ----------------------------------------------------------------------------- the graph

class _Graph:
    """The tensors on a path from an input to an output, in topological order."""

    def __init__(self, outputs, inputs):
        self.outputs = outputs
        wanted = set(inputs)
        relevant = {}           # tensor -> whether an input is at or below it
        order, stack = [], [(out, False) for out in reversed(outputs)]
        while stack:
            t, done = stack.pop()
            if t in relevant:
                continue
            if done:
                below = t in wanted or any(relevant.get(s) for s in t.op.input_tensors)
                relevant[t] = below and (dtypes.is_float(t.dtype) or t in wanted)
                order.append(t)
                continue
            stack.append((t, True))
            for s in reversed(t.op.input_tensors):
                if s not in relevant:
                    stack.append((s, False))
        for x in inputs:
            if not relevant.get(x):
                names = " or ".join(o.name for o in outputs)
                raise TEError(f"te.gradient: input {x.name} is not used by output "
                              f"{names}; differentiate with respect to tensors that "
                              "the output reads (directly or through other computes)")
        self.order = [t for t in order if relevant[t]]
        self.relevant = {t for t in self.order}
        self.inputs = wanted
        self.consumers = {}
        for t in self.order:
            for s in t.op.input_tensors:
                if s in self.relevant:
                    ops = self.consumers.setdefault(s, [])
                    if t.op not in ops:
                        ops.append(t.op)
        for t in self.order:
            if not isinstance(t.op, ComputeOp) and any(s in self.relevant
                                                       for s in t.op.input_tensors):
                raise TEError(f"te.gradient: cannot differentiate through {t.name}, an "
                              f"output of {type(t.op).__name__}; only te.compute stages "
                              "have derivatives")


# ----------------------------------------------------------------------------- adjoints

class _Adjoints:
    def __init__(self, graph, seeds, prefix):
        self.graph, self.seeds, self.prefix = graph, seeds, prefix
        self.pvars = [Var(f"p{k}", _index_dtype(n)) for k, n in enumerate(prefix)]
        self.done = {}
        self.op_sites = {}

    def adjoint(self, t):
        if t in self.done:
            return self.done[t]
        consumers = self.graph.consumers.get(t, [])
        if t in self.seeds and not consumers:
            return self.seeds[t]
        sites = []
        for op in consumers:
            sites += self._sites(op).get(t, [])
        result = self._build(t, sites, self.seeds.get(t))
        self.done[t] = result
        return result

    def _head_of(self, t):
        """The adjoint of ``t`` if it leads to an output, else None."""
        if t not in self.graph.relevant:
            return None
        if t not in self.seeds and not self.graph.consumers.get(t):
            return None
        return self.adjoint(t)

    # --- local adjoints of one consumer

    def _sites(self, op):
        cached = self.op_sites.get(op)
        if cached is not None:
            return cached
        wanted = {s for s in op.input_tensors if s in self.graph.relevant}
        axis_domains = {iv.var: Domain(iv.dom.min, iv.dom.extent) for iv in op.axis}
        domains = dict(axis_domains)
        domains.update({iv.var: Domain(iv.dom.min, iv.dom.extent) for iv in op.reduce_axis})
        found = {}
        axis_vars = tuple(self.pvars) + tuple(iv.var for iv in op.axis)
        for k, body in enumerate(op.body):
            out = op.output(k)
            h = self._head_of(out)
            if h is None:
                continue
            adj = h[axis_vars]
            if adj.dtype != body.dtype:
                adj = cast(body.dtype, adj)
            where = f"compute {op.name}"
            if isinstance(body, Reduce):
                init_sites, sites = self._reduce_sites(op, body, adj, wanted, where)
            else:
                init_sites, sites = [], backprop(body, adj, wanted, where)
            for site in init_sites:         # the init runs once per output: no reduce axes
                found.setdefault(site.load.producer, []).append((site, axis_domains))
            for site in sites:
                found.setdefault(site.load.producer, []).append((site, domains))
        self.op_sites[op] = found
        return found

    def _reduce_sites(self, op, red, adj, wanted, where):
        if len(red.source) != 1:
            raise TEError(f"te.gradient: {where} is a tuple reduction ({red.combiner.name}); "
                          "only single-value reductions (sum, prod, max, min) have derivatives")
        kind = _reducer_kind(red.combiner)
        if kind is None:
            raise TEError(f"te.gradient: no derivative is known for the reducer "
                          f"'{red.combiner.name}' in {where}; use te.sum, te.prod, te.max or "
                          "te.min")
        cond = () if _is_true(red.condition) else (red.condition,)
        source = red.source[0]
        init_sites, sites = [], []
        if red.init:
            if kind != "sum":
                raise TEError(f"te.gradient: {where}: init= is only differentiated for "
                              f"te.sum, not {red.combiner.name}")
            init_sites = backprop(red.init[0], adj, wanted, where)
        extra = cond
        if kind == "prod":
            rest = _prod_except(op, red)
            index = tuple(iv.var for iv in op.axis) + tuple(
                iv.var - iv.dom.min for iv in op.reduce_axis)
            adj = fmul(adj, rest[index])
        elif kind in ("max", "min"):
            arg = _arg_extreme(op, red, kind)
            point = _linear_index([(iv.var, iv.dom) for iv in op.reduce_axis])
            extra = cond + (point.equal(arg[tuple(iv.var for iv in op.axis)]),)
        for site in backprop(source, adj, wanted, where):
            site.conditions = extra + tuple(site.conditions)
            sites.append(site)
        return init_sites, sites

    # --- one adjoint

    def _build(self, t, sites, seed):
        shape = tuple(self.prefix) + tuple(t.shape)
        jvars = [Var(f"j{d}", _index_dtype(n)) for d, n in enumerate(t.shape)]
        probe = self.pvars + jvars
        targets = {v: Domain(const(0, v.dtype), n) for v, n in zip(probe, shape)}
        terms, partials = [], []
        for site, domains in sites:
            indices = unclamp(site.load.indices, site.conditions)
            sol = solve(indices, jvars, domains, targets)
            value = substitute(site.adjoint, sol.subst)
            guards = sol.guards + [substitute(c, sol.subst) for c in site.conditions]
            value = cast(t.dtype, value) if value.dtype != t.dtype else value
            if not sol.free:
                terms.append(_guarded(value, guards))
                continue
            partials.append(_partial(t, shape, probe, sol.free, value, guards, len(partials)))
        name = f"{t.op.name}_grad"
        if not terms and len(partials) == 1 and seed is None:
            return _renamed(partials[0], name)

        def body(*idx):
            vmap = dict(zip(probe, idx))
            out = const(0, t.dtype) if seed is None else _as(seed[idx], t.dtype)
            for term in terms:
                out = fadd(out, substitute(term, vmap))
            for p in partials:
                out = fadd(out, p[idx])
            return out
        return compute(shape, body, name=name)


def _as(value, dtype):
    return value if value.dtype == dtype else cast(dtype, value)


def _guarded(value, guards):
    guards = [g for g in guards if not _is_true(g)]
    if not guards:
        return value
    return if_then_else(all_(*guards), value, const(0, value.dtype))


def _partial(t, shape, probe, free, value, guards, number):
    """A reduction over the free variables of one load: a contribution to t's adjoint."""
    def body(*idx):
        axes = [reduce_axis((dom.min, iadd(dom.min, dom.extent)), name=f"{v.name}_r")
                for v, dom in free]
        vmap = dict(zip(probe, idx))
        vmap.update({v: ax.var for (v, _), ax in zip(free, axes)})
        conds = [substitute(g, vmap) for g in guards if not _is_true(g)]
        where = all_(*conds) if conds else None
        return te_sum(substitute(value, vmap), axis=axes, where=where)
    return compute(shape, body, name=f"{t.op.name}_grad_part{number}")


def _renamed(tensor, name):
    op = tensor.op
    return ComputeOp(name, op.axis, op.reduce_axis, op.body, op.tag, op.attrs).output(0)


def _is_true(e):
    return isinstance(e, IntImm) and e.dtype == "bool" and e.value == 1


def _index_dtype(n):
    return "int64" if getattr(n, "dtype", "int32") == "int64" else "int32"


# ----------------------------------------------------------------------------- reductions

def _reducer_kind(combiner):
    """'sum', 'prod', 'max' or 'min' for a single-value reducer of that form, else None."""
    if len(combiner.result) != 1:
        return None
    r, x, y = combiner.result[0], combiner.lhs[0], combiner.rhs[0]
    if not ({getattr(r, "a", None), getattr(r, "b", None)} == {x, y}) or \
            not isinstance(r, (Add, Mul, Max, Min)):
        return None
    return {Add: "sum", Mul: "prod", Max: "max", Min: "min"}[type(r)]


def _linear_index(axes):
    """The position of a point of the reduce axes ([(var, dom)]) in row-major order."""
    out = const(0, "int32")
    for v, dom in axes:
        offset = v if _is_zero_int(dom.min) else v - dom.min
        out = offset if _is_zero_int(out) else out * dom.extent + offset
    return out


def _is_zero_int(e):
    return isinstance(e, IntImm) and e.value == 0


def _fresh_reduction(op):
    """Reduce axes like ``op``'s and a function mapping an expression of ``op``'s loop
    variables (axis values given) onto them."""
    axes = [reduce_axis((iv.dom.min, iadd(iv.dom.min, iv.dom.extent)), name=iv.var.name)
            for iv in op.reduce_axis]

    def remap(expr, axis_values):
        vmap = {iv.var: v for iv, v in zip(op.axis, axis_values)}
        vmap.update({iv.var: ax.var for iv, ax in zip(op.reduce_axis, axes)})
        return substitute(expr, vmap)
    return axes, remap


def _arg_extreme(op, red, kind):
    """The linear reduce index of the first maximum (minimum) of each output of ``op``."""
    better = (lambda a, b: a > b) if kind == "max" else (lambda a, b: a < b)

    def combine(acc, new):
        take = better(new[1], acc[1]) | (new[1].equal(acc[1]) & (new[0] < acc[0]))
        return select(take, new[0], acc[0]), select(take, new[1], acc[1])

    def identity(index_dtype, vdtype):
        worst = float("-inf") if kind == "max" else float("inf")
        return const(2**31 - 1, index_dtype), const(worst, vdtype)
    reducer = comm_reducer(combine, identity, name=f"arg{kind}")

    def body(*idx):
        axes, remap = _fresh_reduction(op)
        index = _linear_index([(ax.var, ax.dom) for ax in axes])
        value = remap(red.source[0], idx)
        cond = None if _is_true(red.condition) else remap(red.condition, idx)
        return reducer((index, value), axis=axes, where=cond)
    outs = compute(op.shape, body, name=f"{op.name}_arg{kind}")
    return outs[0]


def _prod_except(op, red):
    """``rest[i, k]``: the product of the reduced values of output ``i`` but the ``k``-th."""
    shape = tuple(op.shape) + tuple(iv.dom.extent for iv in op.reduce_axis)
    n = len(op.axis)

    def body(*idx):
        axes, remap = _fresh_reduction(op)
        value = remap(red.source[0], idx[:n])
        same_point = all_(*[ax.var.equal(iadd(iv.dom.min, k))
                            for ax, iv, k in zip(axes, op.reduce_axis, idx[n:])])
        value = select(same_point, const(1, value.dtype), value)
        cond = None if _is_true(red.condition) else remap(red.condition, idx[:n])
        return te_prod(value, axis=axes, where=cond)
    return compute(shape, body, name=f"{op.name}_prod_rest")

