"""The loop IR: buffers, statements and the vector expressions that lowering produces.

Statements are small frozen dataclasses compared by identity, like the expressions of
``te.expr`` (which the loop IR shares). ``BufferLoad``/``BufferStore`` index a ``Buffer``;
``Ramp`` and ``Broadcast`` appear once loops are vectorized.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from te import dtypes
from te.extern import register_loop_ir
from te.expr import Call, Expr, Var, cast

NODE = dataclass(frozen=True, eq=False, repr=False)


class ForKind(enum.Enum):
    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unrolled"
    THREAD_BINDING = "thread_binding"


@NODE
class Buffer:
    """A region of memory: a tensor argument or an intermediate allocation."""
    name: str
    shape: tuple
    dtype: str
    scope: str = "global"
    strides: tuple = ()

    def __repr__(self):
        return f"Buffer({self.name}, {list(self.shape)}, {self.dtype})"


@NODE
class BufferLoad(Expr):
    buffer: Buffer
    indices: tuple
    dtype: str


@NODE
class BufferRef(Expr):
    """A whole buffer passed to an external function (``tvm_call_packed``): its data
    pointer, shape and dtype."""
    buffer: Buffer
    dtype: str = "handle"


@NODE
class Ramp(Expr):
    """The vector ``[base, base + stride, ..., base + (lanes - 1) * stride]``."""
    base: Expr
    stride: Expr
    lanes: int
    dtype: str


@NODE
class Broadcast(Expr):
    value: Expr
    lanes: int
    dtype: str


def ramp(base, stride, lanes) -> Ramp:
    return Ramp(base, stride, lanes, dtypes.with_lanes(base.dtype, lanes))


def broadcast(value, lanes) -> Expr:
    if lanes == 1:
        return value
    return Broadcast(value, lanes, dtypes.with_lanes(value.dtype, lanes))


class Stmt:
    """Base class of statements."""

    def __str__(self):
        from .printer import stmt_str
        return stmt_str(self)

    __repr__ = __str__


register_loop_ir(Stmt)         # te.extern takes ir_builder statements as bodies


@NODE
class For(Stmt):
    loop_var: Var
    min: Expr
    extent: Expr
    kind: ForKind
    body: Stmt
    thread_tag: str = ""
    annotations: tuple = ()

    def __post_init__(self):
        # the bounds have the loop variable's dtype (an int64 shape variable bounds an int32
        # loop: the codegens add and compare them)
        for name in ("min", "extent"):
            value = getattr(self, name)
            if value.dtype != self.loop_var.dtype:
                object.__setattr__(self, name, cast(self.loop_var.dtype, value))


@NODE
class BufferStore(Stmt):
    buffer: Buffer
    value: Expr
    indices: tuple


@NODE
class Allocate(Stmt):
    buffer: Buffer
    body: Stmt
    annotations: tuple = ()     # ("double_buffer",): see passes/inject_double_buffer.py

    @property
    def extents(self) -> tuple:
        """TVM's ``Allocate.extents``: the allocated buffer's shape."""
        return self.buffer.shape


@NODE
class IfThenElse(Stmt):
    condition: Expr
    then_case: Stmt
    else_case: Stmt | None = None


@NODE
class SeqStmt(Stmt):
    seq: tuple

    def __getitem__(self, i):       # TVM's seq[0]
        return self.seq[i]

    def __len__(self):
        return len(self.seq)

    def __bool__(self):             # a statement, even an empty one
        return True


@NODE
class LetStmt(Stmt):
    var: Var
    value: Expr
    body: Stmt


@NODE
class Evaluate(Stmt):
    value: Expr


def storage_sync() -> Stmt:
    """A barrier among the threads of a GPU block (``cuda.syncthreads()``)."""
    return Evaluate(Call("tvm_storage_sync", (), "int32"))


def is_storage_sync(node) -> bool:
    """Whether ``node`` is the barrier that ``storage_sync()`` builds (its statement or its
    call)."""
    if isinstance(node, Evaluate):
        node = node.value
    return isinstance(node, Call) and node.op == "tvm_storage_sync"


def seq(*stmts) -> Stmt:
    """A sequence, flattened, with empty entries dropped."""
    flat = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, SeqStmt):
            flat.extend(s.seq)
        else:
            flat.append(s)
    if len(flat) == 1:
        return flat[0]
    return SeqStmt(tuple(flat))


@dataclass(eq=False)
class PrimFunc:
    """A lowered function: parameters (Buffers and scalar Vars) and a body."""
    name: str
    params: list
    body: Stmt
    tensor_map: dict = field(default_factory=dict)   # te Tensor -> Buffer for the parameters
    outputs: tuple = ()                               # the parameter Buffers that are written
    # bound_checks.py: checks once per call, kernel check sites and their error record
    preconditions: tuple = ()
    check_sites: tuple = ()
    index_error: Buffer | None = None                 # the hidden last parameter, or None

    def __str__(self):
        from .printer import func_str
        return func_str(self)

    __repr__ = __str__

    def script(self) -> str:
        """The printed loop nest (TVM's ``mod.script()``)."""
        return str(self)

    def astext(self, show_meta_data=True) -> str:
        """The printed loop nest (TVM's ``astext()``, the older name of ``script()``)."""
        return str(self)

    def __getitem__(self, name):
        """``mod["main"]``: TVM's lower returns a module of one function; here the module is
        the function."""
        if name != self.name:
            raise KeyError(f"the lowered module has one function, {self.name!r}; got {name!r}")
        return self
