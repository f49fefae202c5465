"""External Tensor Functions (TVM's tutorial, ported): stages computed by Python functions.

``te.extern`` declares tensors that an external function computes; ``te.call_packed`` names a
function registered with ``te.register_func``. The function receives ``te.nd.NDArray`` views of
the buffers (no copy). Extern results feed ordinary compute stages and the other way round.
Part 3 writes an extern stage's loop nest by hand with ``te.tir.ir_builder`` instead.
"""
import os

import numpy as np

import te

small = os.environ.get("TW_TUTORIAL_SMALL") == "1"

# 1. A matmul through numpy, as TVM's example does through cblas, followed by a bias add.
n, l, m = (16, 8, 12) if small else (1024, 128, 256)
A = te.placeholder((n, l), name="A")
B = te.placeholder((l, m), name="B")
bias = te.var("bias", dtype="float32")


@te.register_func("tutorial.matmul", override=True)
def matmul(a, b, c):
    c.copyfrom(a.numpy() @ b.numpy())


C = te.extern((n, m), [A, B], lambda ins, outs: te.call_packed(
    "tutorial.matmul", ins[0], ins[1], outs[0]), name="C")
D = te.compute(C.shape, lambda i, j: C[i, j] + bias, name="D")
s = te.create_schedule(D.op)
print(te.lower(s, [A, B, D, bias], name="matmul_add"))
f = te.build(s, [A, B, D, bias], name="matmul_add")
a = np.random.uniform(size=(n, l)).astype(A.dtype)
b = np.random.uniform(size=(l, m)).astype(B.dtype)
d = np.zeros((n, m), dtype=D.dtype)
f(a, b, d, 10.0)
np.testing.assert_allclose(d, a @ b + 10, rtol=1e-5)

# 2. Any Python function: add one, for any length n, and use the result in a compute.
nv = te.var("n")
X = te.placeholder((nv,), name="X")


@te.register_func("tvm.contrib.my_tvm_addone", override=True)
def my_tvm_addone(x, y):
    print(f"my_tvm_addone signatures: {type(x).__name__}, {type(y).__name__}")
    y.copyfrom(x.numpy() + 1)


Y = te.extern(X.shape, [X], lambda ins, outs: te.call_packed(
    "tvm.contrib.my_tvm_addone", ins[0], outs[0]), name="Y")
Z = te.compute(X.shape, lambda i: Y[i] * 2, name="Z")
s = te.create_schedule(Z.op)
print(te.lower(s, [X, Z], name="addone_twice"))
f = te.build(s, [X, Z], name="addone_twice")
x = te.nd.array(np.random.uniform(size=10).astype(X.dtype))
z = te.nd.array(np.zeros(10, dtype=Z.dtype))
f(x, z)
np.testing.assert_allclose(z.numpy(), (x.numpy() + 1) * 2, rtol=1e-5)

# 3. The loop nest written by hand with te.tir.ir_builder: no Python at run time, the stage
#    compiles with the rest of the function (a running sum along each row, rows in parallel).
rows, cols = te.var("rows"), te.var("cols")
R = te.placeholder((rows, cols), name="R")


def running_sum(ins, outs):
    ib = te.tir.ir_builder.create()
    r, out = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
    with ib.for_range(0, rows, name="i", kind="parallel") as i:
        out[i, 0] = r[i, 0]
        with ib.for_range(1, cols, name="j") as j:
            out[i, j] = out[i, j - 1] + r[i, j]
    return ib.get()


S = te.extern(R.shape, [R], running_sum, name="S")
s = te.create_schedule(S.op)
print(te.lower(s, [R, S], name="running_sum"))
f = te.build(s, [R, S], name="running_sum")
r = np.random.uniform(size=(4, 9)).astype(R.dtype)
out = np.zeros_like(r)
f(r, out)
np.testing.assert_allclose(out, np.cumsum(r, axis=1), rtol=1e-5)
print("ok")
