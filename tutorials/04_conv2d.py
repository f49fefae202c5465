# %% [markdown]
# # A padded 2-D convolution
#
# A port of the algorithm of TVM's "How to optimize convolution on GPU" tutorial (by Haichen
# Shen), scheduled for the CPU instead of a GPU.
#
# The convolution uses the HWCN layout of that tutorial: the input ``A`` is
# (height, width, in_channel, batch) and the filter ``W`` is
# (kernel, kernel, in_channel, out_channel). The batch is the innermost dimension, so
# neighbouring batch elements are adjacent in memory: a good axis for SIMD lanes.
#
# Set ``TW_TUTORIAL_SMALL=1`` to run with small sizes (the test suite does).

# %%
import os

import numpy as np

import te

SMALL = os.environ.get("TW_TUTORIAL_SMALL") == "1"

if SMALL:
    batch, in_channel, out_channel, in_size = 8, 8, 16, 7
else:
    batch, in_channel, out_channel, in_size = 32, 64, 64, 14
kernel = 3
pad = 1
stride = 1

# %% [markdown]
# ## Describe the computation
#
# The padded input ``Apad`` is ``A`` surrounded by a border of zeros: ``te.tir.if_then_else``
# picks ``A``'s element inside and ``0.0`` on the border, where ``te.tir.all`` combines the
# four bound checks. The convolution ``B`` sums over the filter window (``ry``, ``rx``) and the
# input channels (``rc``).

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
# ## The numpy reference
#
# numpy pads the input, then adds up one ``tensordot`` per filter position.

# %%
rng = np.random.default_rng(0)
a_np = rng.uniform(size=(in_size, in_size, in_channel, batch)).astype("float32")
w_np = rng.uniform(size=(kernel, kernel, in_channel, out_channel)).astype("float32")


def conv2d_hwcn(a, w):
    """The same convolution in numpy (float64 accumulation)."""
    apad = np.pad(a.astype("float64"), ((pad, pad), (pad, pad), (0, 0), (0, 0)))
    out = np.zeros((out_size, out_size, out_channel, batch))
    span = (out_size - 1) * stride + 1
    for dy in range(kernel):
        for dx in range(kernel):
            window = apad[dy:dy + span:stride, dx:dx + span:stride]       # (y, x, c, n)
            out += np.einsum("yxcn,cf->yxfn", window, w[dy, dx])
    return out.astype("float32")


b_ref = conv2d_hwcn(a_np, w_np)


def check(s, label):
    """Build the schedule, compare with numpy and print the run time."""
    func = te.build(s, [A, W, B], target="llvm", name="conv2d")
    b = np.zeros(b_ref.shape, "float32")
    func(a_np, w_np, b)
    te.testing.assert_allclose(b, b_ref, rtol=1e-4)
    timer = func.time_evaluator(func.entry_name, te.cpu(0), number=2 if SMALL else 5, repeat=3)
    median = timer(a_np, w_np, b).median
    flops = 2 * out_size * out_size * out_channel * batch * kernel * kernel * in_channel
    print(f"{label}: {median * 1e3:.3f} ms, {flops / median / 1e9:.2f} GFLOP/s")


# %% [markdown]
# ## The default schedule
#
# Every stage is computed at the root: first the whole padded copy of the input, then the
# convolution.

# %%
s = te.create_schedule(B.op)
print(te.lower(s, [A, W, B], name="conv2d"))
check(s, "default")

# %% [markdown]
# ## Inline the padding
#
# ``compute_inline`` substitutes ``Apad``'s expression into ``B``: no padded copy is stored,
# and the bound checks move into the convolution's inner loop.

# %%
s = te.create_schedule(B.op)
s[Apad].compute_inline()
print(te.lower(s, [A, W, B], name="conv2d"))
check(s, "padding inlined")

# %% [markdown]
# ## A tiled schedule
#
# The accumulation goes to a small local block with ``cache_write``: for one output pixel
# ``(yy, xx)``, a tile of ``tile_f`` output channels by ``tile_n`` batch elements. The block
# stays in registers while the reduction runs over ``rc``, ``ry`` and ``rx``, and its innermost
# axis, the batch, is vectorized. The pixels of the output are spread over the CPU's threads.

# %%
tile_f = 4
tile_n = 8

s = te.create_schedule(B.op)
s[Apad].compute_inline()
BL = s.cache_write(B, "local")

yy, xx, ff, nn = s[B].op.axis
fo, fi = s[B].split(ff, factor=tile_f)
no, ni = s[B].split(nn, factor=tile_n)
s[B].reorder(yy, xx, fo, no, fi, ni)
pixel = s[B].fuse(yy, xx)
s[B].parallel(pixel)
s[B].vectorize(ni)
s[BL].compute_at(s[B], no)

yl, xl, fl, nl = s[BL].op.axis
ryl, rxl, rcl = s[BL].op.reduce_axis
s[BL].reorder(rcl, ryl, rxl, yl, xl, fl, nl)
s[BL].unroll(fl)
s[BL].vectorize(nl)
print(te.lower(s, [A, W, B], name="conv2d"))
check(s, "tiled, vectorized, parallel")

# %% [markdown]
# On a GPU the same structure is bound to blocks and threads instead, and the tiles of the
# input and the filter are staged through shared memory with ``cache_read``.
