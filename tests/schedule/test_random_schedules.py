"""Property tests: random schedules keep numpy reference = interpreter = compiled code.

Hypothesis draws the primitives one by one (``st.data()``) and applies them to a stage; every
step is also written to the test's notes as the line of schedule code it ran, so a failing case
prints a ready-made reproduction. Shapes stay small (each case costs one LLVM compile) and the
examples are derandomized, so CI runs the same cases every time.
"""
import numpy as np
from hypothesis import HealthCheck, given, note, settings, strategies as st

import te
from schedule.interp import run
from te.expr import IntImm
from te.tensor import COMM_REDUCE
from te.testing import verify_schedule


def _settings(n):
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class _Scheduler:
    """Applies drawn primitives to one stage, tracking constant leaf extents (None: unknown)."""

    def __init__(self, data, s, tensor, root_known=True):
        self.data, self.stage = data, s[tensor]
        self.name = tensor.name.replace(".", "_")
        self.root_known = root_known
        self.ext = {}
        self.special = set()        # leaves already vectorized, unrolled or parallel

    def draw(self, strategy, label):
        return self.data.draw(strategy, label=f"{self.name}.{label}")

    def leaves(self):
        for iv in self.stage.leaf_iter_vars:
            if iv not in self.ext:      # a root axis, or one that rfactor made
                e = iv.dom.extent
                self.ext[iv] = e.value if self.root_known and isinstance(e, IntImm) else None
        return list(self.stage.leaf_iter_vars)

    def _log(self, text):
        note(f"s[{self.name}].{text}")

    # ------------------------------------------------------------------ loop structure
    def loop_structure(self, max_steps=3):
        for _ in range(self.draw(st.integers(0, max_steps), "steps")):
            kind = self.draw(st.sampled_from(["split", "nparts", "tile", "fuse", "reorder"]),
                             "kind")
            getattr(self, kind)()

    def pick(self, label):
        leaves = self.leaves()
        return leaves[self.draw(st.integers(0, len(leaves) - 1), label)]

    def split(self):
        iv = self.pick("split")
        f = self.draw(st.integers(1, 7), "factor")
        self._log(f"split({iv.var.name}, factor={f})")
        self._split(iv, f, None)

    def nparts(self):
        iv = self.pick("split")
        n = self.draw(st.integers(1, 5), "nparts")
        self._log(f"split({iv.var.name}, nparts={n})")
        self._split(iv, None, n)

    def _split(self, iv, factor, nparts):
        outer, inner = self.stage.split(iv, factor=factor, nparts=nparts)
        e = self.ext[iv]
        if factor is not None:
            self.ext[outer], self.ext[inner] = _ceil(e, factor), factor
        else:
            self.ext[outer], self.ext[inner] = nparts, _ceil(e, nparts)
        return outer, inner

    def tile(self):
        leaves = self.leaves()
        if len(leaves) < 2:
            return
        px, py = self.draw(st.lists(st.integers(0, len(leaves) - 1), min_size=2, max_size=2,
                                    unique=True), "tile")
        x, y = leaves[px], leaves[py]
        fx, fy = self.draw(st.integers(1, 6), "fx"), self.draw(st.integers(1, 6), "fy")
        self._log(f"tile({x.var.name}, {y.var.name}, {fx}, {fy})")
        ex, ey = self.ext[x], self.ext[y]
        xo, yo, xi, yi = self.stage.tile(x, y, fx, fy)
        self.ext.update({xo: _ceil(ex, fx), yo: _ceil(ey, fy), xi: fx, yi: fy})

    def fuse(self):
        leaves = self.leaves()
        pairs = [p for p in range(len(leaves) - 1)
                 if _is_reduce(leaves[p]) == _is_reduce(leaves[p + 1])]
        if not pairs:
            return
        p = self.draw(st.sampled_from(pairs), "fuse")
        a, b = leaves[p], leaves[p + 1]
        self._log(f"fuse({a.var.name}, {b.var.name})")
        fused = self.stage.fuse(a, b)
        ea, eb = self.ext[a], self.ext[b]
        self.ext[fused] = ea * eb if ea is not None and eb is not None else None

    def reorder(self):
        leaves = self.leaves()
        perm = self.draw(st.permutations(range(len(leaves))), "reorder")
        order = [leaves[p] for p in perm]
        self._log(f"reorder({', '.join(iv.var.name for iv in order)})")
        self.stage.reorder(*order)

    # ------------------------------------------------------------------ loop kinds
    def annotate(self):
        """Maybe vectorize the innermost leaf, unroll a short one, parallelize the outermost
        data-parallel one."""
        leaves = self.leaves()
        inner = leaves[-1]
        e = self.ext[inner]
        if not _is_reduce(inner) and e is not None and e <= 16 and \
                self.draw(st.booleans(), "vectorize"):
            self._log(f"vectorize({inner.var.name})")
            self.stage.vectorize(inner)
            self.special.add(inner)
        small = [lv for lv in leaves if lv not in self.special and self.ext[lv] is not None
                 and self.ext[lv] <= 8]
        if small and self.draw(st.booleans(), "unroll"):
            iv = small[self.draw(st.integers(0, len(small) - 1), "unroll_axis")]
            self._log(f"unroll({iv.var.name})")
            self.stage.unroll(iv)
            self.special.add(iv)
        data = [lv for lv in leaves if not _is_reduce(lv)]
        if data and data[0] not in self.special and \
                self.draw(st.booleans(), "parallel"):
            self._log(f"parallel({data[0].var.name})")
            self.stage.parallel(data[0])
            self.special.add(data[0])

    def random(self, max_steps=3):
        self.loop_structure(max_steps)
        self.annotate()


def _ceil(e, f):
    return None if e is None else -(-e // f)


def _is_reduce(iv):
    return iv.iter_type == COMM_REDUCE


def _attach(data, s, producer, consumer, choices=("root", "inline", "at")):
    """Place ``producer``: at the root, inlined, or at a random leaf of ``consumer``."""
    where = data.draw(st.sampled_from(choices), label=f"{producer.name}.placement")
    if where == "inline":
        note(f"s[{producer.name}].compute_inline()")
        s[producer].compute_inline()
    elif where == "at":
        leaves = s[consumer].leaf_iter_vars
        leaf = leaves[data.draw(st.integers(0, len(leaves) - 1), label="attach_leaf")]
        note(f"s[{producer.name}].compute_at(s[{consumer.name}], {leaf.var.name})")
        s[producer].compute_at(s[consumer], leaf)
    return where


def _rng(data):
    return np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))


def _array(rng, shape, dtype):
    if dtype.startswith("float"):
        return rng.uniform(-1, 1, size=shape).astype(dtype)
    return rng.integers(-20, 20, size=shape).astype(dtype)


def _shape(data, ndim, lo=1, hi=9, label="shape"):
    return tuple(data.draw(st.lists(st.integers(lo, hi), min_size=ndim, max_size=ndim),
                           label=label))


# ----------------------------------------------------------------------------- elementwise

@_settings(60)
@given(st.data())
def test_random_schedule_elementwise(data):
    ndim = data.draw(st.integers(1, 3), label="ndim")
    shape = _shape(data, ndim)
    dtype = data.draw(st.sampled_from(["float32", "int32"]), label="dtype")
    A = te.placeholder(shape, dtype=dtype, name="A")
    B = te.placeholder((shape[-1],), dtype=dtype, name="B")
    weights = [1, 16, 256][:ndim]
    # the index term makes any mix-up of loop variables visible in the result
    C = te.compute(shape, lambda *i: A[i] * 2 + B[i[-1]] + sum(
        (iv * w for iv, w in zip(i, weights)), te.const(0)).astype(dtype), name="C")
    s = te.create_schedule(C.op)
    _Scheduler(data, s, C).random()
    rng = _rng(data)
    a, b = _array(rng, shape, dtype), _array(rng, (shape[-1],), dtype)
    index = sum(g * w for g, w in zip(np.indices(shape), weights)).astype(dtype)
    verify_schedule(s, [A, B, C], [a, b], [np.empty(shape, dtype)],
                    lambda a, b: a * 2 + b + index)


# ----------------------------------------------------------------------------- reductions

REDUCERS = {"sum": (te.sum, np.sum), "max": (te.max, np.max), "min": (te.min, np.min)}


def _identity(name, dtype):
    if name == "sum":
        return 0
    info = np.finfo(dtype) if dtype.startswith("float") else np.iinfo(dtype)
    return info.min if name == "max" else info.max


@_settings(60)
@given(st.data())
def test_random_schedule_reduction(data):
    ndata = data.draw(st.integers(1, 2), label="data_axes")
    nred = data.draw(st.integers(1, 2), label="reduce_axes")
    dshape, rshape = _shape(data, ndata, hi=6), _shape(data, nred, hi=7, label="rshape")
    dtype = data.draw(st.sampled_from(["float32", "float64", "int32", "int8", "uint8"]),
                      label="dtype")
    name = data.draw(st.sampled_from(sorted(REDUCERS)), label="reducer")
    masked = data.draw(st.booleans(), label="where")
    te_red, np_red = REDUCERS[name]
    A = te.placeholder(dshape + rshape, dtype=dtype, name="A")
    rs = [te.reduce_axis((0, n), name=f"r{k}") for k, n in enumerate(rshape)]

    def body(*i):
        # where: keep r0 + i0 even, so that some outputs reduce over nothing (the identity)
        where = ((rs[0] + i[0]) % 2).equal(0) if masked else None
        return te_red(A[i + tuple(rs)], axis=rs, where=where)
    C = te.compute(dshape, body, name="C")
    s = te.create_schedule(C.op)
    _Scheduler(data, s, C).random(max_steps=4)
    a = _array(_rng(data), dshape + rshape, dtype)

    def reference(a):
        if masked:
            grid = np.indices(dshape + rshape)
            a = np.where((grid[ndata] + grid[0]) % 2 == 0, a, _identity(name, dtype))
        return np_red(a, axis=tuple(range(ndata, ndata + nred))).astype(dtype)
    verify_schedule(s, [A, C], [a], [np.empty(dshape, dtype)], reference, rtol=1e-5,
                    atol=1e-5)


@_settings(40)
@given(st.data())
def test_random_rfactor(data):
    M, K = data.draw(st.integers(1, 6), label="M"), data.draw(st.integers(1, 24), label="K")
    name = data.draw(st.sampled_from(sorted(REDUCERS)), label="reducer")
    te_red, np_red = REDUCERS[name]
    A = te.placeholder((M, K), name="A")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M,), lambda i: te_red(A[i, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    f = data.draw(st.integers(1, 8), label="factor")
    use_nparts = data.draw(st.booleans(), label="nparts")
    note(f"s[C].split(k, {'nparts' if use_nparts else 'factor'}={f})")
    sched = _Scheduler(data, s, C)
    sched.leaves()
    sched._split(k, None if use_nparts else f, f if use_nparts else None)
    sched.loop_structure(max_steps=2)
    reduce_leaves = [iv for iv in sched.leaves() if _is_reduce(iv)]
    axis = reduce_leaves[data.draw(st.integers(0, len(reduce_leaves) - 1), label="rf_axis")]
    factor_axis = data.draw(st.integers(0, 1), label="factor_axis")
    note(f"CF = s.rfactor(C, {axis.var.name}, factor_axis={factor_axis})")
    CF = s.rfactor(C, axis, factor_axis=factor_axis)
    sched.random(max_steps=2)
    where = _attach(data, s, CF, C, choices=("root", "at"))
    _Scheduler(data, s, CF, root_known=where == "root").random(max_steps=2)
    a = _array(_rng(data), (M, K), "float32")
    verify_schedule(s, [A, C], [a], [np.empty((M,), "float32")],
                    lambda a: np_red(a, axis=1), rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- pipelines

@_settings(60)
@given(st.data())
def test_random_two_stage_pipeline(data):
    ndim = data.draw(st.integers(1, 2), label="ndim")
    shape = _shape(data, ndim, lo=2, hi=8)
    halo = _shape(data, ndim, lo=0, hi=2, label="halo")
    # C reads B at i and at i + halo, or (2-D) B transposed at (j, i)
    transpose = ndim == 2 and data.draw(st.booleans(), label="transpose")
    producer = data.draw(st.sampled_from(["map", "reduce", "pad"]), label="producer")
    K = 3
    bshape = tuple(n + h for n, h in zip(shape, halo))
    if transpose:
        bshape = bshape[::-1]
    if producer == "reduce":
        A = te.placeholder(bshape + (K,), name="A")
        k = te.reduce_axis((0, K), name="k")
        B = te.compute(bshape, lambda *i: te.sum(A[i + (k,)] * 0.5, axis=k), name="B")
    elif producer == "pad":     # zero padding in front of every axis
        A = te.placeholder(tuple(n - 1 for n in bshape), name="A")
        B = te.compute(bshape, lambda *i: te.if_then_else(
            te.all(*[iv >= 1 for iv in i]), A[tuple(iv - 1 for iv in i)], 0.0), name="B")
    else:
        A = te.placeholder(bshape, name="A")
        B = te.compute(bshape, lambda *i: A[i] * 3.0 - 1.0, name="B")

    def read_b(*i):
        if transpose:
            i = i[::-1]
        shifted = tuple(iv + h for iv, h in zip(i, halo[::-1] if transpose else halo))
        return B[i] + B[shifted] * 2.0
    C = te.compute(shape, read_b, name="C")
    s = te.create_schedule(C.op)
    _Scheduler(data, s, C).random()
    choices = ("root", "at") if producer == "reduce" else ("root", "inline", "at")
    where = _attach(data, s, B, C, choices)
    if where != "inline":
        _Scheduler(data, s, B, root_known=where == "root").random(max_steps=2)
    a = _array(_rng(data), tuple(n.value for n in A.shape), "float32")

    def reference(a):
        if producer == "reduce":
            b = (a * 0.5).sum(axis=-1)
        else:
            b = np.pad(a, [(1, 0)] * ndim) if producer == "pad" else a * 3.0 - 1.0
        if transpose:
            b = b.T
        first = b[tuple(slice(0, n) for n in shape)]
        second = b[tuple(slice(h, h + n) for n, h in zip(shape, halo))]
        return first + second * 2.0
    verify_schedule(s, [A, C], [a], [np.empty(shape, "float32")], reference, rtol=1e-5,
                    atol=1e-5)


@_settings(40)
@given(st.data())
def test_random_three_stage_chain(data):
    ndim = data.draw(st.integers(1, 2), label="ndim")
    shape = _shape(data, ndim, lo=2, hi=7)
    grown = [tuple(n + g for n in shape) for g in (2, 1, 0)]      # B, C, D
    A = te.placeholder(grown[0], name="A")
    B = te.compute(grown[0], lambda *i: A[i] * 2.0 + 1.0, name="B")
    C = te.compute(grown[1], lambda *i: B[i] - B[tuple(v + 1 for v in i)] * 0.5, name="C")
    D = te.compute(grown[2], lambda *i: C[i] * C[tuple(v + 1 for v in i)], name="D")
    s = te.create_schedule(D.op)
    _Scheduler(data, s, D).random(max_steps=2)
    c_where = _attach(data, s, C, D)
    if c_where != "inline":
        _Scheduler(data, s, C, root_known=c_where == "root").random(max_steps=2)
    b_where = _attach(data, s, B, D if c_where == "inline" else C)
    if b_where != "inline":
        _Scheduler(data, s, B, root_known=b_where == "root").random(max_steps=1)
    a = _array(_rng(data), grown[0], "float32")

    def reference(a):
        def at(x, first):       # x[i] (first=0) or x[i + 1] (first=1) along every axis
            return x[tuple(slice(first, n - 1 + first) for n in x.shape)]
        b = a * 2 + 1
        c = at(b, 0) - at(b, 1) * 0.5
        return at(c, 0) * at(c, 1)
    verify_schedule(s, [A, D], [a], [np.empty(shape, "float32")], reference, rtol=1e-5,
                    atol=1e-5)


@_settings(50)
@given(st.data())
def test_random_cache_read_write(data):
    M, N, K = (data.draw(st.integers(1, 7), label=n) for n in "MNK")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    reader = C
    if data.draw(st.booleans(), label="cache_write"):
        note("CC = s.cache_write(C, 'local')")
        reader = s.cache_write(C, "local")
    use_read = data.draw(st.booleans(), label="cache_read")
    if use_read:
        note(f"AA = s.cache_read(A, 'local', [{reader.name}])")
        AA = s.cache_read(A, "local", [reader])
    _Scheduler(data, s, C).random()
    if reader is not C:
        where = _attach(data, s, reader, C, choices=("root", "at"))
        _Scheduler(data, s, reader, root_known=where == "root").random(max_steps=2)
    if use_read:
        _attach(data, s, AA, reader, choices=("root", "at"))
    rng = _rng(data)
    a, b = _array(rng, (M, K), "float32"), _array(rng, (K, N), "float32")
    verify_schedule(s, [A, B, C], [a, b], [np.empty((M, N), "float32")], lambda a, b: a @ b,
                    rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- symbolic shapes

@_settings(40)
@given(st.data())
def test_random_schedule_symbolic_shape(data):
    n, m = te.var("n"), te.var("m")
    kind = data.draw(st.sampled_from(["map", "reduce", "pipeline"]), label="kind")
    A = te.placeholder((n, m), name="A")
    if kind == "reduce":
        k = te.reduce_axis((0, m), name="k")
        C = te.compute((n,), lambda i: te.sum(A[i, k] * A[i, k], axis=k), name="C")
    elif kind == "pipeline":    # C reads B forwards and backwards along the symbolic m
        B = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
        C = te.compute((n, m), lambda i, j: B[i, j] + B[i, m - 1 - j] * 3.0, name="C")
    else:
        C = te.compute((n, m), lambda i, j: A[i, j] * 2.0 + (i * 16 + j).astype("float32"),
                       name="C")
    s = te.create_schedule(C.op)
    _Scheduler(data, s, C, root_known=False).random()
    if kind == "pipeline" and _attach(data, s, B, C) != "inline":
        _Scheduler(data, s, B, root_known=False).random(max_steps=2)
    sizes = data.draw(st.lists(st.tuples(st.integers(1, 9), st.integers(1, 9)), min_size=1,
                               max_size=3), label="sizes")
    rng = _rng(data)
    lowered = te.lower(s, [A, C])       # one compiled function serves every size
    mod = te.build(s, [A, C])
    for nv, mv in sizes:
        a = _array(rng, (nv, mv), "float32")
        if kind == "reduce":
            expected = (a * a).sum(axis=1)
        elif kind == "pipeline":
            expected = a * 2 + a[:, ::-1] * 6
        else:
            grid = np.indices((nv, mv))
            expected = a * 2 + (grid[0] * 16 + grid[1]).astype("float32")
        interpreted = np.full(expected.shape, 7, "float32")
        run(lowered, a, interpreted)
        compiled = np.full(expected.shape, 7, "float32")
        mod(a, compiled)
        for what, out in (("interpreter", interpreted), ("compiled code", compiled)):
            np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{what}, n={nv}, m={mv}")


# ----------------------------------------------------------------------------- regressions
# Plain tests for the bugs the generators above found, shrunk to their smallest form.

def _row_reduce(M, K, reducer=te.sum):
    A = te.placeholder((M, K), name="A")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M,), lambda i: reducer(A[i, k], axis=k), name="C")
    return A, C, k


def test_split_of_a_split_inner_axis_is_guarded():
    # k_inner (extent 1) split by 2: k_inner_inner = 1 spilled into the next k_outer and
    # counted A[:, 1] twice; only the root k < 2 was checked
    A, C, k = _row_reduce(1, 2)
    s = te.create_schedule(C.op)
    ko, ki = s[C].split(k, factor=1)
    s[C].split(ki, factor=2)
    a = np.random.default_rng(0).random((1, 2), dtype=np.float32)
    verify_schedule(s, [A, C], [a], [np.empty(1, "float32")], lambda a: a.sum(axis=1))


def test_rfactor_of_a_split_inner_axis_is_guarded():
    # the same spill inside the factored stage that rfactor builds
    A, C, k = _row_reduce(2, 5)
    s = te.create_schedule(C.op)
    ko, ki = s[C].split(k, factor=3)
    kio, kii = s[C].split(ki, factor=2)
    s.rfactor(C, kii)
    a = np.random.default_rng(0).random((2, 5), dtype=np.float32)
    verify_schedule(s, [A, C], [a], [np.empty(2, "float32")], lambda a: a.sum(axis=1))


def test_rfactor_without_remaining_reduction_reads_in_bounds():
    # with no reduce axis left, the factored stage was select(k < K, A[i, k], identity),
    # which reads A out of bounds where k >= K
    A, C, k = _row_reduce(1, 1, te.max)
    s = te.create_schedule(C.op)
    ko, ki = s[C].split(k, factor=2)
    s.rfactor(C, s[C].fuse(ko, ki))
    a = np.random.default_rng(0).random((1, 1), dtype=np.float32)
    verify_schedule(s, [A, C], [a], [np.empty(1, "float32")], lambda a: a.max(axis=1))


def test_loop_partition_keeps_inner_tail_loops_inside():
    # partitioning i_inner used the variable of an inner tail loop (made by partitioning
    # i_outer_outer first) in its own bound, outside that loop: "used but not bound"
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=2)
    ioo, ioi = s[C].split(io, factor=2)
    s[C].reorder(ii, ioo, ioi)
    a = np.random.default_rng(0).random(5, dtype=np.float32)
    verify_schedule(s, [A, C], [a], [np.empty(5, "float32")], lambda a: a * 2)
