"""Property tests: random elementwise expressions agree in numpy, the interpreter and LLVM code.

Hypothesis draws an expression tree as plain tuples ``(op, dtype, *children)`` so that a failing
case prints readably and shrinks; ``_to_te`` and ``_NumpyEval`` give the tree its two meanings,
and the compute is split, vectorized and parallelized at random. The generator keeps every case
well defined in both worlds: divisors are made nonzero (and never -1, so no INT_MIN / -1),
float->int casts are clamped into range, exp/log/sqrt get safe arguments, and cases where a
float leaves the finite numbers or int32 arithmetic overflows are rejected (int8 and uint8 must
wrap around). Comparisons and float->int casts only see "exact" subtrees (no exp/log, whose last
bit differs between libm and numpy), so both sides take the same branch and exact results are
compared bit for bit. Examples are derandomized: CI runs the same cases every time.
"""
import numpy as np
from hypothesis import HealthCheck, assume, given, note, settings, strategies as st

import te
from te.testing import verify_schedule

FLOATS = ("float32", "float64")
INTS = ("int32", "int8", "uint8")
DTYPES = FLOATS + INTS


def _settings(n):
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


# ----------------------------------------------------------------------------- the tree language

def _nonzero_te(b):
    # b > 0 ? b : 1 - b is never 0 and never -1 (also when 1 - b wraps around)
    return te.select(b > 0, b, te.const(1, b.dtype) - b)


def _nonzero_np(b):
    return np.where(b > 0, b, b.dtype.type(1) - b)


def _clamp_te(x, lo, hi):
    return te.min(te.max(x, te.const(lo, x.dtype)), te.const(hi, x.dtype))


def _clamp_np(x, lo, hi):
    return np.minimum(np.maximum(x, x.dtype.type(lo)), x.dtype.type(hi))


def _int_range(dtype):
    info = np.iinfo(dtype)
    return max(info.min, -200), min(info.max, 200)


def _trunc_div_np(a, b, dtype):
    a, b = a.astype("int64"), b.astype("int64")
    q = np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)
    return q.astype(dtype)


def _trunc_mod_np(a, b, dtype):
    a64, b64 = a.astype("int64"), b.astype("int64")
    return (a64 - _trunc_div_np(a, b, "int64") * b64).astype(dtype)


def _one(dtype):
    return np.dtype(dtype).type(1)


# op -> (te meaning, numpy meaning); both take the dtype of the node, then the children
TE_OPS = {
    "add": lambda d, a, b: a + b,
    "sub": lambda d, a, b: a - b,
    "mul": lambda d, a, b: a * b,
    "div": lambda d, a, b: a / (te.abs(b) + te.const(1, d)),
    "min": lambda d, a, b: te.min(a, b),
    "max": lambda d, a, b: te.max(a, b),
    "floordiv": lambda d, a, b: te.floordiv(a, _nonzero_te(b)),
    "floormod": lambda d, a, b: te.floormod(a, _nonzero_te(b)),
    "truncdiv": lambda d, a, b: te.truncdiv(a, _nonzero_te(b)),
    "truncmod": lambda d, a, b: te.truncmod(a, _nonzero_te(b)),
    "select": lambda d, c, a, b: te.select(c, a, b),
    "if_then_else": lambda d, c, a, b: te.if_then_else(c, a, b),
    "neg": lambda d, a: -a,
    "abs": lambda d, a: te.abs(a),
    "exp": lambda d, a: te.exp(_clamp_te(a, -4.0, 4.0)),
    "log": lambda d, a: te.log(te.abs(a) + te.const(1, d)),
    "sqrt": lambda d, a: te.sqrt(te.abs(a)),
    "cast": lambda d, a: a.astype(d),
    "f2i": lambda d, a: _clamp_te(a * te.const(10, a.dtype), *_int_range(d)).astype(d),
    "lt": lambda d, a, b: a < b,
    "le": lambda d, a, b: a <= b,
    "gt": lambda d, a, b: a > b,
    "ge": lambda d, a, b: a >= b,
    "eq": lambda d, a, b: a.equal(b),
    "ne": lambda d, a, b: a.not_equal(b),
    "and": lambda d, a, b: te.all(a, b),
    "or": lambda d, a, b: te.any(a, b),
    "not": lambda d, a: ~a,
}
NP_OPS = {
    "add": lambda d, a, b: a + b,
    "sub": lambda d, a, b: a - b,
    "mul": lambda d, a, b: a * b,
    "div": lambda d, a, b: a / (np.abs(b) + _one(d)),
    "min": lambda d, a, b: np.minimum(a, b),
    "max": lambda d, a, b: np.maximum(a, b),
    "floordiv": lambda d, a, b: np.floor_divide(a, _nonzero_np(b)),
    "floormod": lambda d, a, b: np.mod(a, _nonzero_np(b)),
    "truncdiv": lambda d, a, b: _trunc_div_np(a, _nonzero_np(b), d),
    "truncmod": lambda d, a, b: _trunc_mod_np(a, _nonzero_np(b), d),
    "select": lambda d, c, a, b: np.where(c, a, b),
    "if_then_else": lambda d, c, a, b: np.where(c, a, b),
    "neg": lambda d, a: -a,
    "abs": lambda d, a: np.abs(a),
    "exp": lambda d, a: np.exp(_clamp_np(a, -4.0, 4.0)),
    "log": lambda d, a: np.log(np.abs(a) + _one(d)),
    "sqrt": lambda d, a: np.sqrt(np.abs(a)),
    "cast": lambda d, a: a.astype(d),
    "f2i": lambda d, a: _clamp_np(a * a.dtype.type(10), *_int_range(d)).astype(d),
    "lt": lambda d, a, b: a < b,
    "le": lambda d, a, b: a <= b,
    "gt": lambda d, a, b: a > b,
    "ge": lambda d, a, b: a >= b,
    "eq": lambda d, a, b: a == b,
    "ne": lambda d, a, b: a != b,
    "and": lambda d, a, b: a & b,
    "or": lambda d, a, b: a | b,
    "not": lambda d, a: ~a,
}
INEXACT = ("exp", "log")
BINARY = ("add", "sub", "mul", "min", "max")
COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")


def _to_te(node, loads, ivs):
    op, dtype, *args = node
    if op == "load":
        return loads[args[0]]
    if op == "const":
        return te.const(args[0], dtype)
    if op == "index":
        return ivs[args[0]].astype(dtype)
    return TE_OPS[op](dtype, *[_to_te(a, loads, ivs) for a in args])


class _NumpyEval:
    """Evaluates a tree on full-shape arrays and tells whether the case is well defined.

    A case is not when a float leaves the finite numbers (NaN makes min/max differ) or when
    int32 arithmetic overflows: the simplifier, like TVM and C, takes signed 32-bit arithmetic
    not to overflow. int8 and uint8 wrap around, and the tests check that they do.
    """

    def __init__(self, arrays, shape):
        self.arrays, self.shape = arrays, shape
        self.defined = True
        self.magnitude = 1.0

    def __call__(self, node):
        op, dtype, *args = node
        if op == "load":
            out = self.arrays[args[0]]
        elif op == "const":
            out = np.full(self.shape, args[0], dtype=dtype)
        elif op == "index":
            out = np.indices(self.shape)[args[0]].astype(dtype)
        else:
            kids = [self(a) for a in args]
            with np.errstate(all="ignore"):
                out = np.asarray(NP_OPS[op](dtype, *kids))
                if dtype == "int32" and op in ("add", "sub", "mul", "neg", "abs"):
                    wide = NP_OPS[op]("int64", *[k.astype("int64") for k in kids])
                    self.defined &= bool(np.array_equal(wide, out))
        assert out.dtype == np.dtype(dtype), (node, out.dtype)
        if out.dtype.kind == "f":
            self.defined &= bool(np.all(np.isfinite(out)))
            if self.defined and out.size:
                self.magnitude = max(self.magnitude, float(np.max(np.abs(out))))
        return out


def _has_inexact(node):
    return node[0] in INEXACT or any(isinstance(a, tuple) and _has_inexact(a) for a in node[2:])


# ----------------------------------------------------------------------------- generators

def _constants(dtype):
    if dtype in FLOATS:
        return st.sampled_from([0.0, 1.0, -1.0, 0.5, -2.25, 3.0, 0.7, 1e-3])
    if dtype == "uint8":
        return st.sampled_from([0, 1, 2, 3, 7, 200, 255])
    if dtype == "int8":
        return st.sampled_from([0, 1, -1, 2, -3, 7, 100, -128, 127])
    return st.sampled_from([0, 1, -1, 2, -3, 7, 1000, 2**31 - 1, -2**31])


@st.composite
def _leaf(draw, dtype, env):
    """A constant, a loop index, or a placeholder read (cast to ``dtype`` if need be)."""
    pdtypes, ndim = env
    same = [k for k, d in enumerate(pdtypes) if d == dtype]
    choice = draw(st.integers(0, 6))
    if choice == 0:
        return ("const", dtype, draw(_constants(dtype)))
    if choice == 6:
        return ("index", dtype, draw(st.integers(0, ndim - 1)))
    if same and choice <= 3:
        return ("load", dtype, draw(st.sampled_from(same)))
    k = draw(st.integers(0, len(pdtypes) - 1))
    src = ("load", pdtypes[k], k)
    if src[1] == dtype:
        return src
    return ("f2i" if src[1] in FLOATS and dtype in INTS else "cast", dtype, src)


@st.composite
def _expr(draw, dtype, env, depth, exact=False):
    """A tree of ``dtype``; ``env`` = (placeholder dtypes, number of loop indices)."""
    if dtype == "bool":
        return draw(_condition(env, depth))
    if depth <= 0 or draw(st.integers(0, 4)) == 0:
        return draw(_leaf(dtype, env))
    is_float = dtype in FLOATS
    ops = list(BINARY) + ["select", "if_then_else", "neg", "abs", "cast"]
    ops += ["div", "sqrt"] if is_float else ["floordiv", "floormod", "truncdiv", "truncmod"]
    if is_float and not exact:
        ops += list(INEXACT)
    op = draw(st.sampled_from(ops))
    sub = _expr(dtype, env, depth - 1, exact)
    if op in ("select", "if_then_else"):
        return (op, dtype, draw(_condition(env, depth - 1)), draw(sub), draw(sub))
    if op in ("neg", "abs", "sqrt") or op in INEXACT:
        return (op, dtype, draw(sub))
    if op == "cast":
        src = draw(st.sampled_from([d for d in DTYPES + ("bool",) if d != dtype]))
        if src in FLOATS and not is_float:
            return ("f2i", dtype, draw(_expr(src, env, depth - 1, exact=True)))
        return ("cast", dtype, draw(_expr(src, env, depth - 1, exact)))
    return (op, dtype, draw(sub), draw(sub))


@st.composite
def _condition(draw, env, depth):
    if depth > 0 and draw(st.integers(0, 3)) == 0:
        op = draw(st.sampled_from(["and", "or", "not"]))
        sub = _condition(env, depth - 1)
        return ("not", "bool", draw(sub)) if op == "not" else (op, "bool", draw(sub), draw(sub))
    dtype = draw(st.sampled_from(list(env[0]) + ["float32", "int32"]))
    sub = _expr(dtype, env, depth - 1, exact=True)
    return (draw(st.sampled_from(COMPARE)), "bool", draw(sub), draw(sub))


def _random_array(rng, shape, dtype):
    if dtype in FLOATS:
        return rng.uniform(-2, 2, size=shape).astype(dtype)
    if dtype == "int32":
        return rng.integers(-50000, 50000, size=shape, dtype=dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)


# how a placeholder is read: all axes, a subset (broadcast), or the first axis reversed
PATTERNS = ("full", "bcast", "flip")


def _placeholder(k, dtype, pattern, shape, keep):
    """The placeholder, its index function and the numpy view that broadcasts to ``shape``."""
    if pattern == "bcast":
        pshape = tuple(n for n, kept in zip(shape, keep) if kept) or (1,)
        A = te.placeholder(pshape, dtype=dtype, name=f"P{k}")

        def index(*ivs):
            idx = tuple(i for i, kept in zip(ivs, keep) if kept)
            return A[idx] if idx else A[0]
        def view(arr):
            return np.broadcast_to(
                arr.reshape([n if kept else 1 for n, kept in zip(shape, keep)]), shape)
        return A, index, view
    A = te.placeholder(shape, dtype=dtype, name=f"P{k}")
    if pattern == "flip":
        n0 = shape[0]
        return A, lambda *ivs: A[(n0 - 1 - ivs[0],) + ivs[1:]], lambda arr: arr[::-1]
    return A, lambda *ivs: A[ivs], lambda arr: arr


@st.composite
def elementwise_cases(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim)))
    nparams = draw(st.integers(1, 3))
    pdtypes = draw(st.lists(st.sampled_from(DTYPES), min_size=nparams, max_size=nparams))
    patterns = [(draw(st.sampled_from(PATTERNS)),
                 tuple(draw(st.lists(st.booleans(), min_size=ndim, max_size=ndim))))
                for _ in range(nparams)]
    out_dtype = draw(st.sampled_from(DTYPES))
    tree = draw(_expr(out_dtype, (tuple(pdtypes), ndim), draw(st.integers(1, 4))))
    vector = draw(st.sampled_from([0, 0, 2, 3, 4, 8]))
    parallel = draw(st.booleans())
    seed = draw(st.integers(0, 2**16))
    return shape, pdtypes, patterns, tree, vector, parallel, seed


def _tolerance(tree, dtype, magnitude):
    if dtype not in FLOATS or not _has_inexact(tree):
        return 0.0, 0.0
    eps = 1e-5 if dtype == "float32" else 1e-12
    return 10 * eps, 10 * eps * max(1.0, magnitude)


@_settings(150)
@given(elementwise_cases())
def test_random_elementwise_expression(case):
    shape, pdtypes, patterns, tree, vector, parallel, seed = case
    note(f"tree = {tree}")
    rng = np.random.default_rng(seed)
    tensors, loads_fns, views, inputs = [], [], [], []
    for k, (dtype, (pattern, keep)) in enumerate(zip(pdtypes, patterns)):
        A, index, view = _placeholder(k, dtype, pattern, shape, keep)
        tensors.append(A)
        loads_fns.append(index)
        views.append(view)
        inputs.append(_random_array(rng, tuple(n.value for n in A.shape), dtype))
    out_dtype = tree[1]
    B = te.compute(shape, lambda *ivs: _to_te(tree, [f(*ivs) for f in loads_fns], ivs),
                   name="B")
    assert B.dtype == out_dtype
    s = te.create_schedule(B.op)
    axes = list(B.op.axis)
    if vector:
        outer, inner = s[B].split(axes[-1], factor=vector)
        s[B].vectorize(inner)
        axes[-1] = outer
    if parallel:
        s[B].parallel(s[B].fuse(*axes) if len(axes) > 1 else axes[0])

    evaluator = _NumpyEval([v(a) for v, a in zip(views, inputs)], shape)
    expected = evaluator(tree)
    assume(evaluator.defined)
    rtol, atol = _tolerance(tree, out_dtype, evaluator.magnitude)
    verify_schedule(s, tensors + [B], inputs, [np.empty(shape, out_dtype)],
                    lambda *arrays: expected, rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------- regressions
# Plain tests for the bugs the generator above found, shrunk to their smallest form.

def _check_elementwise(dtype, fcompute, reference, n=4, inputs=None):
    A = te.placeholder((n,), dtype=dtype, name="A")
    B = te.compute((n,), lambda i: fcompute(A[i]), name="B")
    s = te.create_schedule(B.op)
    a = np.arange(n).astype(dtype) if inputs is None else np.asarray(inputs, dtype)
    expected = reference(a)
    verify_schedule(s, [A, B], [a], [np.empty(n, expected.dtype)], lambda a: expected,
                    rtol=0, atol=0)


def test_folded_uint8_constants_wrap_around():
    # 1 + 255 folded to IntImm(256, "uint8"), which the interpreter could not represent
    _check_elementwise("uint8", lambda x: x + (te.const(1, "uint8") + te.const(255, "uint8")),
                       lambda a: a)
    _check_elementwise("uint8", lambda x: x + te.const(-1, "int32").astype("uint8"),
                       lambda a: a + np.uint8(255))


def test_wrapping_comparison_is_not_folded():
    # the simplifier proved x - 1 < x, which is false for x = 0 in uint8 and -128 in int8
    _check_elementwise("uint8", lambda x: (x - te.const(1, "uint8") < x).astype("int32"),
                       lambda a: (a - np.uint8(1) < a).astype("int32"))
    _check_elementwise("int8", lambda x: (x + te.const(100, "int8") > x).astype("int32"),
                       lambda a: (a + np.int8(100) > a).astype("int32"), inputs=[-128, 0, 27, 28])


def test_sum_with_int_min_constant():
    # x + INT_MIN was rewritten to x - 2147483648, a constant out of the int32 range
    _check_elementwise("int32", lambda x: te.const(-2**31, "int32") + x,
                       lambda a: a + np.int32(-2**31))


def test_truncdiv_of_int8_min():
    # the interpreter computed |-128| // 5 in int8, where |-128| overflows
    _check_elementwise("int8", lambda x: te.truncdiv(x, te.const(5, "int8")),
                       lambda a: (a.astype("int64") / 5).astype("int8"),
                       inputs=[-128, -7, 7, 127])


def test_float32_constants_fold_in_float32():
    # 0.7 * 0.7 was folded in double precision: one ulp away from float32 arithmetic
    c = te.const(0.7, "float32")
    _check_elementwise("float32", lambda x: x + c * c,
                       lambda a: a + np.float32(0.7) * np.float32(0.7))
    _check_elementwise("float64", lambda x: x + c.astype("float64"),
                       lambda a: a + np.float64(np.float32(0.7)))
