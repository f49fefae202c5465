"""What a fuzz case means and how it is judged: numpy semantics of the DSL, and run_case.

A case (see gen.py) is a small Python program: it builds te tensors and a schedule, and gives a
numpy ``reference`` written with the helpers below, which follow the DSL's documented
semantics (te/expr.py, te/dtypes.py): every operation is computed in the promoted dtype of its
operands, int8/int16/uint8 wrap around, floordiv/floormod round toward negative infinity,
truncdiv/truncmod toward zero, float->int casts truncate, max/min reductions start from the
dtype's smallest/largest value (-inf/inf for floats, te/reduce.py). Signed 32/64-bit
overflow is undefined in the DSL (the simplifier assumes it away, as TVM and C do): in strict
mode the helpers raise ``Undefined`` so that the generator can draw another case.

``run_case`` checks numpy = interpreter = compiled code (CPU), with every input and output of
the compiled call in guarded memory (te.testing.guarded_array), and raises its Outcome.
"""
from __future__ import annotations

import numpy as np

from te import dtypes
from te.testing import check_guards, guarded_array

STRICT = False              # True while the generator evaluates a case: overflow -> Undefined
_LIMIT = {"int32": 2.0**31, "int64": 2.0**62}


class Undefined(Exception):
    """The case leaves the DSL's defined behaviour (signed 32/64-bit overflow)."""


class Outcome(Exception):
    """The verdict on a case: kind is pass, refused, mismatch or error; detail says why."""

    def __init__(self, kind, detail=""):
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail


# ----------------------------------------------------------------------------- numpy semantics

def _as(dt, x):
    return np.asarray(x).astype(dt)


def _checked(dt, exact, result):
    """``result`` in ``dt``; ``exact`` (float64) is the mathematical value, checked in strict
    mode against the range of signed 32/64-bit integers."""
    if STRICT and dt in _LIMIT and np.size(exact) and \
            np.max(np.abs(np.asarray(exact, np.float64))) >= _LIMIT[dt]:
        raise Undefined(f"{dt} overflow")
    return _as(dt, result)


def _arith(fn, dt, a, b):
    a, b = _as(dt, a), _as(dt, b)
    with np.errstate(all="ignore"):
        exact = fn(a.astype(np.float64), b.astype(np.float64)) if dt in _LIMIT else None
        return _checked(dt, exact, fn(a, b))


def add(dt, a, b):
    return _arith(np.add, dt, a, b)


def sub(dt, a, b):
    return _arith(np.subtract, dt, a, b)


def mul(dt, a, b):
    return _arith(np.multiply, dt, a, b)


def neg(dt, a):
    return sub(dt, 0, a)


def absolute(dt, a):
    a = _as(dt, a)
    if dtypes.is_float(dt):
        return np.abs(a)
    return _as(dt, np.where(a < 0, neg(dt, a), a))


def minimum(dt, a, b):
    return np.minimum(_as(dt, a), _as(dt, b))


def maximum(dt, a, b):
    return np.maximum(_as(dt, a), _as(dt, b))


def floordiv(dt, a, b):
    with np.errstate(all="ignore"):
        return _as(dt, np.floor_divide(_as(dt, a), _as(dt, b)))


def floormod(dt, a, b):
    with np.errstate(all="ignore"):
        return _as(dt, np.mod(_as(dt, a), _as(dt, b)))


def truncdiv(dt, a, b):
    a, b = _as(dt, a).astype(np.int64), _as(dt, b).astype(np.int64)
    return _as(dt, (a - np.fmod(a, b)) // b)


def truncmod(dt, a, b):
    a, b = _as(dt, a).astype(np.int64), _as(dt, b).astype(np.int64)
    return _as(dt, np.fmod(a, b))


def fdiv(dt, a, b):
    """a / (|b| + 1) in float ``dt``."""
    with np.errstate(all="ignore"):
        return _as(dt, np.divide(_as(dt, a), np.abs(_as(dt, b)) + np.dtype(dt).type(1)))


def nonzero(dt, b):
    """b if b > 0 else 1 - b: never 0 (and never -1) in ``dt``."""
    b = _as(dt, b)
    return _as(dt, np.where(b > 0, b, sub(dt, 1, b)))


def cast(dt, x):
    """te's astype: int->int wraps, float->int truncates and saturates, NaN -> 0."""
    x = np.asarray(x)
    if x.dtype.kind == "f" and dtypes.is_int(dt):
        return np.asarray(dtypes.float_to_int(x, dt))
    with np.errstate(all="ignore"):
        return x.astype(dt)


def clamp(dt, x, lo, hi):
    return minimum(dt, maximum(dt, x, lo), hi)


def compare(op, dt, a, b):
    a, b = _as(dt, a), _as(dt, b)
    return {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
            "eq": np.equal, "ne": np.not_equal}[op](a, b)


def where(dt, c, a, b):
    return np.where(c, _as(dt, a), _as(dt, b)).astype(dt)


def grid(shape):
    """Open index grids (np.ogrid) over ``shape``, one per dimension."""
    return [np.arange(n).reshape([n if d == k else 1 for d in range(len(shape))])
            for k, n in enumerate(shape)]


def load(a, *idx):
    """a[idx] where the indices are in range; elsewhere any value (the callers mask it away:
    a guarded stencil reads only where its condition holds)."""
    idx = np.broadcast_arrays(*[np.asarray(i, np.int64) for i in idx])
    if a.size == 0:
        return np.zeros(idx[0].shape, a.dtype)
    return a[tuple(np.clip(i, 0, n - 1) for i, n in zip(idx, a.shape))]


def full(dt, shape, x):
    return np.ascontiguousarray(np.broadcast_to(_as(dt, x), shape))


def reduce(kind, dt, x, shape):
    """The sum/max/min over the last axis of ``x`` broadcast to ``shape``."""
    x = np.broadcast_to(_as(dt, x), shape)
    if kind == "sum":
        if STRICT and dt in _LIMIT and x.size and \
                np.max(np.sum(np.abs(x.astype(np.float64)), axis=-1)) >= _LIMIT[dt]:
            raise Undefined(f"{dt} overflow in a sum")
        with np.errstate(all="ignore"):
            return np.sum(x, axis=-1, dtype=dt)
    flt = dtypes.is_float(dt)           # te/reduce.py: the float identities are -inf / inf
    if kind == "max":
        return np.max(x, axis=-1, initial=-np.inf if flt else dtypes.min_value(dt))
    return np.min(x, axis=-1, initial=np.inf if flt else dtypes.max_value(dt))


def rand(seed, shape, dt, lo, hi):
    """Inputs: integers in [lo, hi], or floats on a grid of quarters in [lo, hi] (exact in
    float32 through a few additions and products, so that comparisons of them agree)."""
    rng = np.random.default_rng(seed)
    if dtypes.is_float(dt):
        return (rng.integers(int(lo * 4), int(hi * 4) + 1, size=shape) / 4).astype(dt)
    return rng.integers(lo, hi + 1, size=shape).astype(dt)


def indices(seed, shape, dt, bound, bad=None):
    """An index tensor with values in [0, bound); ``bad`` (a value) replaces its first entry."""
    rng = np.random.default_rng(seed)
    out = rng.integers(0, max(bound, 1), size=shape).astype(dt)
    if bad is not None and out.size:
        out.reshape(-1)[0] = bad
    return out


# ----------------------------------------------------------------------------- judging a case

def _judge(err, where, shifted) -> Outcome:
    """The outcome of an exception raised by lowering, building or calling a case.

    ScheduleError / TEError are refusals. A case's arguments always fit its shapes and its
    reads are in range by construction (guarded where they could leave it), so the only
    ArgumentError it may be refused with is the call-time check of a tail='shift' split
    whose axis is shorter than the factor (``shifted``: the case has such a split; its
    shifted loops read and write out of range); any other is a false refusal (a mismatch)."""
    import te
    from codegen_llvm import ArgumentError
    if isinstance(err, (te.ScheduleError, te.TEError)):
        return Outcome("refused", f"{where}: {_describe(err)}")
    if isinstance(err, ArgumentError):
        if shifted:
            return Outcome("refused", f"{where}: {_describe(err)}")
        return Outcome("mismatch", f"{where}: false refusal of an in-bounds program: "
                                   f"{_describe(err)}")
    return Outcome("error", f"{where}: {_describe(err)}")


def _describe(err) -> str:
    return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:300]


def _compare(what, got, want, exact, dt, source=""):
    if got.shape != want.shape:
        raise Outcome("mismatch", f"{what}: shape {got.shape}, numpy {want.shape}")
    if dtypes.is_float(dt) and not exact:
        # a float64 result computed from float32 values (a float32 sum reassociated by
        # rfactor / vectorization) carries float32's rounding: float32's tolerance
        low = dt in ("float16", "float32") or "'float32'" in source or "'float16'" in source
        tol = 1e-5 if low else 1e-12
        ok = np.isclose(got, want, rtol=tol, atol=tol, equal_nan=True)
    else:
        ok = (got == want) | (np.isnan(got) & np.isnan(want) if dtypes.is_float(dt) else False)
    if not np.all(ok):
        bad = np.argwhere(~ok)
        pos = tuple(int(x) for x in bad[0])
        raise Outcome("mismatch", f"{what} differs from numpy at {len(bad)} of {got.size} "
                                  f"positions; first {pos}: got {got[pos].item()!r}, numpy "
                                  f"{want[pos].item()!r}")


def run_case(ns, source="", gpu=False):
    """Judge the case whose program ran in namespace ``ns``; raises Outcome (never returns).

    ``ns`` holds s (the schedule), ARGS (inputs then outputs), INPUTS (arrays), reference
    (inputs -> expected outputs), EXPECT ("ok" or "IndexError") and EXACT (floats compared
    exactly); ``source`` is the case's program. ``gpu``: when the CPU verdict is a pass, the
    same schedule with its root loops bound to blocks also runs through codegen_cuda (on
    numba's simulator when the worker has no GPU) and is judged the same way."""
    try:
        _run_cpu(ns, source)
    except Outcome as out:
        if not gpu or out.kind != "pass":
            raise
        note = run_gpu(ns, source)
        raise Outcome("pass", f"{out.detail}; {note}" if out.detail else note)


def _run_cpu(ns, source):
    import te
    from schedule.interp import run as interpret
    s, args, inputs, expect = ns["s"], ns["ARGS"], ns["INPUTS"], ns["EXPECT"]
    shifted = "tail='shift'" in source
    expected = ns["reference"](*inputs)
    out_dtypes = [t.dtype for t in args[len(inputs):]]
    try:
        lowered = te.lower(s, args, name="fuzz")
    except Exception as err:
        raise _judge(err, "lower", shifted)
    interpreted = None          # the interpreter's verdict, raised after the compiled run:
    if expect == "ok":          # a crash of the compiled code is the worse finding
        outs = [np.zeros(e.shape, dt) for e, dt in zip(expected, out_dtypes)]
        try:
            interpret(lowered, *[np.copy(a) if isinstance(a, np.ndarray) else a
                                 for a in inputs], *outs)
            for k, (o, e) in enumerate(zip(outs, expected)):
                _compare(f"interpreter output {k}", o, e, ns["EXACT"], out_dtypes[k], source)
        except Outcome as out:
            interpreted = out
        except Exception as err:
            interpreted = _judge(err, "interpreter", shifted)
    try:
        mod = te.build(s, args, target="llvm", name="fuzz")
    except Exception as err:
        raise _judge(err, "build", shifted)
    at = "end" if len(source) % 2 else "start"     # which end touches the guard page
    g_in = [guarded_array(a, at=at) if isinstance(a, np.ndarray) else a for a in inputs]
    g_out = []
    for e, dt in zip(expected, out_dtypes):
        o = guarded_array(np.zeros(e.shape, dt), at=at)
        o.view(np.uint8)[...] = 0x5A            # a pattern that no result is
        g_out.append(o)
    try:
        mod(*g_in, *g_out)
    except IndexError as err:
        if expect == "IndexError":
            raise Outcome("pass", "IndexError: " + str(err)[:200])
        raise Outcome("mismatch", "compiled: unexpected " + _describe(err))
    except Exception as err:
        raise _judge(err, "compiled call", shifted)
    for a in [x for x in g_in if isinstance(x, np.ndarray)] + g_out:
        try:
            check_guards(a)
        except AssertionError as err:
            raise Outcome("mismatch", f"compiled code wrote out of bounds: {err}")
    _judge_results("compiled", ns, g_in, [np.asarray(o) for o in g_out], expected, source)
    raise interpreted or Outcome("pass")


def _judge_results(what, ns, ran_inputs, outs, expected, source):
    """After a call that returned: the inputs are unchanged, an expected IndexError did not
    go missing, and every output equals numpy's (raises Outcome on a failure)."""
    args, inputs = ns["ARGS"], ns["INPUTS"]
    for k, (g, a) in enumerate(zip(ran_inputs, inputs)):
        if isinstance(a, np.ndarray) and not np.array_equal(g.view(np.uint8), a.view(np.uint8)):
            raise Outcome("mismatch", f"{what} code wrote into input {args[k].name}")
    if ns["EXPECT"] == "IndexError":
        raise Outcome("mismatch", f"{what} code ran an out-of-range gather without IndexError")
    for k, (o, e) in enumerate(zip(outs, expected)):
        _compare(f"{what} output {k}", o, e, ns["EXACT"], args[len(inputs) + k].dtype, source)


def main(ns):
    """Run a saved case as a script: print its outcome; exit status 1 unless it passes or is
    refused. ``TW_FUZZ_GPU=1`` runs the GPU check too (set NUMBA_ENABLE_CUDASIM=1 without a
    GPU)."""
    import os
    import sys
    try:
        with open(sys.argv[0]) as f:
            run_case(ns, f.read(), gpu=os.environ.get("TW_FUZZ_GPU") == "1")
    except Outcome as out:
        print(f"{out.kind}: {out.detail}")
        sys.exit(0 if out.kind in ("pass", "refused") else 1)


# ----------------------------------------------------------------------------- the GPU subset

def bind_for_gpu(s):
    """Bind the outermost loop of every stage computed at root to blockIdx.x (one thread per
    block: the simulator runs few of them); None, or why the schedule cannot be bound."""
    import te
    from schedule.stage import COMM_REDUCE
    from te.tensor import ComputeOp
    todo = []
    for st in s.stages:
        if not isinstance(st.op, ComputeOp) or st.attach_type != "root":
            continue
        if not st.leaf_iter_vars:
            return f"stage {st.name} has no loop to bind"
        leaf = st.leaf_iter_vars[0]
        if leaf.iter_type == COMM_REDUCE:
            return f"stage {st.name}'s outermost loop is a reduction"
        todo.append((st, leaf))
    for st, leaf in todo:
        # a parallel / vectorized / unrolled outermost loop becomes the block index
        st.bind(leaf, te.thread_axis("blockIdx.x"))
    return None


def run_gpu(ns, source):
    """The GPU verdict note for a case whose CPU run passed; raises Outcome on a failure."""
    import te
    s, args, inputs, expect = ns["s"], ns["ARGS"], ns["INPUTS"], ns["EXPECT"]
    expected = ns["reference"](*inputs)
    out_dtypes = [t.dtype for t in args[len(inputs):]]
    try:
        why = bind_for_gpu(s)
    except (te.ScheduleError, te.TEError) as err:
        why = _describe(err)
    if why:
        return f"gpu not run: {why}"
    try:
        mod = te.build(s, args, target="cuda", name="fuzz")
    except (te.ScheduleError, te.TEError) as err:
        return f"gpu not run: {_describe(err)}"
    except Exception as err:
        if type(err).__name__ == "CudaCodegenError":
            return f"gpu not run: {_describe(err)}"
        raise Outcome("error", f"gpu build: {_describe(err)}")
    outs = [np.full(e.shape, 0x5A, dt) if not dtypes.is_float(dt) else np.full(e.shape, 7, dt)
            for e, dt in zip(expected, out_dtypes)]
    ins = [np.copy(a) if isinstance(a, np.ndarray) else a for a in inputs]
    try:
        mod(*ins, *outs)
    except IndexError as err:
        if expect == "IndexError":
            return "gpu ok (IndexError)"
        raise Outcome("mismatch", "gpu: unexpected " + _describe(err))
    except Exception as err:
        out = _judge(err, "gpu call", "tail='shift'" in source)
        if out.kind == "refused":
            return f"gpu refused: {out.detail}"
        raise out
    _judge_results("gpu", ns, ins, outs, expected, source)
    return "gpu ok"
