# %% [markdown]
# # How to optimize GEMM on CPU
#
# A port of TVM's "How to optimize GEMM on CPU" tutorial (by Jian Weng and Ruofei Yu) to
# tensorweave.
#
# A matrix multiplication ``C = A @ B`` of 1024x1024 float32 matrices is written once and then
# scheduled step by step, as in the tutorial: blocking for the cache, vectorization, loop
# permutation, array packing, a write cache and multi-core parallelism. After each step the
# loop nest is printed, the result is checked against numpy and the run time is measured.
#
# Set ``TW_TUTORIAL_SMALL=1`` to run with 128x128 matrices (the test suite does).

# %%
import os
import statistics
import timeit

import numpy

import te

SMALL = os.environ.get("TW_TUTORIAL_SMALL") == "1"

M = K = N = 128 if SMALL else 1024

dtype = "float32"

# The host CPU; a target such as "llvm -mcpu=core-avx2" would pick an instruction set.
target = "llvm"
dev = te.device(target, 0)

a = te.nd.array(numpy.random.rand(M, K).astype(dtype), dev)
b = te.nd.array(numpy.random.rand(K, N).astype(dtype), dev)

a_np, b_np = a.numpy(), b.numpy()
np_repeat = 10 if SMALL else 20
np_running_times = timeit.repeat(lambda: numpy.dot(a_np, b_np), number=np_repeat, repeat=3)
print(f"Numpy running time: {statistics.median(np_running_times) / np_repeat:f}")

answer = numpy.dot(a_np, b_np)


def evaluate(s, args, label, number, repeat=3):
    """Build ``s``, check the product against numpy and print the median run time."""
    func = te.build(s, args, target=target, name="mmult")
    c = te.nd.array(numpy.zeros((M, N), dtype=dtype), dev)
    func(a, b, c)
    te.testing.assert_allclose(c.numpy(), answer, rtol=1e-5)
    evaluator = func.time_evaluator(func.entry_name, dev, number=number, repeat=repeat)
    print(f"{label}: {evaluator(a, b, c).median:f}")
    return func


# %% [markdown]
# ## The algorithm
#
# ``C[m, n]`` is the sum over ``k`` of ``A[m, k] * B[k, n]``.

# %%
k = te.reduce_axis((0, K), "k")
A = te.placeholder((M, K), name="A")
B = te.placeholder((K, N), name="B")
C = te.compute((M, N), lambda m, n: te.sum(A[m, k] * B[k, n], axis=k), name="C")

# %% [markdown]
# ## Baseline
#
# The default schedule is the textbook triple loop.

# %%
s = te.create_schedule(C.op)
print(te.lower(s, [A, B, C], name="mmult"))
evaluate(s, [A, B, C], "Baseline", number=1, repeat=1)

# %% [markdown]
# ## Blocking
#
# The baseline walks down a column of ``B`` for every element of ``C``, which uses the cache
# badly. Tiling ``C`` into 32x32 blocks keeps a block of ``A``'s rows and ``B``'s columns in
# the cache while the block is computed. The reduction is split by 4 too; the inner part
# ``ki`` is placed above the block loops.

# %%
bn = 32
kfactor = 4
s = te.create_schedule(C.op)

mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
(kaxis,) = s[C].op.reduce_axis
ko, ki = s[C].split(kaxis, factor=kfactor)

# the reduction loops go outside the loops over the block
s[C].reorder(mo, no, ko, ki, mi, ni)

print(te.lower(s, [A, B, C], name="mmult"))
evaluate(s, [A, B, C], "Opt1 (blocking)", number=1)

# %% [markdown]
# ## Vectorization
#
# The innermost loop ``ni`` walks along rows of ``B`` and ``C``, contiguous in memory: a good
# axis for SIMD instructions. ``vectorize`` turns it into vector operations.

# %%
s = te.create_schedule(C.op)
mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
(kaxis,) = s[C].op.reduce_axis
ko, ki = s[C].split(kaxis, factor=kfactor)

s[C].reorder(mo, no, ko, ki, mi, ni)

s[C].vectorize(ni)

print(te.lower(s, [A, B, C], name="mmult"))
evaluate(s, [A, B, C], "Opt2 (vectorization)", number=1)

# %% [markdown]
# ## Loop permutation
#
# In the loop order above, the inner loops ``mi, ni`` touch a whole 32x32 block of ``C`` for
# every value of ``ki``. Moving ``ki`` inside ``mi`` keeps one row of ``C`` in use while ``k``
# runs, and reads ``A[mi, k]`` contiguously.

# %%
s = te.create_schedule(C.op)
mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
(kaxis,) = s[C].op.reduce_axis
ko, ki = s[C].split(kaxis, factor=kfactor)

s[C].reorder(mo, no, ko, mi, ki, ni)
s[C].vectorize(ni)

print(te.lower(s, [A, B, C], name="mmult"))
evaluate(s, [A, B, C], "Opt3 (loop permutation)", number=5)

# %% [markdown]
# ## Array packing
#
# For fixed ``ko``, the inner loops read ``B`` in 32-element pieces of rows that are ``N``
# floats apart: every ``k`` step jumps to another part of memory. Packing ``B`` into the
# layout ``[N / bn][K][bn]`` first makes those reads sequential. ``packedB`` is a stage of its
# own, with its own loops (vectorized and parallel here).

# %%
# the algorithm changes: C reads B through its packed copy
packedB = te.compute(
    (N // bn, K, bn), lambda bigN, k, littleN: B[k, bigN * bn + littleN], name="packedB"
)
C = te.compute(
    (M, N),
    lambda m, n: te.sum(A[m, k] * packedB[n // bn, k, te.tir.indexmod(n, bn)], axis=k),
    name="C",
)

s = te.create_schedule(C.op)

mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
(kaxis,) = s[C].op.reduce_axis
ko, ki = s[C].split(kaxis, factor=kfactor)

s[C].reorder(mo, no, ko, mi, ki, ni)
s[C].vectorize(ni)

bigN, _, littleN = s[packedB].op.axis
s[packedB].vectorize(littleN)
s[packedB].parallel(bigN)

print(te.lower(s, [A, B, C], name="mmult"))
evaluate(s, [A, B, C], "Opt4 (array packing)", number=5)

# %% [markdown]
# ## Write cache for blocks
#
# Each 32x32 block of ``C`` is still written back to memory on every step of ``ko``.
# ``cache_write`` accumulates a block in a small buffer ``C.global`` instead, computed at the
# block loop ``no`` (``compute_at``), and copies it to ``C`` once the block is done. The
# reduction loop ``ki`` is unrolled.

# %%
s = te.create_schedule(C.op)

CC = s.cache_write(C, "global")

mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)

# one block of the cache per iteration of no
s[CC].compute_at(s[C], no)

mc, nc = s[CC].op.axis

(kaxis,) = s[CC].op.reduce_axis
ko, ki = s[CC].split(kaxis, factor=kfactor)
s[CC].reorder(ko, mc, ki, nc)
s[CC].vectorize(nc)

# four copies of the update per ko step: no loop branch, and independent work for the CPU
s[CC].unroll(ki)

bigN, _, littleN = s[packedB].op.axis
s[packedB].vectorize(littleN)
s[packedB].parallel(bigN)

print(te.lower(s, [A, B, C], name="mmult"))
evaluate(s, [A, B, C], "Opt5 (write cache)", number=5)

# %% [markdown]
# ## Parallel
#
# Finally the blocks of rows are spread over the CPU's threads.

# %%
s = te.create_schedule(C.op)

CC = s.cache_write(C, "global")

mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)

s[CC].compute_at(s[C], no)

mc, nc = s[CC].op.axis

(kaxis,) = s[CC].op.reduce_axis
ko, ki = s[CC].split(kaxis, factor=kfactor)
s[CC].reorder(ko, mc, ki, nc)
s[CC].vectorize(nc)
s[CC].unroll(ki)

s[C].parallel(mo)

bigN, _, littleN = s[packedB].op.axis
s[packedB].vectorize(littleN)
s[packedB].parallel(bigN)

print(te.lower(s, [A, B, C], name="mmult"))
evaluate(s, [A, B, C], "Opt6 (parallel)", number=5)

# %% [markdown]
# ## Summary
#
# Six schedule steps on an unchanged algorithm: blocking, vectorization, loop permutation,
# array packing, a write cache and parallelism. ``benchmarks/gemm_ladder.py`` measures the
# same ladder with more repeats and compares each step with numpy.
