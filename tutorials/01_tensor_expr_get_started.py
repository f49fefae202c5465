# %% [markdown]
# # Getting started with tensor expressions
#
# A port of TVM's "Working with Operators Using Tensor Expression" tutorial to tensorweave.
#
# A tensor expression (TE) describes *what* to compute as a pure function of indices; a
# schedule says *how* to run it (loop order, threads, SIMD). We write a vector addition, print
# the loop nest the compiler makes of it, then schedule it for a multi-core CPU with SIMD lanes
# and time each version.
#
# Set ``TW_TUTORIAL_SMALL=1`` to run with small sizes (the test suite does).

# %%
import os
import timeit

import numpy as np

import te

SMALL = os.environ.get("TW_TUTORIAL_SMALL") == "1"

# %% [markdown]
# ## Describe the computation
#
# ``n`` is a symbolic size: the compiled function accepts vectors of any length and reads
# ``n`` from the arrays. ``te.placeholder`` declares the inputs and ``te.compute`` the output:
# element ``i`` of ``C`` is ``A[i] + B[i]``. Nothing is computed yet.

# %%
n = te.var("n")
A = te.placeholder((n,), name="A")
B = te.placeholder((n,), name="B")
C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")

# %% [markdown]
# ## The default schedule
#
# A schedule made with ``te.create_schedule`` runs every stage serially in row-major order.
# ``te.lower`` shows the loop nest it stands for.

# %%
s = te.create_schedule(C.op)
print(te.lower(s, [A, B, C], name="myadd"))

# %% [markdown]
# ## Compile and run
#
# ``te.build`` compiles the schedule for a target; ``"llvm"`` is the host CPU. The result is a
# callable module. Its arguments are arrays on a device: ``te.nd.array`` copies a numpy array
# to one (plain numpy arrays are accepted too).

# %%
tgt = te.target.Target(target="llvm", host="llvm")
fadd = te.build(s, [A, B, C], tgt, name="myadd")

dev = te.device(tgt.kind.name, 0)
size = 1024 if SMALL else 1 << 20
a = te.nd.array(np.random.uniform(size=size).astype(A.dtype), dev)
b = te.nd.array(np.random.uniform(size=size).astype(B.dtype), dev)
c = te.nd.array(np.zeros(size, dtype=C.dtype), dev)
fadd(a, b, c)
te.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())

# %% [markdown]
# ## Compare with numpy
#
# ``time_evaluator`` runs the function ``number`` times per repeat and reports the time of one
# run. numpy's vectorized addition is the baseline.

# %%
NUMBER = 10 if SMALL else 100
REPEAT = 3

np_a, np_b = a.numpy(), b.numpy()
np_time = min(timeit.repeat(lambda: np_a + np_b, number=NUMBER, repeat=REPEAT)) / NUMBER
print(f"numpy: {np_time:.3e} s")


def evaluate_addition(func, target, label, reference_time):
    """Check ``func`` against numpy and print its time next to numpy's."""
    dev = te.device(target.kind.name, 0)
    a = te.nd.array(np.random.uniform(size=size).astype(A.dtype), dev)
    b = te.nd.array(np.random.uniform(size=size).astype(B.dtype), dev)
    c = te.nd.array(np.zeros(size, dtype=C.dtype), dev)
    func(a, b, c)
    te.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
    evaluator = func.time_evaluator(func.entry_name, dev, number=NUMBER, repeat=REPEAT)
    median = evaluator(a, b, c).median
    print(f"{label}: {median:.3e} s ({reference_time / median:.2f}x numpy's speed)")
    return median


evaluate_addition(fadd, tgt, "naive", np_time)

# %% [markdown]
# ## Run the loop on all cores
#
# ``parallel`` spreads the iterations of an axis over the CPU's threads.

# %%
s[C].parallel(C.op.axis[0])
print(te.lower(s, [A, B, C], name="myadd"))
fadd_parallel = te.build(s, [A, B, C], tgt, name="myadd_parallel")
evaluate_addition(fadd_parallel, tgt, "parallel", np_time)

# %% [markdown]
# ## Use SIMD lanes
#
# Splitting the axis by a constant ``factor`` gives an inner loop of constant extent, which
# ``vectorize`` turns into vector instructions; the outer loop runs in parallel. Choose a
# factor that matches the CPU's vector width (4 floats for SSE, 8 for AVX2, 16 for AVX-512).
# The loop nest shows the guard that keeps the last, partial vector inside ``n``.

# %%
n = te.var("n")
A = te.placeholder((n,), name="A")
B = te.placeholder((n,), name="B")
C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")

s = te.create_schedule(C.op)
factor = 4
outer, inner = s[C].split(C.op.axis[0], factor=factor)
s[C].parallel(outer)
s[C].vectorize(inner)
print(te.lower(s, [A, B, C], name="myadd"))

fadd_vector = te.build(s, [A, B, C], tgt, name="myadd_vector")
evaluate_addition(fadd_vector, tgt, "vector", np_time)

# %% [markdown]
# ## Look at the generated code
#
# ``get_source`` returns the LLVM IR (``"ll"``, after LLVM's optimizations) or the machine
# assembly (``"asm"``). The target string may name a CPU: ``"llvm -mcpu=native"`` is the host.

# %%
fadd_native = te.build(s, [A, B, C], "llvm -mcpu=native", name="myadd_native")
evaluate_addition(fadd_native, tgt, "vector, -mcpu=native", np_time)
ll = fadd_vector.get_source("ll")
asm = fadd_vector.get_source("asm")
print("\n".join(ll.splitlines()[:20]))
print("...")
print("\n".join(line for line in asm.splitlines() if "add" in line and "ps" in line)[:400])
assert "define" in ll

# %% [markdown]
# TVM's tutorial goes on to save the module with ``export_library``, which tensorweave does
# not support yet: build the schedule again in each process instead. Tutorial 05 continues
# with a matrix multiplication scheduled step by step.
