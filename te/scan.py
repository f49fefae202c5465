"""``te.scan``: a recurrence over the first axis, as in TVM's "Scan and Recurrent Kernel".

The scan's outputs have the shapes of its state placeholders. Rows ``[0, init.shape[0])`` come
from ``init``; for every later step ``t`` (in order) row ``t`` of ``update`` is computed, and
the update reads the rows already computed through the state placeholder, at ``t - 1`` or
earlier. Several states (lists of init/update/state) advance together, one step at a time.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .expr import IntImm, ProducerLoad, Var
from .functor import post_order_visit
from .tensor import ORDERED, ComputeOp, IterVar, Operation, PlaceholderOp, Range, TEError, \
    Tensor


@dataclass(frozen=True, eq=False, repr=False)
class ScanOp(Operation):
    """The scan: ``scan_axis`` runs over the steps ``[init.shape[0], state.shape[0])``."""
    scan_axis: IterVar
    init: tuple
    update: tuple
    state_placeholder: tuple
    inputs: tuple = ()
    tag: str = ""
    attrs: dict = field(default_factory=dict)

    @property
    def num_outputs(self):
        return len(self.update)

    def output_shape(self, i):
        return self.state_placeholder[i].shape

    def output_dtype(self, i):
        return self.state_placeholder[i].dtype

    def _inputs(self) -> list:
        return list(self.init) + list(self.update)

    def body_ops(self) -> list:
        """The computed operations of one step: those that read a state or one of the scan's
        ``inputs`` (directly or not; TVM's ScanGetBody) and that an update reads (directly or
        not), the updates included, producers first."""
        states = {t.op for t in self.state_placeholder} | {t.op for t in self.inputs}
        order, seen = [], set()

        def visit(op):
            if op in seen or not isinstance(op, ComputeOp):
                return
            seen.add(op)
            for t in op.input_tensors():
                visit(t.op)
            if any(t.op in states or t.op in order for t in op.input_tensors()):
                order.append(op)
        for u in self.update:
            visit(u.op)
        return order


def _as_list(x, what):
    items = list(x) if isinstance(x, (list, tuple)) else [x]
    for t in items:
        if not isinstance(t, Tensor):
            raise TEError(f"te.scan: {what} must be tensors (or lists of tensors), got {t!r}")
    return items


def _same(a, b) -> bool:
    from .arith import simplify
    d = simplify(a - b)
    return isinstance(d, IntImm) and d.value == 0


def scan(init, update, state_placeholder, inputs=None, name="scan", tag="", attrs=None):
    """A scan over the first axis: ``init`` gives the first rows, ``update`` row ``t`` from
    earlier rows of the output, read through ``state_placeholder``.

    Returns one Tensor, or a list of Tensors when the arguments are lists (several states).
    """
    inits = _as_list(init, "init")
    updates = _as_list(update, "update")
    states = _as_list(state_placeholder, "state_placeholder")
    if not len(inits) == len(updates) == len(states):
        raise TEError(f"scan {name}: got {len(inits)} init, {len(updates)} update and "
                      f"{len(states)} state tensors; give one init and one update per state")
    for k, (ini, upd, st) in enumerate(zip(inits, updates, states)):
        which = f"scan {name}, state {k} ({st.name})"
        if not isinstance(st.op, PlaceholderOp):
            raise TEError(f"{which}: the state must be a te.placeholder of the output's shape")
        for t, role in ((ini, "init"), (upd, "update")):
            if not isinstance(t.op, ComputeOp):
                raise TEError(f"{which}: the {role} {t.name} must be a te.compute")
            if t.ndim != st.ndim or t.ndim == 0:
                raise TEError(f"{which}: the {role} {t.name} has {t.ndim} dimensions but the "
                              f"state has {st.ndim}; give them the same rank (at least 1)")
            if t.dtype != st.dtype:
                raise TEError(f"{which}: the {role} {t.name} has dtype {t.dtype} but the state "
                              f"has {st.dtype}; give them one dtype (use .astype)")
        for d in range(st.ndim):
            if not _same(upd.shape[d], st.shape[d]):
                raise TEError(f"{which}: the update {upd.name} has shape "
                              f"{list(upd.shape)} but the state has {list(st.shape)}; declare "
                              "the update with the state's shape")
            if d > 0 and not _same(ini.shape[d], st.shape[d]):
                raise TEError(f"{which}: the init {ini.name} has shape {list(ini.shape)}; "
                              f"all but its first dimension must match the state's "
                              f"{list(st.shape)}")
        if not _same(st.shape[0], states[0].shape[0]) or \
                not _same(ini.shape[0], inits[0].shape[0]):
            raise TEError(f"{which}: every state must have the same number of steps "
                          f"({states[0].shape[0]}) and every init the same number of rows "
                          f"({inits[0].shape[0]})")
    first = inits[0].shape[0]
    axis = IterVar(Range(first, states[0].shape[0] - first), Var(f"{name}.idx"), ORDERED)
    op = ScanOp(name, axis, tuple(inits), tuple(updates), tuple(states),
                tuple(_as_list(inputs, "inputs")) if inputs is not None else (), tag,
                dict(attrs or {}))
    _check_causal(op)
    outs = op.outputs
    return outs[0] if len(outs) == 1 else list(outs)


def _check_causal(op):
    """Refuse a step that reads its own row (or a later one) of a state."""
    from .arith import INF, const_bounds, simplify
    states = {t.op: t for t in op.state_placeholder}
    first = op.scan_axis.dom.min
    for body in op.body_ops():
        t = body.axis[0].var
        ranges = {t: (first.value if isinstance(first, IntImm) else 1, INF)}
        for iv in body.axis[1:]:
            ranges[iv.var] = (0, INF)
        for iv in body.reduce_axis:
            ranges[iv.var] = (0, INF)
        loads = []

        def visit(node):
            if isinstance(node, ProducerLoad) and node.producer.op in states:
                loads.append(node)
        for b in body.body:
            post_order_visit(b, visit)
        for load in loads:
            ahead = simplify(load.indices[0] - t)
            if const_bounds(ahead, ranges)[1] > -1:
                raise TEError(
                    f"scan {op.name}: {body.name} reads the state "
                    f"{load.producer.name}[{', '.join(map(str, load.indices))}], but the update "
                    f"at step {t.name} may read only earlier steps; index the state's first "
                    f"dimension with {t.name} - 1 (or earlier), e.g. "
                    f"{load.producer.name}[{t.name} - 1, ...]")
