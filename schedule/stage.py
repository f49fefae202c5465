"""Schedules as data: a Schedule holds one Stage per operation; primitives record relations.

A primitive checks that it is legal, records a relation (Split, Fuse) or an attribute
(vectorize, parallel, bind, compute_at, ...) and updates the stage's leaf order. It never builds
loops; ``schedule.lower`` interprets the records. A wrong use raises ``ScheduleError`` naming the
stage, the axis and what to do instead.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import warnings

import numpy as np

from te import dtypes
from te.expr import Expr, Var, as_int, const, convert
from te.extern import ExternOp
from te.scan import ScanOp
from te.tensor_compute import TensorComputeOp
from te.tensor import COMM_REDUCE, DATA_PAR, THREAD_INDEX, ComputeOp, IterVar, Operation, \
    Range, Tensor

from .ir import ForKind


class ScheduleError(ValueError, RuntimeError):
    """An illegal schedule: the message names the stage and axis and says what to do.

    A ValueError, and a RuntimeError as TVM's ``TVMError`` is (TVM's tests and users catch
    that)."""


@dataclass(frozen=True, eq=False)
class Split:
    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: Expr | None
    nparts: Expr | None
    tail: str = "guard"     # "guard": an if around the last, partial piece; "shift": the last
                            # piece moves back inside the axis, recomputing some values


@dataclass(frozen=True, eq=False)
class Fuse:
    outer: IterVar
    inner: IterVar
    fused: IterVar


@dataclass(frozen=True, eq=False)
class Singleton:
    """``fuse()`` of no axes: one loop of one iteration (the only loop of a 0-d compute)."""
    iter: IterVar


@dataclass
class IterAttr:
    kind: ForKind = ForKind.SERIAL
    bind: IterVar | None = None
    pragmas: list = field(default_factory=list)

    # TVM's IterVarAttr fields: iter_type (IterVar.Unrolled, ...), pragma_keys, pragma_values
    @property
    def iter_type(self) -> int:
        if getattr(self, "tensor_intrin", None) is not None:
            return 8                    # IterVar.Tensorized
        return {ForKind.UNROLLED: 5, ForKind.VECTORIZED: 6, ForKind.PARALLEL: 7,
                ForKind.THREAD_BINDING: 1}.get(self.kind, 0)

    @property
    def pragma_keys(self) -> list:
        from te.expr import StringImm
        return [StringImm(k) for k, _ in self.pragmas]

    @property
    def pragma_values(self) -> list:
        return [convert(v) if v is not None else None for _, v in self.pragmas]
    tensor_intrin: object = None        # s[T].tensorize(axis, intrin): schedule/tensorize.py



SCOPES = ("global", "shared", "local", "warp")


def check_scope(scope, what):
    """A storage scope this compiler knows; ScheduleError naming ``what`` otherwise."""
    if scope not in SCOPES:
        raise ScheduleError(f"{what}: unknown storage scope {scope!r}; use one of "
                            f"{', '.join(repr(x) for x in SCOPES)}")

class Stage:
    """How one operation is computed: its loop order, loop kinds and where it is placed."""

    def __init__(self, op: Operation, schedule):
        self.op = op
        self.origin_op = op
        self.schedule = schedule
        roots = list(op.axis) + list(op.reduce_axis) if isinstance(op, ComputeOp) else []
        if isinstance(op, TensorComputeOp):     # the intrinsic's dimensions are no loops
            roots = list(op.schedulable_axis) + list(op.reduce_axis)
        if isinstance(op, ScanOp):
            roots = [op.scan_axis]
        self.all_iter_vars = list(roots)
        self.leaf_iter_vars = list(roots)
        self.relations = []
        self.iter_attrs = {}
        self.attach_type = "root"       # "root", "inline" or "scope"
        self.attach_stage = None
        self.attach_ivar = None
        self.scope = "global"
        self.store_predicate = None
        self.align = {}                 # root axis index -> (factor, offset)
        self.is_output = False
        self.double_buffered = False
        self.scan = None                # for the stages of a scan step: the scan's stage
        self.scan_role = None           # "init", "update" or "body" (a step's producers)
        self.group = None               # the Group (s.create_group) this stage belongs to

    @property
    def name(self):
        return self.op.name

    def __repr__(self):
        return f"stage({self.name})"

    # ------------------------------------------------------------------ checks
    def _need_compute(self, what):
        if isinstance(self.op, ExternOp):
            raise ScheduleError(f"{what}: stage {self.name} is an extern stage (te.extern); "
                                "it calls an external function as a whole and has no loops "
                                "to schedule or move; it is computed at the root (the only "
                                "placement); schedule the stages that produce or read it")
        if isinstance(self.op, ScanOp):
            raise ScheduleError(f"{what}: stage {self.name} is a scan; it runs its steps in "
                                "order and has no loops to schedule; schedule its init and "
                                "update stages instead (s[init], s[update])")
        if not isinstance(self.op, ComputeOp):
            raise ScheduleError(f"{what}: stage {self.name} is a placeholder (an input); it has "
                                "no loops to schedule")

    def _leaf(self, iv, what) -> IterVar:
        self._need_compute(what)
        if not isinstance(iv, IterVar):
            raise ScheduleError(f"{what} on stage {self.name}: expected an axis (IterVar), got "
                                f"{iv!r}; use s[T].op.axis, s[T].op.reduce_axis or the axes "
                                "returned by split/fuse")
        if iv in self.leaf_iter_vars:
            if self.scan_role == "update" and iv is self.op.axis[0] and what != "pragma":
                raise ScheduleError(f"{what} on stage {self.name}: axis {iv.var.name} is the "
                                    f"time axis of scan {self.scan.name}; its steps run one "
                                    "after the other, in order; schedule the update's other "
                                    "axes (s[update].op.axis[1:])")
            return iv
        if iv in self.all_iter_vars:
            raise ScheduleError(f"{what} on stage {self.name}: axis {iv.var.name} is no longer a "
                                "leaf (it was already split or fused); schedule the axes that "
                                "split/fuse returned instead")
        raise ScheduleError(f"{what} on stage {self.name}: axis {iv.var.name} does not belong to "
                            f"this stage; its axes are "
                            f"{', '.join(v.var.name for v in self.leaf_iter_vars)}")

    def _attr(self, iv) -> IterAttr:
        return self.iter_attrs.setdefault(iv, IterAttr())

    @property
    def iter_var_attrs(self) -> dict:
        """TVM's name of ``iter_attrs``: leaf axis -> its loop kind, binding and pragmas."""
        return self.iter_attrs

    # ------------------------------------------------------------------ loop structure
    def _split_amount(self, parent, factor, nparts) -> Expr:
        """Check the arguments of a split of ``parent`` and return its factor or nparts."""
        self._leaf(parent, "split")
        if (factor is None) == (nparts is None):
            raise ScheduleError(f"split on stage {self.name}, axis {parent.var.name}: give "
                                "exactly one of factor= or nparts=")
        amount = factor if factor is not None else nparts
        what = "factor" if factor is not None else "nparts"
        amount_e = convert(amount)
        value = as_int(amount_e)
        if not dtypes.is_int(amount_e.dtype) or (value is not None and value <= 0):
            raise ScheduleError(f"split on stage {self.name}, axis {parent.var.name}: {what} "
                                f"must be a positive integer, got {amount_e}")
        if value is not None and value <= dtypes.max_value("int32"):
            amount_e = const(value, "int32")        # numpy's int64 factors: one index width
        return amount_e

    def split(self, parent, factor=None, nparts=None, tail="guard"):
        """Split ``parent`` into (outer, inner) by ``factor`` (inner extent) or ``nparts``.

        When ``factor`` does not divide the axis, ``tail`` says what the last piece does:
        ``"guard"`` (default) skips the values past the end with an if; ``"shift"`` (Halide's
        ShiftInwards) starts the last piece ``factor`` values before the end, so that every
        piece is whole (a vectorized piece stays one vector) and some values are computed
        twice. Shifting needs a data-parallel axis of at least ``factor`` values; in a
        reduction, the outer or the inner piece must be outside the reduction loops (so that
        a recomputed output is initialized again before it is reduced again; lowering refuses
        the schedule otherwise).
        """
        amount_e = self._split_amount(parent, factor, nparts)
        if tail not in ("guard", "shift"):
            raise ScheduleError(f"split on stage {self.name}, axis {parent.var.name}: tail "
                                f"must be 'guard' or 'shift', got {tail!r}")
        if tail == "shift" and (factor is None or parent.iter_type == COMM_REDUCE):
            raise ScheduleError(f"split on stage {self.name}, axis {parent.var.name}: "
                                "tail='shift' needs factor= and a data-parallel axis (a "
                                "reduction would add the shifted values twice)")
        # the pieces loop in the parent's width (an int64 axis splits into int64 loops)
        outer = IterVar(None, Var(parent.var.name + "_outer", parent.var.dtype),
                        parent.iter_type)
        inner = IterVar(None, Var(parent.var.name + "_inner", parent.var.dtype),
                        parent.iter_type)
        rel = Split(parent, outer, inner, amount_e if factor is not None else None,
                    amount_e if nparts is not None else None, tail)
        self.relations.append(rel)
        pos = self.leaf_iter_vars.index(parent)
        self.leaf_iter_vars[pos:pos + 1] = [outer, inner]
        self.all_iter_vars += [outer, inner]
        return outer, inner

    def tile(self, x_parent, y_parent, x_factor, y_factor):
        """Split two axes and order them (x_outer, y_outer, x_inner, y_inner)."""
        # check both splits before recording either, so that a failed tile records nothing
        self._split_amount(x_parent, x_factor, None)
        self._split_amount(y_parent, y_factor, None)
        if x_parent is y_parent:
            raise ScheduleError(f"tile on stage {self.name}: x and y are the same axis "
                                f"{x_parent.var.name}; tile two different axes")
        xo, xi = self.split(x_parent, factor=x_factor)
        yo, yi = self.split(y_parent, factor=y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def fuse(self, *args):
        """Fuse adjacent axes (outermost first) into one.

        As TVM: ``fuse()`` of no axes adds one loop of one iteration, outermost (the handle
        of a 0-d compute's loop nest); ``fuse(x)`` returns ``x``; two axes given inner first
        are fused in loop order; a data-parallel axis fused with a reduction axis makes a
        reduction axis (its loop initializes the outputs it covers before reducing them).
        """
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        if not args:
            self._need_compute("fuse")
            one = IterVar(Range(const(0), const(1)), Var("singleton"), DATA_PAR)
            self.relations.append(Singleton(one))
            self.leaf_iter_vars.insert(0, one)
            self.all_iter_vars.append(one)
            return one
        axes = [self._leaf(a, "fuse") for a in args]
        twice = next((a for k, a in enumerate(axes) if a in axes[:k]), None)
        if twice is not None:
            raise ScheduleError(f"fuse on stage {self.name}: axis {twice.var.name} is given "
                                "twice; list each axis once")
        order = list(axes)                  # check all pairs first: all or nothing
        for k in range(len(order) - 1):
            order[k + 1] = self._check_fusable(order[k], order[k + 1])
        fused = axes[0]
        for inner in axes[1:]:
            fused = self._fuse_two(fused, inner)
        return fused

    def _check_fusable(self, outer, inner):
        """The pair checked (and, when ``outer`` is a run of axes, the run's end)."""
        pos_o = self.leaf_iter_vars.index(outer)
        pos_i = self.leaf_iter_vars.index(inner)
        if pos_i + 1 == pos_o and outer is not inner:
            return outer                    # given inner first, as TVM allows
        if pos_i != pos_o + 1:
            raise ScheduleError(
                f"fuse on stage {self.name}: axes {outer.var.name} and {inner.var.name} are not "
                "adjacent in loop order (outer first); reorder them next to each other first")
        return inner

    def _fuse_two(self, outer, inner):
        pos_o = self.leaf_iter_vars.index(outer)
        pos_i = self.leaf_iter_vars.index(inner)
        if pos_i + 1 == pos_o:
            outer, inner, pos_o, pos_i = inner, outer, pos_i, pos_o
        kind = COMM_REDUCE if COMM_REDUCE in (outer.iter_type, inner.iter_type) else \
            outer.iter_type
        fused = IterVar(None, Var(f"{outer.var.name}_{inner.var.name}_fused",
                                  self._fused_dtype(outer, inner)), kind)
        self.relations.append(Fuse(outer, inner, fused))
        self.leaf_iter_vars[pos_o:pos_i + 1] = [fused]
        self.all_iter_vars.append(fused)
        return fused

    def _fused_dtype(self, outer, inner) -> str:
        """int64 when either axis is int64 or the product of their constant extents does
        not fit int32 (fusing two axes of 65536 makes 2^32 iterations), else int32."""
        if "int64" in (outer.var.dtype, inner.var.dtype):
            return "int64"
        bound = self._extent_bound(outer) * self._extent_bound(inner)
        return "int64" if bound > dtypes.max_value("int32") else "int32"

    def _extent_bound(self, iv) -> int:
        """An upper bound of the extent of leaf ``iv`` from the constant extents of the root
        axes and the relations (1 when it is symbolic: an int32 size variable's products are
        checked at call time against the buffers they index)."""
        if iv.dom is not None:
            value = as_int(iv.dom.extent)
            return value if value is not None else 1
        for rel in self.relations:
            if isinstance(rel, Split) and (iv is rel.outer or iv is rel.inner):
                parent = self._extent_bound(rel.parent)
                amount = as_int(rel.factor if rel.factor is not None else rel.nparts)
                if amount is None:
                    return parent
                if (iv is rel.inner) == (rel.factor is not None):
                    return amount       # the inner piece of a factor split, or the nparts
                return -(-parent // amount)
            if isinstance(rel, Fuse) and iv is rel.fused:
                return self._extent_bound(rel.outer) * self._extent_bound(rel.inner)
        return 1

    def reorder(self, *args):
        """Put the given leaf axes in this order, in the positions they occupy."""
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        for a in args:
            self._leaf(a, "reorder")
        if len(set(args)) != len(args):
            twice = next(a for a in args if args.count(a) > 1)
            raise ScheduleError(f"reorder on stage {self.name}: axis {twice.var.name} is given "
                                "twice; list each axis once")
        positions = sorted(self.leaf_iter_vars.index(a) for a in args)
        for pos, a in zip(positions, args):
            self.leaf_iter_vars[pos] = a

    # ------------------------------------------------------------------ loop kinds
    def vectorize(self, iv):
        """Run ``iv`` as SIMD lanes (its extent must be a constant)."""
        self._leaf(iv, "vectorize")
        if iv.iter_type == COMM_REDUCE:
            raise ScheduleError(f"vectorize on stage {self.name}: {iv.var.name} is a reduction "
                                "axis; vectorize a data-parallel axis (reorder it innermost) "
                                "or rfactor the reduction first")
        self._attr(iv).kind = ForKind.VECTORIZED

    def unroll(self, iv):
        """Replicate the loop body for each value of ``iv`` (constant extent)."""
        self._leaf(iv, "unroll")
        self._attr(iv).kind = ForKind.UNROLLED

    def parallel(self, iv):
        """Run the iterations of ``iv`` on the CPU's threads."""
        self._leaf(iv, "parallel")
        if iv.iter_type == COMM_REDUCE:
            # TVM accepts this and emits a parallel loop whose threads race on the accumulator;
            # here the schedule is accepted too, but the loop stays serial (right results)
            warnings.warn(f"parallel on stage {self.name}: {iv.var.name} is a reduction axis "
                          "and its iterations depend on each other, so it runs serially; "
                          "parallelize a data-parallel axis or rfactor the reduction first "
                          "for a parallel reduction", UserWarning, stacklevel=2)
            return
        self._attr(iv).kind = ForKind.PARALLEL

    def bind(self, iv, thread_ivar):
        """Bind ``iv`` to a GPU thread index made by ``te.thread_axis``."""
        self._leaf(iv, "bind")
        if not isinstance(thread_ivar, IterVar) or thread_ivar.iter_type != THREAD_INDEX:
            raise ScheduleError(f"bind on stage {self.name}, axis {iv.var.name}: the target must "
                                "be te.thread_axis('blockIdx.x' | 'threadIdx.x' | ...)")
        if iv.iter_type == COMM_REDUCE and thread_ivar.thread_tag.startswith("blockIdx"):
            raise ScheduleError(f"bind on stage {self.name}: {iv.var.name} is a reduction axis "
                                f"and cannot be bound to {thread_ivar.thread_tag}: blocks "
                                "cannot combine their partial results; bind it to a "
                                "threadIdx (a cross-thread reduction), or rfactor it and "
                                "reduce the factored stage in a second stage")
        for other, attr in self.iter_attrs.items():
            if attr.bind is not None and other is not iv and \
                    attr.bind.thread_tag == thread_ivar.thread_tag and \
                    thread_ivar.thread_tag != "vthread":
                raise ScheduleError(f"bind on stage {self.name}: {thread_ivar.thread_tag} is "
                                    f"already bound to axis {other.var.name}; bind each thread "
                                    "index to one axis per stage (fuse the axes first)")
        attr = self._attr(iv)
        attr.kind = ForKind.THREAD_BINDING
        attr.bind = thread_ivar

    def pragma(self, iv, pragma_type, pragma_value=None):
        """Attach a pragma (a key and optional value) to the loop of ``iv``.

        As TVM, ``"unroll"`` and ``"vectorize"`` are the primitives of those names.

        ``"no_bound_check"``: indices read from data (``A[Idx[i]]``) inside this loop are not
        checked in the kernel (for code that proves them itself; an index out of range then
        reads or writes outside the buffer). Call-time checks of the index ranges stay.
        """
        self._leaf(iv, "pragma")
        primitive = {"unroll": self.unroll, "vectorize": self.vectorize}.get(str(pragma_type))
        if primitive is not None:
            primitive(iv)
            return
        self._attr(iv).pragmas.append((str(pragma_type), pragma_value))

    def tensorize(self, var, tensor_intrin):
        """Compute the loop nest from ``var`` inward with ``tensor_intrin`` (made by
        ``te.decl_tensor_intrin``); lowering checks that the nest computes the intrinsic's
        declaration (schedule/tensorize.py)."""
        self._leaf(var, "tensorize")
        if type(tensor_intrin).__name__ != "TensorIntrin":
            raise ScheduleError(f"tensorize on stage {self.name}, axis {var.var.name}: expected "
                                f"a te.decl_tensor_intrin(...), got {tensor_intrin!r}")
        for other, attr in self.iter_attrs.items():
            if attr.tensor_intrin is not None and other is not var:
                raise ScheduleError(f"tensorize on stage {self.name}: axis {other.var.name} is "
                                    "already tensorized; tensorize one axis per stage")
        self._attr(var).tensor_intrin = tensor_intrin

    # ------------------------------------------------------------------ placement
    def _placed_by_scan(self, what):
        if self.scan_role in ("init", "update"):
            raise ScheduleError(f"{what} on stage {self.name}: it is the {self.scan_role} of "
                                f"scan {self.scan.name}, which places it (the init before the "
                                "steps, the update in every step); schedule its loops instead")

    def compute_at(self, parent, ivar):
        """Compute this stage inside the loop ``ivar`` of the consumer stage ``parent``."""
        self._need_compute("compute_at")
        self._placed_by_scan("compute_at")
        if isinstance(parent, Tensor):
            parent = self.schedule[parent]
        if not isinstance(parent, Stage):
            raise ScheduleError(f"compute_at on stage {self.name}: the first argument must be a "
                                "stage, e.g. s[C]")
        # an attachment to itself or to a stage that does not consume this one is refused
        # when the schedule is lowered (check_attach), as TVM: a later rewrite may change it
        if not isinstance(ivar, IterVar) or ivar not in parent.all_iter_vars:
            name = ivar.var.name if isinstance(ivar, IterVar) else repr(ivar)
            raise ScheduleError(f"compute_at on stage {self.name}: axis {name} is not an axis "
                                f"of stage {parent.name}; attach to one of its axes: "
                                f"{', '.join(v.var.name for v in parent.leaf_iter_vars)}")
        self.attach_type, self.attach_stage, self.attach_ivar = "scope", parent, ivar

    def compute_inline(self):
        """Substitute this stage's expression into its consumers (no buffer, no loops)."""
        self._need_compute("compute_inline")
        self._placed_by_scan("compute_inline")
        if self.op.is_reduction:
            raise ScheduleError(f"compute_inline on stage {self.name}: a reduction cannot be "
                                "inlined; compute it with compute_at or compute_root")
        if self.is_output:
            raise ScheduleError(f"compute_inline on stage {self.name}: it is an output of the "
                                "schedule; outputs must be stored, not inlined")
        for s in self.schedule.stages:
            if isinstance(s.op, ExternOp) and any(t.op is self.op for t in s.op.inputs):
                raise ScheduleError(f"compute_inline on stage {self.name}: the extern stage "
                                    f"{s.name} reads it as a whole buffer, so it must be "
                                    "stored; compute it at the root instead")
        self.attach_type, self.attach_stage, self.attach_ivar = "inline", None, None

    def compute_root(self):
        """Compute this stage at the top level of the function (the default)."""
        if isinstance(self.op, ExternOp):
            return      # an extern stage is always computed at the root
        self._need_compute("compute_root")
        self._placed_by_scan("compute_root")
        if self.scan_role == "body":        # its root is the scan's step
            self.attach_type, self.attach_stage = "scope", self.scan
            self.attach_ivar = self.scan.op.scan_axis
            return
        self.attach_type, self.attach_stage, self.attach_ivar = "root", None, None

    def storage_align(self, axis, factor, offset):
        """Pad the stride of ``axis`` so that ``stride % factor == offset``."""
        self._need_compute("storage_align")
        if axis not in self.op.axis:
            raise ScheduleError(f"storage_align on stage {self.name}: axis must be one of "
                                "s[T].op.axis")
        for what, value in (("factor", factor), ("offset", offset)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
                raise ScheduleError(f"storage_align on stage {self.name}: {what} must be an int, "
                                    f"got {value!r}")
        if int(factor) <= 0 or not 0 <= int(offset) < int(factor):
            raise ScheduleError(f"storage_align on stage {self.name}: need factor > 0 and "
                                f"0 <= offset < factor, got factor={factor}, offset={offset}")
        self.align[list(self.op.axis).index(axis)] = (int(factor), int(offset))

    def set_scope(self, scope):
        """Store this stage's buffer in ``scope`` ("global", "shared", "local")."""
        check_scope(scope, f"set_scope of stage {self.name}")
        self.scope = scope

    def double_buffer(self):
        """Give this stage's buffer two halves, so that in a GPU kernel the next iteration of
        the loop it is computed at loads its data while this iteration computes on the other
        half (one barrier per iteration; see schedule/passes/inject_double_buffer.py).
        CPU builds ignore it."""
        self._need_compute("double_buffer")
        self.double_buffered = True

    def set_store_predicate(self, predicate):
        """Only store results where ``predicate`` holds (a condition on thread indices or on
        this stage's axes, e.g. ``tx.var.equal(0)``)."""
        pred = convert(predicate)
        if pred.dtype != "bool":
            raise ScheduleError(f"set_store_predicate on stage {self.name}: the predicate {pred} "
                                f"has dtype {pred.dtype}, not bool; give a condition such as "
                                "tx.var.equal(0)")
        self.store_predicate = pred
