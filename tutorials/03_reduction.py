# %% [markdown]
# # Reduction
#
# A port of the CPU parts of TVM's "Reduction" tutorial (by Tianqi Chen) and of the argmax
# example from "Compute and Reduce with Tuple Inputs".
#
# A reduction combines many values into one, like the sum of a row. Each output element gets
# an initial value (the reducer's identity) and then an update loop over the reduce axis.

# %%
import numpy as np

import te

rng = np.random.default_rng(0)
n_val, m_val = 67, 91
a_np = rng.uniform(size=(n_val, m_val)).astype("float32")


def run(s, args, inputs, outputs):
    """Compile the schedule, run it on ``inputs`` and fresh ``outputs``; return the outputs."""
    f = te.build(s, args, target="llvm")
    results = [np.full(shape, 7, dtype) for shape, dtype in outputs]
    f(*inputs, *results)
    return results


# %% [markdown]
# ## Describe a sum of rows
#
# ``B[i] = sum(A[i, :])``. The reduction needs a reduce axis, created with
# ``te.reduce_axis``; ``te.sum`` reduces its first argument over it.

# %%
n = te.var("n")
m = te.var("m")
A = te.placeholder((n, m), name="A")
k = te.reduce_axis((0, m), "k")
B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")

s = te.create_schedule(B.op)
print(te.lower(s, [A, B]))
(b,) = run(s, [A, B], [a_np], [((n_val,), "float32")])
te.testing.assert_allclose(b, a_np.sum(axis=1), rtol=1e-5)

# %% [markdown]
# ## Schedule the reduction
#
# A reduce axis is split like any other axis; here both the row axis and the reduce axis are.

# %%
ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
xo, xi = s[B].split(B.op.axis[0], factor=32)
print(te.lower(s, [A, B]))
(b,) = run(s, [A, B], [a_np], [((n_val,), "float32")])
te.testing.assert_allclose(b, a_np.sum(axis=1), rtol=1e-5)

# %% [markdown]
# On a GPU the row axes would now be bound to blocks and threads (shown lowered only: the CPU
# backend does not run thread bindings).

# %%
s[B].bind(xo, te.thread_axis("blockIdx.x"))
s[B].bind(xi, te.thread_axis("threadIdx.x"))
print(te.lower(s, [A, B]))

# %% [markdown]
# ## Reduction factoring
#
# The iterations of a reduce axis depend on each other through the accumulator, so they
# cannot be vectorized or run in parallel (``parallel`` of a reduce axis warns and leaves the
# loop serial; TVM's code would race there). ``rfactor`` breaks that dependency: it computes
# partial sums in a new stage ``B.rf`` in which the chosen part of the reduce axis is a data
# axis, and ``B`` then only adds up the partial sums.

# %%
s = te.create_schedule(B.op)
ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
BF = s.rfactor(B, ki)
print(te.lower(s, [A, B]))
(b,) = run(s, [A, B], [a_np], [((n_val,), "float32")])
te.testing.assert_allclose(b, a_np.sum(axis=1), rtol=1e-5)

# %% [markdown]
# The partial sums' stage has the former reduce part ``ki`` as its first data axis; ``B`` now
# reduces over it:

# %%
print(BF.shape)
print(s[B].op.body)

# %% [markdown]
# The factored axis is an ordinary data axis, so ``B.rf`` can be vectorized along it: each
# SIMD lane keeps its own partial sum. ``B.rf`` is computed inside each row of ``B``.

# %%
s = te.create_schedule(B.op)
ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
BF = s.rfactor(B, ki)
s[BF].compute_at(s[B], s[B].op.axis[0])
ki_v = s[BF].op.axis[0]
s[BF].reorder(s[BF].op.reduce_axis[0], ki_v)
s[BF].vectorize(ki_v)
print(te.lower(s, [A, B]))
(b,) = run(s, [A, B], [a_np], [((n_val,), "float32")])
te.testing.assert_allclose(b, a_np.sum(axis=1), rtol=1e-5)

# %% [markdown]
# Since ``m`` is symbolic, the last group of 16 may be partial and every lane needs its own
# guard: the vectorizer keeps that loop as it is (the ``# pragma scalarized`` line says why)
# and leaves it to LLVM. When the row length is a constant multiple of 16, the guard
# disappears and the partial sums are updated as whole vectors (``ramp``/``broadcast``).

# %%
row = 96
A = te.placeholder((n, row), name="A")
k = te.reduce_axis((0, row), "k")
B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
s = te.create_schedule(B.op)
ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
BF = s.rfactor(B, ki)
s[BF].compute_at(s[B], s[B].op.axis[0])
ki_v = s[BF].op.axis[0]
s[BF].reorder(s[BF].op.reduce_axis[0], ki_v)
s[BF].vectorize(ki_v)
print(te.lower(s, [A, B]))
a96_np = rng.uniform(size=(n_val, row)).astype("float32")
(b,) = run(s, [A, B], [a96_np], [((n_val,), "float32")])
te.testing.assert_allclose(b, a96_np.sum(axis=1), rtol=1e-5)

# %% [markdown]
# ## Describe convolution as a 2-D reduction
#
# A reduction may run over several axes at once. A 2-D convolution with a 3x3 filter sums
# over the two filter axes.

# %%
n = te.var("n")
Input = te.placeholder((n, n), name="Input")
Filter = te.placeholder((3, 3), name="Filter")
di = te.reduce_axis((0, 3), name="di")
dj = te.reduce_axis((0, 3), name="dj")
Output = te.compute(
    (n - 2, n - 2),
    lambda i, j: te.sum(Input[i + di, j + dj] * Filter[di, dj], axis=[di, dj]),
    name="Output",
)
s = te.create_schedule(Output.op)
print(te.lower(s, [Input, Filter, Output]))

size = 30
input_np = rng.uniform(size=(size, size)).astype("float32")
filter_np = rng.uniform(size=(3, 3)).astype("float32")
expected = np.zeros((size - 2, size - 2), "float32")
for fi in range(3):
    for fj in range(3):
        expected += input_np[fi:fi + size - 2, fj:fj + size - 2] * filter_np[fi, fj]
(out,) = run(s, [Input, Filter, Output], [input_np, filter_np],
             [((size - 2, size - 2), "float32")])
te.testing.assert_allclose(out, expected, rtol=1e-5)

# %% [markdown]
# ## Define a general commutative reduction
#
# Besides ``te.sum``, ``te.min`` and ``te.max``, ``te.comm_reducer`` makes a reducer from a
# combining function and an identity. ``mysum`` is ``te.sum`` built by hand; ``product``
# multiplies.

# %%
n = te.var("n")
m = te.var("m")
mysum = te.comm_reducer(lambda x, y: x + y, lambda t: te.tir.const(0, dtype=t), name="mysum")
product = te.comm_reducer(lambda x, y: x * y, lambda t: te.tir.const(1, dtype=t),
                          name="product")
A = te.placeholder((n, m), name="A")
k = te.reduce_axis((0, m), name="k")
B = te.compute((n,), lambda i: mysum(A[i, k], axis=k), name="B")
s = te.create_schedule(B.op)
print(te.lower(s, [A, B]))
(b,) = run(s, [A, B], [a_np], [((n_val,), "float32")])
te.testing.assert_allclose(b, a_np.sum(axis=1), rtol=1e-5)

k = te.reduce_axis((0, m), name="k")
P = te.compute((n,), lambda i: product(A[i, k], axis=k), name="P")
s = te.create_schedule(P.op)
print(te.lower(s, [A, P]))
p_np = (rng.uniform(size=(n_val, 12)) + 0.5).astype("float32")
(p,) = run(s, [A, P], [p_np], [((n_val,), "float32")])
te.testing.assert_allclose(p, p_np.prod(axis=1), rtol=1e-5)

# %% [markdown]
# ## A reducer over tuples: argmax
#
# A reducer may combine several values at once. argmax carries (index, value) pairs and keeps
# the pair with the larger value; its identity is (-1, the smallest value of the type).
# ``te.compute`` then returns two tensors, one per element of the tuple.

# %%
def fcombine(x, y):
    lhs = te.tir.Select((x[1] >= y[1]), x[0], y[0])
    rhs = te.tir.Select((x[1] >= y[1]), x[1], y[1])
    return lhs, rhs


def fidentity(t0, t1):
    return te.tir.const(-1, t0), te.min_value(t1)


argmax = te.comm_reducer(fcombine, fidentity, name="argmax")

m = te.var("m")
n = te.var("n")
idx = te.placeholder((m, n), name="idx", dtype="int32")
val = te.placeholder((m, n), name="val", dtype="int32")
k = te.reduce_axis((0, n), "k")
T0, T1 = te.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
s = te.create_schedule(T0.op)
print(te.lower(s, [idx, val, T0, T1]))

rows, cols = 23, 40
idx_np = np.tile(np.arange(cols, dtype="int32"), (rows, 1))
val_np = rng.permuted(np.tile(np.arange(cols, dtype="int32"), (rows, 1)), axis=1)
t0, t1 = run(s, [idx, val, T0, T1], [idx_np, val_np], [((rows,), "int32"), ((rows,), "int32")])
np.testing.assert_array_equal(t0, val_np.argmax(axis=1))
np.testing.assert_array_equal(t1, val_np.max(axis=1))

# %% [markdown]
# ## Summary
#
# - ``te.reduce_axis`` and ``te.sum`` (or ``te.max``, ``te.min``) describe reductions.
# - A reduce axis is split like a data axis; ``rfactor`` turns part of it into a data axis
#   that can be vectorized or parallelized.
# - ``te.comm_reducer`` makes new reducers, also over tuples of values.
