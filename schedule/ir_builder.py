"""TVM's ``ir_builder``: loop IR written by hand, for the body of a ``te.extern`` stage.

    def cumsum_ir(x, y):
        ib = te.tir.ir_builder.create()
        xp, yp = ib.buffer_ptr(x), ib.buffer_ptr(y)
        with ib.for_range(0, n, name="i", kind="parallel") as i:
            yp[i, 0] = xp[i, 0]
            with ib.for_range(1, m, name="j") as j:
                yp[i, j] = yp[i, j - 1] + xp[i, j]
        return ib.get()

    C = te.extern((n, m), [A], lambda ins, outs: cumsum_ir(ins[0], outs[0]), name="C")

``buffer_ptr`` gives a view of an extern buffer that indexes like the tensor (``y[i, j]``) or
flat (``y[i * m + j]``, as TVM's pointer form: one index into a buffer of several dimensions,
which storage_flatten keeps as it is); ``allocate`` a scratch buffer for the rest of the scope;
``scope_attr(tx, "thread_extent", n)`` binds the rest of the scope to GPU threads. The
statement ``get()`` returns is the stage's body: lowering puts the stage's real buffers in
place of the extern buffers (``extern_body``), and every target runs it as any other loop
nest.
"""
from __future__ import annotations

import contextlib

from te import dtypes
from te.expr import Expr, IntImm, Var, cast, const, convert
from te.extern import ExternBuffer

from .functor import post_order_visit, replace_buffers, substitute
from .ir import (Allocate, Buffer, BufferLoad, BufferStore, Evaluate, For, ForKind,
                 IfThenElse, LetStmt, Stmt, seq)
from .simplify import simplify

KINDS = {"serial": ForKind.SERIAL, "parallel": ForKind.PARALLEL,
         "vectorize": ForKind.VECTORIZED, "unroll": ForKind.UNROLLED}


class IRBuilderError(ValueError):
    """A misuse of the IR builder; the message says what to write instead."""


def placeholder_buffer(extern_buffer) -> Buffer:
    """The Buffer that stands for ``extern_buffer`` (an input or output of a te.extern) in
    builder IR; the same one each time (kept on the extern buffer)."""
    buffer = extern_buffer.__dict__.get("_ir_buffer")
    if buffer is None:
        buffer = Buffer(extern_buffer.name, tuple(extern_buffer.shape), extern_buffer.dtype)
        object.__setattr__(extern_buffer, "_ir_buffer", buffer)
    return buffer


class BufferVar:
    """A buffer as the builder indexes it: ``b[i, j]`` (one index per dimension) or ``b[k]``
    (the flat element index, TVM's pointer form); assignment stores."""

    def __init__(self, builder, buffer):
        self._builder, self.buffer = builder, buffer

    @property
    def dtype(self):
        return self.buffer.dtype

    @property
    def shape(self):
        return self.buffer.shape

    def _indices(self, index):
        index = index if isinstance(index, tuple) else (index,)
        ndim = len(self.buffer.shape)
        if len(index) not in (1, max(ndim, 1)):
            raise IRBuilderError(f"buffer {self.buffer.name} has {ndim} dimensions: index it with "
                                 f"{ndim} indices, or with one flat element index")
        out = []
        for i in index:
            e = convert(i)
            if not dtypes.is_int(e.dtype):
                raise IRBuilderError(f"buffer {self.buffer.name}: index {e} has dtype {e.dtype}; "
                                     "indices must be integers")
            out.append(e)
        return tuple(out)

    def __getitem__(self, index):
        return BufferLoad(self.buffer, self._indices(index), self.buffer.dtype)

    def __setitem__(self, index, value):
        indices = self._indices(index)
        value = convert(value)
        if value.dtype != self.buffer.dtype:
            value = cast(self.buffer.dtype, value)
        self._builder.emit(BufferStore(self.buffer, value, indices))


class IRBuilder:
    """Builds a statement: ``emit`` appends; ``for_range``, ``if_scope``/``else_scope`` and
    ``new_scope`` are ``with`` blocks; ``allocate`` and ``let`` cover the rest of their scope."""

    def __init__(self):
        self._scopes = [[]]

    def emit(self, stmt):
        """Append a statement (an expression is evaluated for its effect)."""
        if isinstance(stmt, Expr):
            stmt = Evaluate(stmt)
        if not isinstance(stmt, Stmt):
            raise IRBuilderError(f"emit: {stmt!r} is not a statement or an expression")
        self._scopes[-1].append(stmt)

    @contextlib.contextmanager
    def for_range(self, begin, end, name="i", dtype="int32", kind="serial"):
        """A loop ``for name in range(begin, end)``; yields the loop variable."""
        if kind not in KINDS:
            raise IRBuilderError(f"for_range {name}: unknown kind {kind!r}; use one of "
                                 f"{', '.join(KINDS)}")
        begin, end = convert(begin), convert(end)
        for what, e in (("begin", begin), ("end", end)):
            if not dtypes.is_int(e.dtype):
                raise IRBuilderError(f"for_range {name}: {what} {e} must be an integer")
        var = Var(name, dtype)
        extent = simplify(end - begin)
        if KINDS[kind] in (ForKind.VECTORIZED, ForKind.UNROLLED) and \
                not isinstance(extent, IntImm):
            raise IRBuilderError(f"for_range {name}: kind {kind!r} needs a constant extent, "
                                 f"got {extent}")
        self._scopes.append([])
        yield var
        body = self._close()
        if not (isinstance(begin, IntImm) and begin.value == 0):
            # loops start at 0 in the loop IR: the body sees the variable shifted by begin
            inner = Var(name, dtype)
            body = substitute(body, {var: inner + cast(dtype, begin)})
            var = inner
        self.emit(For(var, const(0, dtype), extent, KINDS[kind], body))

    @contextlib.contextmanager
    def if_scope(self, cond):
        """Run the block where ``cond`` holds; an ``else_scope`` may follow."""
        cond = convert(cond)
        if not dtypes.is_bool(cond.dtype):
            raise IRBuilderError(f"if_scope: the condition {cond} has dtype {cond.dtype}; give "
                                 "a comparison")
        self._scopes.append([])
        yield
        self.emit(IfThenElse(cond, self._close()))

    @contextlib.contextmanager
    def else_scope(self):
        """The other side of the ``if_scope`` just closed."""
        prev = self._scopes[-1][-1] if self._scopes[-1] else None
        if not isinstance(prev, IfThenElse) or prev.else_case is not None:
            raise IRBuilderError("else_scope must follow an if_scope block directly")
        self._scopes[-1].pop()
        self._scopes.append([])
        yield
        self.emit(IfThenElse(prev.condition, prev.then_case, self._close()))

    @contextlib.contextmanager
    def new_scope(self):
        """A block of its own: the ``allocate`` and ``let`` inside it end with it."""
        self._scopes.append([])
        yield
        self.emit(self._close())

    def buffer_ptr(self, buf) -> BufferVar:
        """The buffer ``buf`` (one of the ``ins``/``outs`` that te.extern passes, or one from
        ``allocate``) to index and store into."""
        if isinstance(buf, BufferVar):
            return buf
        if not isinstance(buf, ExternBuffer):
            raise IRBuilderError(f"buffer_ptr: {buf!r} is not a buffer; pass ins[k] or outs[k] "
                                 "of the te.extern fcompute")
        return BufferVar(self, placeholder_buffer(buf))

    def allocate(self, dtype, shape, name="buf", scope="global") -> BufferVar:
        """A scratch buffer for the rest of the current scope."""
        shape = tuple(convert(s) for s in (shape if isinstance(shape, (tuple, list))
                                            else (shape,)))
        buffer = Buffer(name, shape, dtypes.canonical(dtype), scope)
        self._scopes[-1].append(_Open(lambda body: Allocate(buffer, body)))
        return BufferVar(self, buffer)

    def let(self, name, value) -> Var:
        """A variable bound to ``value`` for the rest of the current scope."""
        value = convert(value)
        var = Var(name, value.dtype)
        self._scopes[-1].append(_Open(lambda body: LetStmt(var, value, body)))
        return var

    def scope_attr(self, node, key, value):
        """``scope_attr(tx, "thread_extent", n)`` (``tx`` a te.thread_axis): the rest of the
        current scope runs on ``n`` GPU threads (or blocks) of that index."""
        tag = getattr(node, "thread_tag", "")
        if key != "thread_extent" or not tag:
            raise IRBuilderError(f"scope_attr: only (te.thread_axis(...), 'thread_extent', n) "
                                 f"is supported, got ({node!r}, {key!r})")
        extent = convert(value)
        self._scopes[-1].append(_Open(lambda body: For(node.var, const(0), extent,
                                                       ForKind.THREAD_BINDING, body, tag)))

    def get(self) -> Stmt:
        """The statement built so far."""
        if len(self._scopes) != 1:
            raise IRBuilderError("get() inside an open with-block; call it after the blocks")
        return _wrap(self._scopes[0])

    def _close(self):
        return _wrap(self._scopes.pop())


class _Open:
    """An allocate/let marker: it wraps the statements after it in its scope."""

    def __init__(self, make):
        self.make = make


def _wrap(items):
    out = []
    for k, item in enumerate(items):
        if isinstance(item, _Open):
            return seq(*out, item.make(_wrap(items[k + 1:])))
        out.append(item)
    return seq(*out) if out else Evaluate(const(0))


def create() -> IRBuilder:
    """A new IR builder (``te.tir.ir_builder.create()``)."""
    return IRBuilder()


def _check_flat_indices(stmt, buffers):
    """Refuse one flat index into a placeholder whose real buffer has strides (storage_align)
    and more than one dimension."""
    def visit(node):
        real = buffers.get(node.buffer) if isinstance(node, (BufferLoad, BufferStore)) else None
        if real is not None and real is not node.buffer and \
                len(node.indices) == 1 < len(real.shape) and real.strides:
            raise IRBuilderError(f"buffer {real.name} is strided (storage_align): index it "
                                 "with one index per dimension in the ir_builder body")
    post_order_visit(stmt, visit)


def extern_body(stmt, buffers) -> Stmt:
    """Builder IR ``stmt`` with the stage's real buffers in place of its extern buffers:
    ``buffers`` maps each ExternBuffer to the Buffer lowering gave it."""
    table = {placeholder_buffer(eb): real for eb, real in buffers.items()}
    _check_flat_indices(stmt, table)
    return replace_buffers(stmt, table)
