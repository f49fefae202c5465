# %% [markdown]
# # A convolution on the GPU
#
# A port of TVM's "How to optimize convolution on GPU" tutorial (by Haichen Shen). The code
# is TVM's with the names changed (``tvm.`` -> ``te.``); ``te.build(..., target="cuda")``
# compiles the schedule to numba.cuda kernels.
#
# The layout is HWCN: the input ``A`` is (height, width, in_channel, batch) and the filter
# ``W`` is (kernel, kernel, in_channel, out_channel). Each block of threads computes a tile
# of output channels by batch elements for one output pixel. Tiles of the input and of the
# filter are first copied to shared memory by all the threads of a block, then into each
# thread's registers ("local" memory), and each thread accumulates its outputs in registers.
#
# Without a GPU (no CUDA driver), the kernels run on numba's CUDA simulator
# (``te.testing.simulate_gpu_if_absent``), which runs every GPU thread as a Python thread:
# the problems are then small, as with ``TW_TUTORIAL_SMALL=1``. The test suite runs the
# tutorial that way.

# %%
import os

import numpy as np

import te
from codegen_cuda import simulator

SIMULATED = te.testing.simulate_gpu_if_absent()     # before numba is imported
SMALL = os.environ.get("TW_TUTORIAL_SMALL") == "1" or SIMULATED

# The sizes of the input and the filter.
if SMALL:
    batch, in_channel, out_channel, in_size = 8, 4, 8, 3
else:
    batch, in_channel, out_channel, in_size = 256, 256, 512, 14
kernel = 3
pad = 1
stride = 1

# %% [markdown]
# ## Describe the computation
#
# ``Apad`` is the input with a border of ``pad`` zeros; ``B`` sums over the filter window
# (``ry``, ``rx``) and the input channels (``rc``).

# %%
A = te.placeholder((in_size, in_size, in_channel, batch), name="A")
W = te.placeholder((kernel, kernel, in_channel, out_channel), name="W")
out_size = (in_size - kernel + 2 * pad) // stride + 1
Apad = te.compute(
    (in_size + 2 * pad, in_size + 2 * pad, in_channel, batch),
    lambda yy, xx, cc, nn: te.tir.if_then_else(
        te.tir.all(yy >= pad, yy - pad < in_size, xx >= pad, xx - pad < in_size),
        A[yy - pad, xx - pad, cc, nn],
        te.tir.const(0.0, "float32"),
    ),
    name="Apad",
)
rc = te.reduce_axis((0, in_channel), name="rc")
ry = te.reduce_axis((0, kernel), name="ry")
rx = te.reduce_axis((0, kernel), name="rx")
B = te.compute(
    (out_size, out_size, out_channel, batch),
    lambda yy, xx, ff, nn: te.sum(
        Apad[yy * stride + ry, xx * stride + rx, rc, nn] * W[ry, rx, rc, ff], axis=[ry, rx, rc]
    ),
    name="B",
)

# %% [markdown]
# ## The memory hierarchy
#
# The padding is inlined into the convolution. ``cache_read`` adds a stage that copies a
# tensor to the given scope for the named readers: ``AA`` and ``WW`` hold tiles in shared
# memory, ``AL`` and ``WL`` copy those to each thread's registers. ``cache_write`` makes
# ``BL``, the accumulator in registers, which ``B`` then copies to global memory.

# %%
s = te.create_schedule(B.op)
s[Apad].compute_inline()
AA = s.cache_read(Apad, "shared", [B])
WW = s.cache_read(W, "shared", [B])
AL = s.cache_read(AA, "local", [B])
WL = s.cache_read(WW, "local", [B])
BL = s.cache_write(B, "local")

# %% [markdown]
# ## Blocks and threads
#
# The output pixels (``hi`` and ``wi`` fused) go to ``blockIdx.z``; the output channels and
# the batch are cut into ``block_factor``-wide tiles bound to ``blockIdx.y`` and
# ``blockIdx.x``. Inside a block, ``num_thread`` x ``num_thread`` threads each compute
# ``tile`` x ``tile`` outputs.
#
# Two *virtual threads* (``vthread``) per axis split each thread's outputs into
# ``vthread`` x ``vthread`` strided sub-tiles. Neighbouring threads then read neighbouring
# elements (coalesced loads) and the sub-tiles' loads and stores are independent. A
# vthread is not a hardware thread: its loop runs serially inside each thread.

# %%
if SMALL:
    tile, num_thread, step, vthread = 2, 4, 4, 2
else:
    tile, num_thread, step, vthread = 8, 8, 8, 2
block_factor = tile * num_thread

block_x = te.thread_axis("blockIdx.x")
block_y = te.thread_axis("blockIdx.y")
block_z = te.thread_axis("blockIdx.z")
thread_x = te.thread_axis((0, num_thread), "threadIdx.x")
thread_y = te.thread_axis((0, num_thread), "threadIdx.y")
thread_xz = te.thread_axis((0, vthread), "vthread", name="vx")
thread_yz = te.thread_axis((0, vthread), "vthread", name="vy")

hi, wi, fi, ni = s[B].op.axis
bz = s[B].fuse(hi, wi)
by, fi = s[B].split(fi, factor=block_factor)
bx, ni = s[B].split(ni, factor=block_factor)
s[B].bind(bz, block_z)
s[B].bind(by, block_y)
s[B].bind(bx, block_x)

tyz, fi = s[B].split(fi, nparts=vthread)
txz, ni = s[B].split(ni, nparts=vthread)
ty, fi = s[B].split(fi, nparts=num_thread)
tx, ni = s[B].split(ni, nparts=num_thread)
s[B].reorder(bz, by, bx, tyz, txz, ty, tx, fi, ni)
s[B].bind(tyz, thread_yz)
s[B].bind(txz, thread_xz)
s[B].bind(ty, thread_y)
s[B].bind(tx, thread_x)

# %% [markdown]
# ## Where each stage is computed
#
# Each thread computes its block of ``BL`` inside its ``tx`` loop. The input channels of
# the reduction are split by ``step``: for each (``rco``, ``ry``, ``rx``), the block loads
# ``step`` channels of the input and the filter into shared memory (``AA``, ``WW`` at
# ``rx``), and each thread loads one channel of them at a time into registers (``AL``,
# ``WL`` at ``rci``).

# %%
s[BL].compute_at(s[B], tx)
yi, xi, fi, ni = s[BL].op.axis
ry, rx, rc = s[BL].op.reduce_axis
rco, rci = s[BL].split(rc, factor=step)
s[BL].reorder(rco, ry, rx, rci, fi, ni)

s[AA].compute_at(s[BL], rx)
s[WW].compute_at(s[BL], rx)
s[AL].compute_at(s[BL], rci)
s[WL].compute_at(s[BL], rci)

# %% [markdown]
# ## Cooperative loads into shared memory
#
# All the threads of a block copy the shared tiles together: the channel axis is spread
# over ``threadIdx.y`` and the batch (or output-channel) axis over ``threadIdx.x``. TVM
# vectorizes the innermost 4 elements into one 128-bit load; the numba.cuda backend has no
# vector types, so that loop runs as 4 scalar loads.

# %%
yi, xi, ci, ni = s[AA].op.axis
ty, ci = s[AA].split(ci, nparts=num_thread)
tx, ni = s[AA].split(ni, nparts=num_thread)
_, ni = s[AA].split(ni, factor=4)
s[AA].reorder(ty, tx, yi, xi, ci, ni)
s[AA].bind(ty, thread_y)
s[AA].bind(tx, thread_x)
s[AA].vectorize(ni)

yi, xi, ci, fi = s[WW].op.axis
ty, ci = s[WW].split(ci, nparts=num_thread)
tx, fi = s[WW].split(fi, nparts=num_thread)
_, fi = s[WW].split(fi, factor=4)
s[WW].reorder(ty, tx, yi, xi, ci, fi)
s[WW].bind(ty, thread_y)
s[WW].bind(tx, thread_x)
s[WW].vectorize(fi)

# %% [markdown]
# ## The lowered loop nest
#
# ``target="cuda"`` lowers the nest as the GPU backend compiles it. The shared buffers are
# allocated inside the block loops, the ``vthread`` loops are still visible here.

# %%
print(te.lower(s, [A, W, B], target="cuda"))

# %% [markdown]
# ## Build and run
#
# ``get_source()`` shows the generated numba.cuda kernel and the host function that
# launches it. ``te.nd.array`` arrays (or plain numpy arrays) are copied to the GPU for the
# call and the outputs copied back.

# %%
func = te.build(s, [A, W, B], target="cuda")
print(func.get_source())

dev = te.cuda(0)
rng = np.random.default_rng(0)
a_np = rng.uniform(size=(in_size, in_size, in_channel, batch)).astype(A.dtype)
w_np = rng.uniform(size=(kernel, kernel, in_channel, out_channel)).astype(W.dtype)
a = te.nd.array(a_np, dev)
w = te.nd.array(w_np, dev)
b = te.nd.array(np.zeros((out_size, out_size, out_channel, batch), dtype=B.dtype), dev)
func(a, w, b)


def conv2d_hwcn(a, w):
    """The same convolution in numpy (float64; ``optimize=True`` lets einsum use BLAS)."""
    apad = np.pad(a.astype("float64"), ((pad, pad), (pad, pad), (0, 0), (0, 0)))
    out = np.zeros((out_size, out_size, out_channel, batch))
    span = (out_size - 1) * stride + 1
    for dy in range(kernel):
        for dx in range(kernel):
            window = apad[dy:dy + span:stride, dx:dx + span:stride]
            out += np.einsum("yxcn,cf->yxfn", window, w[dy, dx], optimize=True)
    return out


te.testing.assert_allclose(b.numpy(), conv2d_hwcn(a_np, w_np), rtol=1e-4)
print("conv2d matches numpy")

# %% [markdown]
# ## Time it
#
# On a GPU, ``time_evaluator`` copies the arguments to the device once and times the
# kernel launches. The simulator's timings mean nothing, so the tutorial skips them there.

# %%
if not simulator():
    evaluator = func.time_evaluator(func.entry_name, dev, number=10)
    seconds = evaluator(a, w, b).mean
    flops = 2 * out_size * out_size * out_channel * batch * kernel * kernel * in_channel
    print(f"Convolution: {seconds * 1e3:.3f} ms, {flops / seconds / 1e9:.1f} GFLOP/s")
