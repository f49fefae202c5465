"""``te.extern``: a stage computed by an external (Python) function, as in TVM's "External
Tensor Functions".

``fcompute(ins, outs)`` receives one ``ExternBuffer`` per input tensor and per output and returns
``te.call_packed("name", ins[0], outs[0], scalars...)``: a call of the function registered
under ``name`` with ``te.register_func``. The function receives each buffer as a
``te.nd.NDArray`` view of its memory (no copy) and scalars as Python numbers; it must fill the
outputs. Or it returns loop IR written with ``te.tir.ir_builder`` (schedule/ir_builder.py),
which compiles with the rest of the function. The outputs are ordinary tensors that computes
may read.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import dtypes
from .expr import Call, Expr, StringImm, convert
from .tensor import Operation, TEError, Tensor, _shape


class ExternError(RuntimeError):
    """An external function raised; the message names it, ``__cause__`` is the exception."""


_REGISTRY = {}
# the statement types of the loop IR (schedule/ir.py registers them when it is imported, so
# that te needs nothing from the layer above it): te.tir.ir_builder bodies of extern stages
LOOP_IR = ()


def register_loop_ir(*types):
    """Accept statements of these types as extern bodies (called by schedule/ir.py)."""
    global LOOP_IR
    LOOP_IR = tuple(dict.fromkeys(LOOP_IR + types))


def register_func(func_name, f=None, override=False):
    """Register ``f`` under ``func_name`` for ``te.call_packed``; usable as a decorator
    (``@te.register_func("name")`` or ``@te.register_func`` for the function's own name)."""
    if callable(func_name) and f is None:
        return register_func(func_name.__name__, func_name, override)
    if not isinstance(func_name, str) or not func_name:
        raise TEError(f"te.register_func: the name must be a non-empty string, got "
                      f"{func_name!r}")

    def register(fn):
        if not callable(fn):
            raise TEError(f"te.register_func({func_name!r}): {fn!r} is not callable")
        if func_name in _REGISTRY and not override:
            raise TEError(f"te.register_func: {func_name!r} is already registered; pass "
                          "override=True to replace it")
        _REGISTRY[func_name] = fn
        return fn
    return register if f is None else register(f)


def get_global_func(name, allow_missing=False):
    """The function registered under ``name`` (None if missing and ``allow_missing``)."""
    fn = _REGISTRY.get(name)
    if fn is None and not allow_missing:
        raise TEError(f"no function is registered under {name!r}; register it with "
                      f"@te.register_func({name!r})")
    return fn


@dataclass(frozen=True, eq=False, repr=False)
class ExternBuffer(Expr):
    """An input or output of an extern stage, as ``fcompute`` sees it (TVM's ``Buffer``):
    ``name``, ``shape`` and the element ``dtype``."""
    name: str
    shape: tuple
    dtype: str

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def data(self):
        """TVM's ``buffer.data`` (its data pointer): here the buffer, which ``call_packed``
        passes to the registered function as an array."""
        return self

    def __getitem__(self, index):
        raise TEError(f"buffer {self.name} of an extern stage cannot be indexed directly; "
                      "index te.tir.ir_builder's ib.buffer_ptr(...) of it, or pass it to "
                      "te.call_packed and work on the array in the registered function")

    def __repr__(self):
        return f"ExternBuffer({self.name}, {list(self.shape)}, {self.dtype})"


@dataclass(frozen=True, eq=False, repr=False)
class ExternOp(Operation):
    """A stage whose outputs an external function computes from its inputs."""
    inputs: tuple
    input_placeholders: tuple
    output_placeholders: tuple
    body: tuple                 # tvm_call_packed calls, run in order
    tag: str = ""
    attrs: dict = field(default_factory=dict)

    @property
    def num_outputs(self):
        return len(self.output_placeholders)

    def output_shape(self, i):
        return self.output_placeholders[i].shape

    def output_dtype(self, i):
        return self.output_placeholders[i].dtype

    def _inputs(self) -> list:
        return list(self.inputs)


def call_packed(*args) -> Call:
    """A call of the function registered under ``args[0]`` with buffers and scalars."""
    if not args or not isinstance(args[0], str):
        raise TEError("te.call_packed: the first argument must be the registered function's "
                      "name (a string), e.g. te.call_packed('my_func', ins[0], outs[0])")
    conv = [StringImm(args[0])]
    for pos, a in enumerate(args[1:], start=1):
        if isinstance(a, Tensor):
            raise TEError(f"te.call_packed({args[0]!r}): argument {pos} is the tensor {a.name}; "
                          "pass the buffers that te.extern hands to fcompute (ins[k], outs[k])")
        if isinstance(a, str):
            raise TEError(f"te.call_packed({args[0]!r}): argument {pos} is the string {a!r}; "
                          "only buffers and numbers (or te.var) can be passed")
        try:
            e = convert(a)
        except TypeError as err:
            raise TEError(f"te.call_packed({args[0]!r}): argument {pos}: {err}") from None
        if not isinstance(e, ExternBuffer) and dtypes.lanes(e.dtype) != 1:
            raise TEError(f"te.call_packed({args[0]!r}): argument {pos} is a vector; pass "
                          "scalars")
        conv.append(e)
    return Call("tvm_call_packed", tuple(conv), "int32")


def _shapes(shape):
    multi = isinstance(shape, (list, tuple)) and len(shape) > 0 and \
        all(isinstance(s, (list, tuple)) for s in shape)
    return (list(shape), True) if multi else ([shape], False)


def extern(shape, inputs, fcompute, name="extern", dtype=None, in_buffers=None,
           out_buffers=None, tag="", attrs=None):
    """Tensors computed by ``fcompute(ins, outs)``, which returns ``te.call_packed(...)``.

    ``shape`` is one shape or a list of shapes (several outputs); ``dtype`` likewise (default:
    the first input's dtype, or float32). Returns one Tensor, or a list for a list of shapes.
    """
    if in_buffers is not None or out_buffers is not None:
        raise TEError(f"extern {name}: in_buffers/out_buffers are not supported; the buffers "
                      "are made from the tensors' shapes and dtypes")
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    for k, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TEError(f"extern {name}: input {k} must be a te Tensor, got {t!r}")
    shapes, multi = _shapes(shape)
    default = inputs[0].dtype if inputs else "float32"
    if isinstance(dtype, (list, tuple)):
        if len(dtype) != len(shapes):
            raise TEError(f"extern {name}: {len(shapes)} output shapes but {len(dtype)} "
                          "dtypes; give one dtype per output")
        out_dtypes = [dtypes.canonical(d) for d in dtype]
    else:
        out_dtypes = [dtypes.canonical(dtype or default)] * len(shapes)
    ins = tuple(ExternBuffer(t.name, t.shape, t.dtype) for t in inputs)
    out_names = [name] if len(shapes) == 1 else [f"{name}.v{k}" for k in range(len(shapes))]
    outs = tuple(ExternBuffer(n, _shape(s, f"extern {name}"), d)
                 for n, s, d in zip(out_names, shapes, out_dtypes))
    body = fcompute(list(ins), list(outs))
    bodies = tuple(body) if isinstance(body, (list, tuple)) else (body,)
    for b in bodies:
        if isinstance(b, LOOP_IR):
            continue
        if not (isinstance(b, Call) and b.op == "tvm_call_packed"):
            raise TEError(f"extern {name}: fcompute must return te.call_packed(...) (or a list "
                          f"of them) or the statement of a te.tir.ir_builder (ib.get()), got "
                          f"{b!r}")
        for a in b.args[1:]:
            if isinstance(a, ExternBuffer) and not any(a is x for x in ins + outs):
                raise TEError(f"extern {name}: call {b.args[0].value!r} passes buffer {a.name}, "
                              "which is not one of this extern's ins/outs")
    op = ExternOp(name, tuple(inputs), ins, outs, bodies, tag, dict(attrs or {}))
    return list(op.outputs) if multi else op.outputs[0]
