# %% [markdown]
# # Reductions on the GPU
#
# A port of the GPU parts of TVM's "Reduction" tutorial (by Tianqi Chen), followed by a
# softmax built from two GPU reductions. ``tutorials/03_reduction.py`` covers the CPU parts.
#
# Without a GPU (no CUDA driver), the kernels run on numba's CUDA simulator
# (``te.testing.simulate_gpu_if_absent``), which runs every GPU thread as a Python thread:
# the problems are then small, as with ``TW_TUTORIAL_SMALL=1``. The test suite runs the
# tutorial that way.

# %%
import os

import numpy as np

import te

SIMULATED = te.testing.simulate_gpu_if_absent()     # before numba is imported
SMALL = os.environ.get("TW_TUTORIAL_SMALL") == "1" or SIMULATED
rows, cols = (10, 45) if SMALL else (128, 128)
rng = np.random.default_rng(0)
a_np = rng.uniform(size=(rows, cols)).astype("float32")


def run(func, a, out_shape):
    """Call a built function on ``a`` and a fresh output; return the output."""
    out = te.nd.array(np.full(out_shape, 7, "float32"), te.cuda(0))
    func(te.nd.array(a, te.cuda(0)), out)
    return out.numpy()


# %% [markdown]
# ## A sum of rows, one row per thread
#
# ``B[i] = sum(A[i, :])``. The rows are split into groups of 32: each group goes to one
# block (``blockIdx.x``) and each row of a group to one thread (``threadIdx.x``). The
# reduce axis is split too; each thread runs both of its parts serially.

# %%
n = te.var("n")
m = te.var("m")
A = te.placeholder((n, m), name="A")
k = te.reduce_axis((0, m), "k")
B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")

s = te.create_schedule(B.op)
ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
xo, xi = s[B].split(B.op.axis[0], factor=32)
s[B].bind(xo, te.thread_axis("blockIdx.x"))
s[B].bind(xi, te.thread_axis("threadIdx.x"))
print(te.lower(s, [A, B], target="cuda"))

func = te.build(s, [A, B], target="cuda")
print(func.get_source())
b = run(func, a_np, (rows,))
te.testing.assert_allclose(b, a_np.sum(axis=1), rtol=1e-4)

# %% [markdown]
# ## Cross-thread reduction
#
# A row of a wide matrix is better summed by several threads together. ``rfactor`` turns the
# inner part ``ki`` of the reduce axis into a data axis of a new stage ``B.rf``: its element
# ``ki`` is the partial sum of the columns ``ko * 16 + ki``. ``B`` then reduces over the 16
# partial sums, and binding that reduce axis to ``threadIdx.x`` makes the 16 threads of a
# row combine their partial sums with each other (a tree in shared memory).
#
# ``B.rf`` is computed at the reduce axis of ``B``: each thread computes its own partial
# sum. The rows of a block are spread over ``threadIdx.y``. All 16 threads of a row end
# with the total; ``set_store_predicate`` lets only thread 0 write it.

# %%
s = te.create_schedule(B.op)
ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
BF = s.rfactor(B, ki)
xo, xi = s[B].split(s[B].op.axis[0], factor=32)
s[B].bind(xo, te.thread_axis("blockIdx.x"))
s[B].bind(xi, te.thread_axis("threadIdx.y"))
tx = te.thread_axis("threadIdx.x")
s[B].bind(s[B].op.reduce_axis[0], tx)
s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
s[B].set_store_predicate(tx.var.equal(0))
print(te.lower(s, [A, B], target="cuda"))

fcuda = te.build(s, [A, B], target="cuda")
print(fcuda.get_source())
b = run(fcuda, a_np, (rows,))
te.testing.assert_allclose(b, a_np.sum(axis=1), rtol=1e-4)

# %% [markdown]
# ## A softmax from two reductions
#
# ``softmax(A)[i, j] = exp(A[i, j] - M[i]) / E[i]`` with the row maximum
# ``M[i] = max(A[i, :])`` (subtracted so that ``exp`` cannot overflow) and the sum of the
# exponentials ``E[i] = sum(exp(A[i, :] - M[i]))``. ``E`` reads ``M``, and ``S`` reads both.
#
# Each reduction gets the cross-thread schedule above, with one row per block. ``S`` is an
# ordinary elementwise stage: its two axes are fused and split over blocks and threads.
# The schedule has three stages at the root, so the module launches three kernels in turn,
# and ``M`` and ``E`` live in GPU memory between them.

# %%
num_thread = 8 if SMALL else 64
km = te.reduce_axis((0, m), "km")
M = te.compute((n,), lambda i: te.max(A[i, km], axis=km), name="M")
ke = te.reduce_axis((0, m), "ke")
E = te.compute((n,), lambda i: te.sum(te.exp(A[i, ke] - M[i]), axis=ke), name="E")
S = te.compute((n, m), lambda i, j: te.exp(A[i, j] - M[i]) / E[i], name="S")

s = te.create_schedule(S.op)
for R in (M, E):
    ko, ki = s[R].split(R.op.reduce_axis[0], factor=num_thread)
    RF = s.rfactor(R, ki)
    tx = te.thread_axis("threadIdx.x")
    s[R].bind(s[R].op.axis[0], te.thread_axis("blockIdx.x"))
    s[R].bind(s[R].op.reduce_axis[0], tx)
    s[RF].compute_at(s[R], s[R].op.reduce_axis[0])
    s[R].set_store_predicate(tx.var.equal(0))
fused = s[S].fuse(*S.op.axis)
bx, tx = s[S].split(fused, factor=num_thread)
s[S].bind(bx, te.thread_axis("blockIdx.x"))
s[S].bind(tx, te.thread_axis("threadIdx.x"))
print(te.lower(s, [A, S], target="cuda"))

fsoftmax = te.build(s, [A, S], target="cuda", name="softmax")
print(fsoftmax.get_source())
x_np = rng.uniform(-4, 4, size=(rows, cols)).astype("float32")
y = run(fsoftmax, x_np, (rows, cols))
e_np = np.exp(x_np - x_np.max(axis=1, keepdims=True))
te.testing.assert_allclose(y, e_np / e_np.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-6)
print("softmax matches numpy")

# %% [markdown]
# ## Summary
#
# - Binding the data axes of a reduction to blocks and threads gives one output per thread.
# - ``rfactor`` plus binding the new reduce axis to ``threadIdx.x`` makes the threads of a
#   block reduce together; ``set_store_predicate`` keeps a single writer.
# - Several reductions in one schedule become several kernels, launched in order.
