"""Custom operators from te declarations: ``nn.autograd.Function.from_te(declare)``.

``declare(*placeholders)`` receives one te placeholder per input tensor, with the input's
concrete shape and dtype, and returns the output tensor (or a tuple of them). The result is a
``TEFunction``: call it on ``nn.Tensor`` s (``f(x, w)``, or ``f.apply(x, w)``) and it runs the
declaration compiled with a default schedule (``default_schedule`` on the CPU: elementwise
intermediates inlined where that recomputes little, the outer axes of every other stage fused
and parallel, the inner ones vectorized;
``nn.ops.gpu.schedule_auto`` for cuda tensors), records a node whose backward is the
declaration's adjoint derived by ``te.gradient`` and compiled the same way, itself a
``TEFunction`` (so gradients can be differentiated again). Shapes are taken from each call's
inputs: the forward and the backward are declared and compiled once per combination of input
shapes, dtypes and device (``nn.ops`` caches the builds), so a second call of the same shapes
costs only the kernel launches. Floating-point inputs that some floating-point output reads
get gradients; integer inputs (indices) and integer outputs do not.
"""
from __future__ import annotations

import functools

import te
from te.expr import Binary, Call, IntImm, ProducerLoad
from te.functor import post_order_visit
from te.autodiff.solve import linear
from te.tensor import ComputeOp

from ..autograd import Function
from ..tensor import Tensor, dtype_name
from ..device import is_gpu as _is_gpu
from .fused import run_kernel


VECTOR = 8     # lanes of the innermost loop (float32 x 8: one AVX register)


def default_schedule(outs):
    """A generic CPU schedule for any te computation: elementwise intermediate stages inlined
    where that recomputes nothing costly (``_inlined``); in every other stage the data axes
    but the last fused into one parallel loop, and ``VECTOR`` lanes vectorized along the axis
    that most loads read contiguously (``_vector_axis``): the last data axis, split, its inner
    part moved inside the reduce loops of a reduction (each reduced element then updates a
    vector of outputs: LLTM's backward ran 7x faster so), or else the innermost reduce axis,
    split and factored out (``rfactor``: vector partial sums, added at the end; 25x for
    ``H @ B^T``)."""
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    s = te.create_schedule([o.op for o in outs])
    inline = _inlined(s, outs)
    for stage in list(s.stages):
        op = stage.op
        if not isinstance(op, ComputeOp):
            continue
        if op in inline:
            stage.compute_inline()
            continue
        if not op.axis:
            continue
        *rest, last = op.axis
        outer = [stage.fuse(*rest)] if rest else []
        along = _vector_axis(op, inline)
        if along is last:
            lo, li = stage.split(last, factor=VECTOR)
            stage.reorder(*outer, lo, *op.reduce_axis, li)
            stage.vectorize(li)
            outer = outer or [lo]
        elif along is not None:
            _, ri = stage.split(along, factor=_reduce_lanes(along))
            partial = s.rfactor(op.output(0), ri)
            s[partial].compute_at(stage, last)
            s[partial].vectorize(s[partial].op.axis[0])
        stage.parallel(outer[0] if outer else last)
    return s


def _vector_axis(op, inline):
    """The last data axis or the innermost reduce axis, whichever more loads read with unit
    stride (ties: the data axis); None when neither spans ``VECTOR`` lanes."""
    last = op.axis[-1]
    candidates = [last] if _spans(last, VECTOR) else []
    inner = op.reduce_axis[-1] if op.reduce_axis else None
    if inner is not None and op.num_outputs == 1 and _reduce_lanes(inner):
        candidates.append(inner)
    if len(candidates) < 2:
        return candidates[0] if candidates else None
    contiguous = {iv: 0 for iv in candidates}

    def visit(node):
        if isinstance(node, ProducerLoad) and node.indices:
            form = linear(node.indices[-1], {iv.var for iv in candidates})
            for iv in candidates:
                if form is not None and form.coeffs.get(iv.var) == 1:
                    contiguous[iv] += 1
    for body in op.body:
        post_order_visit(body, visit)
    return inner if contiguous[inner] > contiguous[last] else last


def _reduce_lanes(iv):
    """The lanes of a reduce axis's partial sums: ``VECTOR`` or 4, dividing its extent."""
    extent = iv.dom.extent
    if not isinstance(extent, IntImm):
        return 0
    return next((n for n in (VECTOR, 4) if extent.value >= n and extent.value % n == 0), 0)


def _spans(iv, lanes):
    return isinstance(iv.dom.extent, IntImm) and iv.dom.extent.value >= lanes


def _inlined(s, outs):
    """The elementwise intermediate stages to inline: cheap ones (loads, selects, a few
    arithmetic operations: a padding, a concatenation) always; others only where no reduction
    reads them (inlined into a reduction they would be recomputed for each reduced element)
    and each stage that ends up computing them reads them once (LLTM's backward reads its
    cell state three times per element: inlined, its tanh and exp ran three times)."""
    ops = [st.op for st in s.stages if isinstance(st.op, ComputeOp)]
    readers = {op: [] for op in ops}
    for op in ops:
        for t in op.input_tensors:
            if t.op in readers:
                readers[t.op].append(op)
    out_ops = {o.op for o in outs}
    inlined = set()

    def effective(op):
        """(the stages that end up computing op's reads, how many reads they make)."""
        found, reads = [], 0
        for r in readers[op]:
            n = _loads(r, op)
            if r in inlined:
                more, inner = effective(r)
                found += more
                reads += n * inner
            else:
                found.append(r)
                reads += n
        return found, reads
    for op in reversed(ops):                # consumers before producers
        if op in out_ops or op.reduce_axis or op.num_outputs != 1:
            continue
        found, reads = effective(op)
        into_reduction = any(r.reduce_axis for r in found)
        # a guarded load (if_then_else) inside a reduction keeps its loop from vectorizing
        if (_cheap(op.body[0]) and not (into_reduction and _guarded_load(op.body[0]))) or \
                (not into_reduction and reads <= len(found)):
            inlined.add(op)
    return inlined


def _loads(reader, op):
    """How many loads of ``op``'s output the body of ``reader`` makes."""
    count = [0]

    def visit(node):
        if isinstance(node, ProducerLoad) and node.producer.op is op:
            count[0] += 1
    for body in reader.body:
        post_order_visit(body, visit)
    return count[0]


def _guarded_load(body):
    found = [False]

    def visit(node):
        if isinstance(node, Call) and node.op == "if_then_else":
            found[0] = True
    post_order_visit(body, visit)
    return found[0]


def _cheap(body):
    costly = [0]

    def visit(node):
        if isinstance(node, Call) and node.op != "if_then_else":
            costly[0] += 4
        elif isinstance(node, Binary) and node.dtype.startswith("float"):
            costly[0] += 1
    post_order_visit(body, visit)
    return costly[0] <= 2


@functools.lru_cache(maxsize=256)
def _plan(declare, shapes, dtypes):
    """(returns a tuple, float outputs, inputs that get gradients) of ``declare`` here."""
    xs = [te.placeholder(shape, dtype, name=f"x{k}")
          for k, (shape, dtype) in enumerate(zip(shapes, dtypes))]
    result = declare(*xs)
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    for k, out in enumerate(outs):
        if not isinstance(out, te.Tensor) or not isinstance(out.op, ComputeOp):
            raise TypeError(f"Function.from_te: {_name(declare)} must return te.compute "
                            f"tensors; output {k} is {out!r}")
    floats = tuple(k for k, o in enumerate(outs) if _is_float(o.dtype))
    diff = tuple(i for i, x in enumerate(xs) if _is_float(x.dtype)
                 and any(outs[k].op.reads(x.op) for k in floats))
    return isinstance(result, (tuple, list)), floats, diff


@functools.lru_cache(maxsize=256)
def _scalar_inputs(declare, zero_d):
    """``declare`` for inputs given as shape (1,) where ``zero_d`` marks a 0-d one."""
    def wrapped(*placeholders):
        views = [_scalar_view(p) if z else p for p, z in zip(placeholders, zero_d)]
        return declare(*views)
    wrapped.__name__ = _name(declare)
    return wrapped


def _scalar_view(p):
    return te.compute((), lambda: p[0], name=f"{p.op.name}_scalar")


def _is_float(dtype):
    return dtype.startswith("float") or dtype.startswith("bfloat")


def _name(declare):
    return getattr(declare, "__name__", type(declare).__name__)


class TEFunction:
    """A differentiable ``nn`` function made from a te declaration (see the module doc)."""

    def __init__(self, declare, name=None):
        if not callable(declare):
            raise TypeError(f"Function.from_te: expected a function that declares te "
                            f"tensors, got {type(declare).__name__}")
        self.declare = declare
        self.name = name or _camel(_name(declare))
        self._backward_fns = {}
        owner = self
        self.function = type(self.name, (Function,), {
            "forward": staticmethod(lambda ctx, *args: owner._forward(ctx, args)),
            "backward": staticmethod(lambda ctx, *grads: owner._backward(ctx, grads)),
            "__module__": __name__, "__doc__": f"The te declaration {_name(declare)}."})

    def __call__(self, *tensors):
        return self.apply(*tensors)

    def apply(self, *tensors):
        """Run the declaration on ``tensors``, recording the node when one requires grad."""
        for k, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"{self.name}: argument {k} is a {type(t).__name__}; every "
                                "argument of a from_te function is an nn.Tensor (one te "
                                "placeholder each); wrap numbers with nn.tensor(...)")
        return self.function.apply(*tensors)

    def __repr__(self):
        return f"TEFunction({self.name})"

    def plan(self, tensors):
        return _plan(self.declare, tuple(tuple(t.shape) for t in tensors),
                     tuple(dtype_name(t.dtype) for t in tensors))

    def _forward(self, ctx, args):
        multiple, floats, _ = self.plan(args)
        declare = self.declare
        if any(a.is_cuda for a in args) and any(a.ndim == 0 for a in args):
            # GPU kernels take 0-d operands as shape (1,): the declaration sees them as 0-d
            declare = _scalar_inputs(declare, tuple(a.ndim == 0 for a in args))
        outs = run_kernel(declare, *[a._data for a in args], schedule=default_schedule)
        results = tuple(Tensor(o) if o.ndim or not _is_gpu(o) else Tensor(o).reshape(())
                        for o in outs)
        ctx.save_for_backward(*args)
        ctx.mark_non_differentiable(*[r for k, r in enumerate(results) if k not in floats])
        return results if multiple else results[0]

    def _backward(self, ctx, grads):
        inputs = ctx.saved_tensors
        _, floats, diff = self.plan(inputs)
        if not diff:
            return (None,) * len(inputs)
        heads = [grads[k].contiguous() for k in floats]    # the engine fills unused ones
        found = self.backward_function(len(inputs)).apply(*inputs, *heads)
        found = iter(found if isinstance(found, tuple) else (found,))
        return tuple(next(found) if i in diff else None for i in range(len(inputs)))

    def backward_function(self, arity):
        """The adjoint of the declaration on ``arity`` inputs, a ``TEFunction`` of
        (inputs..., gradients of the floating-point outputs...)."""
        fn = self._backward_fns.get(arity)
        if fn is None:
            declare = self.declare

            def backward(*placeholders):
                return _adjoints(declare, placeholders[:arity], placeholders[arity:])
            backward.__name__ = _name(declare) + "_backward"
            fn = self._backward_fns[arity] = TEFunction(backward, self.name + "Grad")
        return fn


def _adjoints(declare, xs, heads):
    """The gradients of the differentiable ``xs`` for output gradients ``heads``: one
    te.gradient pass over all the floating-point outputs that read them."""
    result = declare(*xs)
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    floats = [o for o in outs if _is_float(o.dtype)]
    diff = [x for x in xs if _is_float(x.dtype) and any(o.op.reads(x.op) for o in floats)]
    used = [(o, h) for o, h in zip(floats, heads) if any(o.op.reads(x.op) for x in diff)]
    return list(te.gradient([o for o, _ in used], diff, [h for _, h in used]))


def _camel(name):
    return "".join(part[:1].upper() + part[1:] for part in name.split("_")) or "TEFunction"


def from_te(declare, name=None) -> TEFunction:
    """A differentiable function from ``declare(*placeholders) -> te.Tensor (or tuple)``."""
    return TEFunction(declare, name)
