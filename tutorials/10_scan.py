# %% [markdown]
# # Scan and recurrent kernels
#
# A port of TVM's "Scan and Recurrent Kernel" tutorial (by Tianqi Chen). A scan computes a
# tensor row by row, each row from the rows before it: the building block of recurrent
# kernels.
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
rows, cols = (6, 10) if SMALL else (64, 256)
rng = np.random.default_rng(0)
a_np = rng.uniform(size=(rows, cols)).astype("float32")

# %% [markdown]
# ## Defining a scan
#
# A cumulative sum over the rows of ``X``: ``s_state`` is a placeholder that stands for the
# scan's output while it is computed; ``s_init`` gives row 0 and ``s_update`` row ``t`` from
# row ``t - 1`` of the state. ``te.scan`` ties them together: the result has the state's shape.

# %%
m = te.var("m")
n = te.var("n")
X = te.placeholder((m, n), name="X")
s_state = te.placeholder((m, n))
s_init = te.compute((1, n), lambda _, i: X[0, i])
s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
s_scan = te.scan(s_init, s_update, s_state, inputs=[X])

# %% [markdown]
# ## Scheduling the scan cell
#
# The init and the update are stages of their own, scheduled like any other; the time axis
# of the update is the scan's and stays a serial loop. On the CPU, the default schedule:

# %%
s = te.create_schedule(s_scan.op)
print(te.lower(s, [X, s_scan]))
fcpu = te.build(s, [X, s_scan])
out = np.zeros_like(a_np)
fcpu(a_np, out)
te.testing.assert_allclose(out, np.cumsum(a_np, axis=0), rtol=1e-5)

# %% [markdown]
# For the GPU, split the second axis of both stages and bind it to blocks and threads. The
# steps depend on each other across blocks, so the time loop runs on the host and launches
# the update's kernel once per step, passing the step as an argument.

# %%
num_thread = 4 if SMALL else 256
s = te.create_schedule(s_scan.op)
block_x = te.thread_axis("blockIdx.x")
thread_x = te.thread_axis("threadIdx.x")
xo, xi = s[s_init].split(s_init.op.axis[1], factor=num_thread)
s[s_init].bind(xo, block_x)
s[s_init].bind(xi, thread_x)
xo, xi = s[s_update].split(s_update.op.axis[1], factor=num_thread)
s[s_update].bind(xo, block_x)
s[s_update].bind(xi, thread_x)
print(te.lower(s, [X, s_scan], target="cuda"))

# %% [markdown]
# ## Build and verify

# %%
fscan = te.build(s, [X, s_scan], target="cuda", name="myscan")
print(fscan.get_source())
dev = te.cuda(0)
a = te.nd.array(a_np, dev)
b = te.nd.array(np.zeros((rows, cols), dtype=s_scan.dtype), dev)
fscan(a, b)
te.testing.assert_allclose(b.numpy(), np.cumsum(a_np, axis=0), rtol=1e-5)

# %% [markdown]
# ## Multi-stage scan cell
#
# The update may be several stages. ``s_update_1`` reads the state and ``s_update_2`` reads
# ``s_update_1``: both run at every step. Here ``s_update_1`` is computed inside a loop of
# ``s_update_2``, so each step needs only a tile of it.

# %%
m = te.var("m")
n = te.var("n")
X = te.placeholder((m, n), name="X")
s_state = te.placeholder((m, n))
s_init = te.compute((1, n), lambda _, i: X[0, i])
s_update_s1 = te.compute((m, n), lambda t, i: s_state[t - 1, i] * 2, name="s1")
s_update_s2 = te.compute((m, n), lambda t, i: s_update_s1[t, i] + X[t, i], name="s2")
s_scan = te.scan(s_init, s_update_s2, s_state, inputs=[X])

s = te.create_schedule(s_scan.op)
xo, xi = s[s_update_s2].split(s_update_s2.op.axis[1], factor=4)
s[s_update_s1].compute_at(s[s_update_s2], xo)
print(te.lower(s, [X, s_scan]))
f = te.build(s, [X, s_scan])
out = np.zeros_like(a_np)
f(a_np, out)
expected = a_np.copy()
for t in range(1, rows):
    expected[t] = expected[t - 1] * 2 + a_np[t]
te.testing.assert_allclose(out, expected, rtol=1e-5)

# %% [markdown]
# ## Multiple states
#
# For recurrences such as an RNN, several states advance together: give lists of inits,
# updates and states. ``s_update2`` reads both states at the previous step.

# %%
m = te.var("m")
n = te.var("n")
l = 3
X = te.placeholder((m, n), name="X")
s_state1 = te.placeholder((m, n))
s_state2 = te.placeholder((m, l))
s_init1 = te.compute((1, n), lambda _, i: X[0, i])
s_init2 = te.compute((1, l), lambda _, i: te.const(0.0, "float32"))
s_update1 = te.compute((m, n), lambda t, i: s_state1[t - 1, i] + X[t, i])
s_update2 = te.compute((m, l), lambda t, i: s_state2[t - 1, i] + s_state1[t - 1, 0])
s_scan1, s_scan2 = te.scan([s_init1, s_init2], [s_update1, s_update2],
                           [s_state1, s_state2], inputs=[X])
s = te.create_schedule(s_scan1.op)
print(te.lower(s, [X, s_scan1, s_scan2]))
f = te.build(s, [X, s_scan1, s_scan2])
out1 = np.zeros_like(a_np)
out2 = np.zeros((rows, l), "float32")
f(a_np, out1, out2)
sum1 = np.cumsum(a_np, axis=0)
expected2 = np.zeros((rows, l), "float32")
for t in range(1, rows):
    expected2[t] = expected2[t - 1] + sum1[t - 1, 0]
te.testing.assert_allclose(out1, sum1, rtol=1e-5)
te.testing.assert_allclose(out2, expected2, rtol=1e-5)

# %% [markdown]
# ## Summary
#
# - ``te.scan(init, update, state)`` describes a recurrence over the first axis.
# - The init and update are scheduled as ordinary stages (not their time axis).
# - On the GPU the time loop runs on the host, one launch of each step's kernels per step.
