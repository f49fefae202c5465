# %% [markdown]
# # Schedule primitives
#
# A port of TVM's "Schedule Primitives in TVM" tutorial (by Ziheng Jiang) to tensorweave.
#
# The same result can be computed in many orders, and the order decides locality and speed.
# A **schedule** is the set of loop transformations applied to a computation; the computation
# itself stays unchanged. This tutorial shows the primitives one at a time: after each step it
# prints the lowered loop nest, then compiles the schedule and checks the result with numpy.

# %%
import numpy as np

import te

rng = np.random.default_rng(0)


def run_and_check(s, args, inputs, expected):
    """Compile the schedule, run it on ``inputs`` and compare the last argument with numpy."""
    f = te.build(s, args, target="llvm")
    out = np.zeros_like(expected)
    f(*inputs, out)
    te.testing.assert_allclose(out, expected, rtol=1e-6)


# %% [markdown]
# Sizes are symbolic: ``m`` and ``n`` are variables, bound from the arrays' shapes at call time.

# %%
n = te.var("n")
m = te.var("m")
m_val, n_val = 37, 45
a_np = rng.uniform(size=(m_val, n_val)).astype("float32")
b_np = rng.uniform(size=(m_val, n_val)).astype("float32")

# %% [markdown]
# A schedule is created from a list of operations. By default it computes each tensor serially,
# in row-major order.

# %%
A = te.placeholder((m, n), name="A")
B = te.placeholder((m, n), name="B")
C = te.compute((m, n), lambda i, j: A[i, j] * B[i, j], name="C")

s = te.create_schedule([C.op])
print(te.lower(s, [A, B, C]))
run_and_check(s, [A, B, C], [a_np, b_np], a_np * b_np)

# %% [markdown]
# A schedule is made of stages, one per operation; ``s[T]`` is the stage of tensor ``T``.
#
# ## split
#
# ``split`` cuts one axis into two. With ``factor`` the inner loop has that extent.

# %%
A = te.placeholder((m,), name="A")
B = te.compute((m,), lambda i: A[i] * 2, name="B")

s = te.create_schedule(B.op)
xo, xi = s[B].split(B.op.axis[0], factor=32)
print(te.lower(s, [A, B]))
a1_np = rng.uniform(size=(1000,)).astype("float32")
run_and_check(s, [A, B], [a1_np], a1_np * 2)

# %% [markdown]
# With ``nparts`` the outer loop has that extent instead.

# %%
A = te.placeholder((m,), name="A")
B = te.compute((m,), lambda i: A[i], name="B")

s = te.create_schedule(B.op)
bx, tx = s[B].split(B.op.axis[0], nparts=32)
print(te.lower(s, [A, B]))
run_and_check(s, [A, B], [a1_np], a1_np)

# %% [markdown]
# ## tile
#
# ``tile`` splits two axes and orders the four results as (outer, outer, inner, inner): the
# computation walks over the tensor tile by tile.

# %%
A = te.placeholder((m, n), name="A")
B = te.compute((m, n), lambda i, j: A[i, j], name="B")

s = te.create_schedule(B.op)
xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
print(te.lower(s, [A, B]))
run_and_check(s, [A, B], [a_np], a_np)

# %% [markdown]
# ## fuse
#
# ``fuse`` merges two consecutive axes into one. Here the two inner axes of a tile become a
# single loop of 10 * 5 iterations.

# %%
A = te.placeholder((m, n), name="A")
B = te.compute((m, n), lambda i, j: A[i, j], name="B")

s = te.create_schedule(B.op)
xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
fused = s[B].fuse(xi, yi)
print(te.lower(s, [A, B]))
run_and_check(s, [A, B], [a_np], a_np)

# %% [markdown]
# ## reorder
#
# ``reorder`` puts axes in the given order.

# %%
A = te.placeholder((m, n), name="A")
B = te.compute((m, n), lambda i, j: A[i, j], name="B")

s = te.create_schedule(B.op)
xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
s[B].reorder(xi, yo, xo, yi)
print(te.lower(s, [A, B]))
run_and_check(s, [A, B], [a_np], a_np)

# %% [markdown]
# ## bind
#
# ``bind`` ties an axis to a GPU thread index, the usual step in GPU schedules. The CPU backend
# refuses thread bindings, so this schedule is only lowered here, not built.

# %%
A = te.placeholder((n,), name="A")
B = te.compute(A.shape, lambda i: A[i] * 2, name="B")

s = te.create_schedule(B.op)
bx, tx = s[B].split(B.op.axis[0], factor=64)
s[B].bind(bx, te.thread_axis("blockIdx.x"))
s[B].bind(tx, te.thread_axis("threadIdx.x"))
print(te.lower(s, [A, B]))

# %% [markdown]
# ## compute_at
#
# A schedule of several operations computes each one at the root of the loop nest by default:
# all of ``B``, then all of ``C``.

# %%
A = te.placeholder((m,), name="A")
B = te.compute((m,), lambda i: A[i] + 1, name="B")
C = te.compute((m,), lambda i: B[i] * 2, name="C")

s = te.create_schedule(C.op)
print(te.lower(s, [A, B, C]))
run_and_check(s, [A, B, C], [a1_np, np.zeros_like(a1_np)], (a1_np + 1) * 2)

# %% [markdown]
# ``compute_at`` moves the computation of ``B`` into the first axis of ``C``'s loop nest.

# %%
A = te.placeholder((m,), name="A")
B = te.compute((m,), lambda i: A[i] + 1, name="B")
C = te.compute((m,), lambda i: B[i] * 2, name="C")

s = te.create_schedule(C.op)
s[B].compute_at(s[C], C.op.axis[0])
print(te.lower(s, [A, C]))
run_and_check(s, [A, C], [a1_np], (a1_np + 1) * 2)

# %% [markdown]
# Unlike TVM, tensorweave passes only ``A`` and ``C`` here: a tensor in the argument list is
# a buffer of the function, and such a stage must be computed at the root (lowering with
# ``[A, B, C]`` raises a ``ScheduleError`` that says so). Attached, ``B`` becomes a
# temporary buffer that holds only the values one iteration of ``C`` needs.
#
# ## compute_inline
#
# ``compute_inline`` marks a stage inline: its expression is substituted where it is read, and
# it gets no loop and no buffer of its own.

# %%
A = te.placeholder((m,), name="A")
B = te.compute((m,), lambda i: A[i] + 1, name="B")
C = te.compute((m,), lambda i: B[i] * 2, name="C")

s = te.create_schedule(C.op)
s[B].compute_inline()
print(te.lower(s, [A, C]))
run_and_check(s, [A, C], [a1_np], (a1_np + 1) * 2)

# %% [markdown]
# ## compute_root
#
# ``compute_root`` moves a stage back to the root of the loop nest.

# %%
A = te.placeholder((m,), name="A")
B = te.compute((m,), lambda i: A[i] + 1, name="B")
C = te.compute((m,), lambda i: B[i] * 2, name="C")

s = te.create_schedule(C.op)
s[B].compute_at(s[C], C.op.axis[0])
s[B].compute_root()
print(te.lower(s, [A, B, C]))
run_and_check(s, [A, B, C], [a1_np, np.zeros_like(a1_np)], (a1_np + 1) * 2)

# %% [markdown]
# ## Summary
#
# A schedule turns a computation into a loop nest; its primitives are
# ``split``, ``tile``, ``fuse``, ``reorder``, ``bind``, ``compute_at``, ``compute_inline`` and
# ``compute_root``, and more (``vectorize``, ``parallel``, ``unroll``, ``cache_write``,
# ``rfactor``) appear in the following tutorials.
