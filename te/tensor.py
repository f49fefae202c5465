"""The te graph: iteration variables, tensors and the operations that produce them.

``placeholder`` declares an input; ``compute`` declares a tensor by a lambda over its indices.
Operations are immutable; a schedule that rewrites the graph (cache_read, rfactor) builds new
operations that reuse the old IterVars, so relations recorded on them stay valid.
"""
from __future__ import annotations

import inspect
import weakref
from dataclasses import dataclass, field

from . import dtypes
from .expr import Expr, ExprOp, IntImm, ProducerLoad, Reduce, Var, const, convert
from .functor import post_order_visit


class TEError(ValueError):
    """A misuse of the tensor-expression DSL."""


@dataclass(frozen=True, eq=False, repr=False)
class Range:
    min: Expr
    extent: Expr

    @staticmethod
    def make(begin, end=None) -> "Range":
        if end is None:
            return Range(const(0), convert(begin))
        begin, end = convert(begin), convert(end)
        from .arith import simplify
        return Range(begin, simplify(end - begin))

    def __repr__(self):
        return f"Range(min={self.min}, extent={self.extent})"


DATA_PAR, THREAD_INDEX, COMM_REDUCE, ORDERED, OPAQUE = 0, 1, 2, 3, 4
ITER_TYPE_NAMES = {DATA_PAR: "DataPar", THREAD_INDEX: "ThreadIndex", COMM_REDUCE: "CommReduce",
                   ORDERED: "Ordered", OPAQUE: "Opaque"}


@dataclass(frozen=True, eq=False, repr=False)
class IterVar:
    """A loop variable with its domain: a tensor axis, a reduction axis or a thread index."""
    dom: Range | None
    var: Var
    iter_type: int = DATA_PAR
    thread_tag: str = ""

    # TVM's IterVar kinds (tvm.te.schedule.IterVar.Unrolled is s[T].iter_var_attrs' iter_type)
    DataPar, ThreadIndex, CommReduce, Ordered, DimInfo = 0, 1, 2, 3, 4
    Unrolled, Vectorized, Parallelized, Tensorized = 5, 6, 7, 8

    @property
    def name(self):
        return self.var.name

    # IterVars appear in index expressions; they behave as their variable.
    def __add__(self, o): return self.var + o
    def __radd__(self, o): return o + self.var
    def __sub__(self, o): return self.var - o
    def __rsub__(self, o): return o - self.var
    def __mul__(self, o): return self.var * o
    def __rmul__(self, o): return o * self.var
    def __floordiv__(self, o): return self.var // o
    def __mod__(self, o): return self.var % o
    def __neg__(self): return -self.var
    def __lt__(self, o): return self.var < o
    def __le__(self, o): return self.var <= o
    def __gt__(self, o): return self.var > o
    def __ge__(self, o): return self.var >= o

    # i == j builds the comparison (as on expressions); as a bool, whether they are one IterVar
    __eq__, __ne__, __hash__ = ExprOp.__eq__, ExprOp.__ne__, ExprOp.__hash__

    def equal(self, o):
        return self.var.equal(o)

    def astype(self, dtype):
        return self.var.astype(dtype)

    def __repr__(self):
        dom = f", {self.dom.min}, {self.dom.extent}" if self.dom is not None else ""
        return f"IterVar({self.var.name}{dom}, {ITER_TYPE_NAMES[self.iter_type]})"


def index_dtype(*exprs) -> str:
    """The dtype of a loop variable that ranges over ``exprs`` (an extent, a minimum):
    int64 when one of them is int64 (an int64 size variable loops in int64), else int32."""
    return "int64" if any(dtypes.element(convert(e).dtype) == "int64" for e in exprs) \
        else "int32"


_REDUCE_VARS = weakref.WeakSet()
_SIZE_VARS = weakref.WeakSet()      # vars used as tensor dimensions: sizes, never negative


def var(name="v", dtype="int32") -> Var:
    """A symbolic scalar, for example a shape that is bound when the function is called."""
    return Var(name, dtypes.canonical(dtype))


size_var = var


def reduce_axis(dom, name="rv") -> IterVar:
    """A reduction axis over ``dom`` = (begin, end) or an extent."""
    bounds = tuple(dom) if isinstance(dom, (tuple, list)) else (dom,)
    bounds = tuple(int(b) if isinstance(b, float) and b.is_integer() else b for b in bounds)
    for b in bounds:
        if isinstance(b, IterVar) or not dtypes.is_int(convert(b).dtype):
            raise TEError(f"reduce_axis {name}: the range {dom} must be integers or integer "
                          "te.var")
    rng = Range.make(*bounds)
    if isinstance(rng.extent, IntImm) and rng.extent.value < 0:
        shown = tuple(dom) if isinstance(dom, (tuple, list)) else dom
        raise TEError(f"reduce_axis {name}: the range {shown} has a negative extent; give "
                      "(begin, end) with end >= begin, or an extent >= 0")
    iv = IterVar(rng, Var(name, index_dtype(rng.min, rng.extent)), COMM_REDUCE)
    _REDUCE_VARS.add(iv.var)
    return iv


THREAD_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y",
               "threadIdx.z", "vthread")


def thread_axis(dom=None, tag="", name=""):
    """A GPU thread index such as ``te.thread_axis("threadIdx.x")``."""
    if isinstance(dom, str):
        dom, tag = None, dom
    if not tag:
        raise TEError("te.thread_axis needs a tag such as 'blockIdx.x', 'threadIdx.x' or 'vthread'")
    if tag not in THREAD_TAGS:
        raise TEError(f"te.thread_axis: unknown thread tag {tag!r}; use one of "
                      f"{', '.join(THREAD_TAGS)}")
    rng = None if dom is None else (Range.make(*dom) if isinstance(dom, (tuple, list))
                                    else Range.make(dom))
    return IterVar(rng, Var(name or tag), THREAD_INDEX, tag)


def is_reduce_var(v) -> bool:
    return v in _REDUCE_VARS


def is_size_var(v) -> bool:
    """Whether ``v`` is a tensor dimension somewhere (so it is >= 0)."""
    return v in _SIZE_VARS


@dataclass(frozen=True, eq=False, repr=False)
class Tensor:
    """An output of an operation. ``A[i, j]`` reads it inside a compute expression."""
    op: "Operation"
    value_index: int
    shape: tuple
    dtype: str

    @property
    def name(self):
        return self.op.name if self.op.num_outputs == 1 else f"{self.op.name}.v{self.value_index}"

    @property
    def ndim(self):
        return len(self.shape)

    def __getitem__(self, indices) -> ProducerLoad:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if any(isinstance(i, slice) for i in indices) or len(indices) < len(self.shape):
            return TensorSlice(self, indices)   # A[i][j]; A[i, 0:16]: a tensor intrinsic's region
        if len(indices) != len(self.shape):
            raise _index_count_error(self, len(indices))
        conv = []
        for pos, idx in enumerate(indices):
            e = convert(idx)
            if not dtypes.is_int(e.dtype):
                raise TEError(f"index {pos} of tensor {self.name} is {e} of dtype {e.dtype}; "
                              "indices must be integers (use .astype('int32'))")
            conv.append(e)
        return ProducerLoad(self, tuple(conv), self.dtype)

    def __call__(self, *indices):
        return self[indices]

    def __iter__(self):
        raise TypeError(f"tensor {self.name} is not iterable; index it with A[i, j]")

    # TVM's tensor arithmetic: A + B, A - 1, 2 * A, A / B, -A build te.topi compute ops
    # (two tensors: numpy broadcasting, tagged "broadcast"; a tensor and a scalar:
    # "elemwise"). Equality and hashing stay by identity: tensors are dict keys.
    _tensor_arithmetic = True
    __array_ufunc__ = None          # numpy scalars defer to these operators

    def __add__(self, other):
        return _topi_binary("add", self, other)

    def __radd__(self, other):
        return _topi_binary("add", other, self)

    def __sub__(self, other):
        return _topi_binary("subtract", self, other)

    def __rsub__(self, other):
        return _topi_binary("subtract", other, self)

    def __mul__(self, other):
        return _topi_binary("multiply", self, other)

    def __rmul__(self, other):
        return _topi_binary("multiply", other, self)

    def __truediv__(self, other):
        return _topi_binary("divide", self, other)

    def __rtruediv__(self, other):
        return _topi_binary("divide", other, self)

    def __neg__(self):
        if dtypes.is_float(self.dtype):       # x * -1 keeps the sign of zeros (-0.0)
            return _topi_binary("multiply", self, const(-1, self.dtype))
        from .topi.math import negative
        return negative(self)

    def __repr__(self):
        return f"Tensor(name={self.name}, shape={list(self.shape)}, dtype={self.dtype})"


def _topi_binary(opname, lhs, rhs):
    from .topi import broadcast
    return getattr(broadcast, opname)(lhs, rhs)


def _index_count_error(tensor, count):
    return TEError(f"tensor {tensor.name} has {len(tensor.shape)} dimensions but was indexed "
                   f"with {count} indices; give one index per dimension")


class TensorSlice(ExprOp):
    """``A[i]`` of a tensor of more dimensions: ``A[i][j]`` reads ``A[i, j]``. Used as an
    expression before every dimension has its index, it raises."""

    __slots__ = ("tensor", "indices")

    def __init__(self, tensor, indices):
        self.tensor, self.indices = tensor, indices

    def __getitem__(self, more):
        return self.tensor[self.indices + (more if isinstance(more, tuple) else (more,))]

    def asobject(self):
        if any(isinstance(i, slice) for i in self.indices):
            raise TEError(f"tensor {self.tensor.name}: slices are not supported as indices of "
                          f"an expression ({self} is a region: an argument of a tensor "
                          "intrinsic's call); index with loop variables")
        raise _index_count_error(self.tensor, len(self.indices))

    @property
    def dtype(self):
        return self.tensor.dtype

    def __str__(self):
        def one(i):
            return f"{i.start}:{i.stop}" if isinstance(i, slice) else str(i)
        return f"{self.tensor.name}[{', '.join(one(i) for i in self.indices)}]"


class TensorList(list):
    """A list of tensors that can also be called, returning itself (``op.input_tensors`` is
    a property in TVM and was a method here: both spellings work)."""

    def __call__(self):
        return self


@dataclass(frozen=True, eq=False, repr=False)
class Operation:
    name: str
    tag = ""        # TVM's op.tag; placeholders have none (compute ops set their own field)

    @property
    def num_outputs(self):
        return 1

    def output(self, i: int = 0) -> Tensor:
        return self.outputs[i]

    @property
    def outputs(self) -> tuple:
        cached = self.__dict__.get("_outputs")
        if cached is None:
            cached = tuple(Tensor(self, i, self.output_shape(i), self.output_dtype(i))
                           for i in range(self.num_outputs))
            object.__setattr__(self, "_outputs", cached)
        return cached

    @property
    def input_tensors(self) -> "TensorList":
        """The tensors this operation reads, in order: ``op.input_tensors[0]`` as in TVM
        (``op.input_tensors()`` works too)."""
        return TensorList(self._inputs())

    def _inputs(self) -> list:
        return []

    def reads(self, producer) -> bool:
        """Whether this operation reads an output of operation ``producer``, directly or
        through other operations."""
        todo, seen = [self], set()
        while todo:
            for t in todo.pop().input_tensors():
                if t.op is producer:
                    return True
                if t.op not in seen:
                    seen.add(t.op)
                    todo.append(t.op)
        return False

    def __repr__(self):
        return f"{type(self).__name__}({self.name})"


@dataclass(frozen=True, eq=False, repr=False)
class PlaceholderOp(Operation):
    shape: tuple
    dtype: str

    def output_shape(self, i):
        return self.shape

    def output_dtype(self, i):
        return self.dtype


@dataclass(frozen=True, eq=False, repr=False)
class ComputeOp(Operation):
    axis: tuple
    reduce_axis: tuple
    body: tuple
    tag: str = ""
    attrs: dict = field(default_factory=dict)

    @property
    def num_outputs(self):
        return len(self.body)

    @property
    def shape(self):
        return tuple(iv.dom.extent for iv in self.axis)

    def output_shape(self, i):
        return self.shape

    def output_dtype(self, i):
        return self.body[i].dtype

    @property
    def is_reduction(self):
        return isinstance(self.body[0], Reduce)

    def _inputs(self) -> list:
        found = {}

        def visit(node):
            if isinstance(node, ProducerLoad):
                found.setdefault(node.producer, None)
            elif isinstance(node, Reduce):
                for s in node.source + (node.condition,):
                    post_order_visit(s, visit_inner)

        def visit_inner(node):
            if isinstance(node, ProducerLoad):
                found.setdefault(node.producer, None)

        for b in self.body:
            post_order_visit(b, visit)
        return list(found)


def _shape(shape, what):
    if not isinstance(shape, (tuple, list)):
        shape = (shape,)
    out = []
    for pos, s in enumerate(shape):
        if isinstance(s, float) and s.is_integer():    # TVM tutorials write N / bn
            s = int(s)
        if isinstance(s, IterVar):
            raise TEError(f"{what}: shape entry {pos} is the axis {s.name}, a loop variable; "
                          f"give a size (its extent is {s.name}.dom.extent)")
        e = convert(s)
        if isinstance(e, Var):
            _SIZE_VARS.add(e)
        if not dtypes.is_int(e.dtype):
            raise TEError(f"{what}: shape entry {pos} is {e} of dtype {e.dtype}; "
                          "shapes must be integers or integer te.var")
        if isinstance(e, IntImm):
            if e.value < 0:
                raise TEError(f"{what}: shape entry {pos} is {e.value}; sizes must be >= 0")
            if e.dtype != "int32" and e.value < 2**31:     # numpy's int64 sizes, for one
                e = const(e.value, "int32")
        out.append(e)
    return tuple(out)


def placeholder(shape, dtype="float32", name="placeholder") -> Tensor:
    """An input tensor of the given shape and dtype (float32 by default)."""
    return PlaceholderOp(name, _shape(shape, f"placeholder {name}"),
                         dtypes.canonical(dtype)).output(0)


def _lambda_names(fcompute, ndim, name, fewer=False):
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        params = []
    if params and params[0].kind == inspect.Parameter.VAR_POSITIONAL:
        return [f"i{k}" for k in range(ndim)]
    names = [p.name for p in params]
    if len(names) != ndim and not (fewer and 0 < len(names) < ndim):
        raise TEError(f"compute {name}: the lambda takes {len(names)} arguments "
                      f"({', '.join(names)}) but the shape has {ndim} dimensions; give the "
                      "lambda one parameter per dimension")
    return names


def compute(shape, fcompute, name="compute", tag="", attrs=None):
    """A tensor whose element at index ``(i, j, ...)`` is ``fcompute(i, j, ...)``.

    Returns one Tensor, or a list of Tensors when ``fcompute`` returns a tuple.
    """
    shape = _shape(shape, f"compute {name}")
    names = _lambda_names(fcompute, len(shape), name, fewer=True)
    from .tensor_compute import TensorIntrinCall, tensor_compute
    if len(names) < len(shape):         # the other dimensions: a tensor intrinsic's output
        return tensor_compute(shape, names, fcompute, name, tag, attrs)
    axis = tuple(IterVar(Range(const(0), ext), Var(n, index_dtype(ext)), DATA_PAR)
                 for n, ext in zip(names, shape))
    body = fcompute(*[iv.var for iv in axis])
    if isinstance(body, TensorIntrinCall):      # TVM's TensorComputeOp
        return tensor_compute(shape, names, fcompute, name, tag, attrs, axis, body)
    bodies = tuple(body) if isinstance(body, (tuple, list)) else (body,)
    bodies = tuple(convert(b) for b in bodies)
    reduce_axis = _check_body(name, bodies)
    op = ComputeOp(name, axis, reduce_axis, bodies, tag, dict(attrs or {}))
    outs = op.outputs
    return outs[0] if len(outs) == 1 else list(outs)


def _check_body(name, bodies):
    """Validate reductions in a compute body and return its reduce axes."""
    reduces = [b for b in bodies if isinstance(b, Reduce)]
    if reduces and len(reduces) != len(bodies):
        raise TEError(f"compute {name}: all outputs must be reductions or none")
    for b in bodies:
        def inner(node, top=b):
            if isinstance(node, Reduce) and node is not top:
                raise TEError(f"compute {name}: a reduction ({node.combiner.name}) must be the "
                              "whole body of a compute; compute it in its own te.compute and "
                              "use the result")
        post_order_visit(b, inner)
    if reduces:
        first = reduces[0]
        for r in reduces[1:]:
            if r.combiner is not first.combiner or r.axis != first.axis:
                raise TEError(f"compute {name}: several reductions in one compute must come "
                              "from one tuple reducer call")
    allowed = set(iv.var for iv in (reduces[0].axis if reduces else ()))
    for b in bodies:
        def check(node):
            if isinstance(node, Var) and is_reduce_var(node) and node not in allowed:
                raise TEError(f"compute {name}: reduce axis {node.name} is used outside a "
                              f"reduction; wrap the expression in te.sum(..., axis={node.name}) "
                              "or another reducer")
        post_order_visit(b, check)
    return tuple(reduces[0].axis) if reduces else ()
