# Ported from TVM v0.14 tests/python/unittest/test_te_autodiff.py (Apache-2.0, the ASF) with
# renames only (tvm / tvm.te -> te, tvm.tir.const -> te.tir.const, tvm.build -> te.build,
# tvm.nd -> te.nd, tvm.testing.assert_allclose -> numpy's, tvm.testing.check_numerical_grads
# -> the local finite-difference checker below); the adaptations are marked "ADAPTED:".
import pytest
import numpy as np

import te
from te import topi
from te.topi.utils import get_const_tuple


def check_numerical_grads(function, input_values, grad_values, delta=1e-3, atol=1e-2,
                          rtol=0.1):
    """ADAPTED: tvm.testing.check_numerical_grads, written anew: central differences of the
    scalar ``function`` at ``input_values``, compared with ``grad_values`` as TVM does (the
    distance within ``atol * sqrt(size) + rtol * |numerical gradient|``)."""
    for k, grad in enumerate(grad_values):
        x = input_values[k]
        assert grad.shape == x.shape, f"gradient {k} has shape {grad.shape}, not {x.shape}"
        ngrad = np.zeros(grad.shape, "float64")
        for j in range(x.size):
            values = [v.copy() for v in input_values]
            values[k].reshape(-1)[j] += delta
            plus = function(*values)
            values[k].reshape(-1)[j] -= 2 * delta
            minus = function(*values)
            ngrad.reshape(-1)[j] = (plus - minus) / (2 * delta)
        dist = np.sqrt(np.sum((ngrad - grad) ** 2))
        norm = np.sqrt(np.sum(ngrad ** 2))
        assert np.isfinite(dist) and np.isfinite(norm), f"NaN or infinity wrt input {k}"
        assert dist <= atol * np.sqrt(grad.size) + rtol * norm, (
            f"gradient wrt input {k} differs from the numerical one: distance {dist}, "
            f"norm {norm}\nanalytical {grad}\nnumerical {ngrad}")


def check_grad(
    out, inputs, args=[], data_range=(-10, 10), desired_grads=None, assert_no_jacobian=True
):
    inputs = inputs if isinstance(inputs, list) else [inputs]

    def check_device(device, host="llvm"):
        dev = te.device(device, 0)  # noqa: F841  (ADAPTED: no device_enabled check; CPU only)

        sout = te.create_schedule(out.op)
        mout = te.build(sout, [out] + inputs + args)
        out_shape = get_const_tuple(out.shape)

        l, h = data_range
        input_data = [
            te.nd.array(
                np.random.uniform(l, h, size=get_const_tuple(input.shape)).astype(input.dtype)
            )
            for input in inputs
        ]
        arg_vals = [
            te.nd.array(np.random.uniform(l, h, size=get_const_tuple(arg.shape)).astype(arg.dtype))
            for arg in args
        ]

        ones = topi.full_like(out, 1.0)
        # we provide head to sum and reduce the output dimension,
        # which equals to grad(out.sum(), inputs)
        grads = te.gradient(out, inputs, head=ones)
        grad_sched = te.create_schedule([grad.op for grad in grads])
        mgrad = te.build(grad_sched, list(grads) + inputs + args)
        if assert_no_jacobian:
            # TODO(yzhliu): it is better to visit the expression and do assertion
            lowered_ir = str(te.lower(grad_sched, list(grads) + inputs + args, simple_mode=True))
            assert "jacobian" not in lowered_ir, lowered_ir

        grad_data = [te.nd.empty(get_const_tuple(i.shape), g.dtype) for i, g in zip(inputs, grads)]

        mgrad(*grad_data, *input_data, *arg_vals)
        g_res = [g.numpy() for g in grad_data]

        if desired_grads:
            assert isinstance(desired_grads, list)
            for actual, desired in zip(g_res, desired_grads):
                np.testing.assert_allclose(actual, desired, rtol=0.1, atol=1e-2)
        else:

            def forward(*in_data):
                out_data = te.nd.empty(out_shape, out.dtype)
                mout(out_data, *[te.nd.array(d) for d in list(in_data)])
                return out_data.numpy().sum()

            check_numerical_grads(
                forward, [d.numpy() for d in input_data + arg_vals], g_res
            )

    check_device("cpu")


def test_basic_operation():
    np.random.seed(0)
    shape = (10, 10)
    x = te.var("x", dtype="float32")  # noqa: F841
    k = te.reduce_axis((0, 10), name="k")
    l = te.reduce_axis((0, 10), name="l")  # noqa: E741, F841
    A0 = te.placeholder(shape, name="A0")
    A1 = te.placeholder(shape, name="A1")
    zeros = np.zeros(shape)

    B = te.compute(shape, lambda i, j: A0[i, j], name="B")
    check_grad(B, [A0])

    B = te.compute(shape, lambda i, j: A0[i, j] + A1[i, j], name="B")
    check_grad(B, [A0, A1])

    B = te.compute(shape, lambda i, j: A0[i, j] + A0[j, i], name="B")
    check_grad(B, A0)

    B = te.compute(shape, lambda i, j: te.floor(A0[i, j]), name="B")
    check_grad(B, A0, desired_grads=[zeros])

    B = te.compute(shape, lambda i, j: te.ceil(A0[i, j]), name="B")
    check_grad(B, A0, desired_grads=[zeros])

    B = te.compute(shape, lambda i, j: te.trunc(A0[i, j]), name="B")
    check_grad(B, A0, desired_grads=[zeros])

    B = te.compute(shape, lambda i, j: te.round(A0[i, j]), name="B")
    check_grad(B, A0, desired_grads=[zeros])

    B = te.compute(shape, lambda i, j: A0[i, j] + te.exp(A0[j, i]), name="B")
    check_grad(B, A0)

    B = te.compute(shape, lambda i, j: te.log(0.1 + te.abs(A0[i, j] + te.exp(A0[j, i]))), name="B")
    check_grad(B, A0)

    B = te.compute(shape, lambda i, j: te.sigmoid(A0[i, j] * A0[i, j] * A0[j, i]), name="B")
    check_grad(B, A0)

    B = te.compute(shape, lambda i, j: te.tanh(A0[i, j] * A0[i, j] * A0[j, i]), name="B")
    check_grad(B, A0)

    B = te.compute(shape, lambda i, j: te.sqrt(A0[i, j] * A0[i, j] * A0[j, i]), name="B")
    check_grad(B, A0, data_range=(0.1, 10))

    B = te.compute(shape, lambda i, j: te.power(te.abs(A0[i, j]), A0[j, i]), name="B")
    check_grad(B, A0, data_range=(-4, 4))

    B = te.compute(shape, lambda i, j: A0[i, j] * A0[j, i], name="B")
    check_grad(B, A0)

    B = te.compute((10,), lambda i: te.sum(A0[i, k] * A0[k, i], axis=k), name="B")
    check_grad(B, A0)

    B = te.compute(shape, lambda i, j: te.sum(A0[i, k] * A0[k, i] + 5, axis=k), name="B")
    check_grad(B, A0)

    B = te.compute(shape, lambda i, j: te.max(A0[i, k] * A0[k, j] + 5, axis=k), name="B")
    check_grad(B, A0)

    B = te.compute(shape, lambda i, j: A0[i, j] * (A1[j, i] + A0[j, i]), name="B")
    check_grad(B, [A0, A1])

    B = te.compute(
        shape, lambda i, j: te.sum(A0[k, k] - A0[te.min(j + k, 9), j] * A0[i, k], axis=k), name="B"
    )
    check_grad(B, A0)

    def fcombine(x, y):
        return x * y

    def fidentity(t0):
        return te.tir.const(1, t0)

    prod = te.comm_reducer(fcombine, fidentity, name="prod")
    B = te.compute((10, 10), lambda i, j: prod(A0[i, k] + A0[k, i], axis=k), name="B")
    check_grad(B, A0)

    X = te.placeholder((10,), name="X")
    A = te.compute((10,), lambda i: X[i] + X[9 - i])
    B = te.compute((10,), lambda i: X[i] * X[9 - i])
    # ADAPTED: te.topi has no tensordot and no einsum; the two computes written out as TVM's
    # topi declares them (a contraction over the one axis to a 0-d tensor; the diagonal)
    r = te.reduce_axis((0, 10), name="r")
    Y = te.compute((), lambda: te.sum(A[r] * B[r], axis=r), name="T_tensordot")
    check_grad(Y, X)

    X = te.placeholder((3, 3), name="X")
    Y = te.compute((3,), lambda i: X[i, i], name="T_einsum")
    check_grad(Y, X)


@pytest.mark.slow
def test_topi():
    X = te.placeholder((1, 2, 4, 4), name="X")
    W = te.placeholder((5, 2, 3, 3), name="W")
    W1 = te.placeholder((2, 5, 3, 3), name="W1")
    W2 = te.placeholder((1,), name="W2")

    R = topi.nn.conv2d(X, W, 1, 1, 1)
    check_grad(R, [X, W])

    R1 = topi.nn.conv2d(topi.nn.relu(R), W1, 1, 0, 1)
    check_grad(R1, [X, W, W1])

    R = topi.broadcast_to(W2, (5, 2, 3, 3))
    check_grad(R, [W2])

    R = topi.nn.conv2d(X, topi.broadcast_to(W2, (5, 2, 3, 3)), 1, 1, 1)
    check_grad(R, [X, W2])

    R = topi.nn.pool2d(X, [2, 2], [1, 1], [2, 2], [0, 0, 0, 0], "avg")
    check_grad(R, X)

    R = topi.nn.pool2d(X, [2, 2], [1, 1], [2, 2], [0, 0, 0, 0], "max")
    check_grad(R, X)

    X = te.placeholder((1, 2, 5, 5), name="X")
    # ADAPTED: te.topi.reshape refuses a newshape with fewer elements than its input (TVM's
    # reads the first 32 of the 50 elements); that read, written out as TVM's reshape lowers it
    R = te.compute((1, 32), lambda i, j: X[0, (i * 32 + j) // 25, (i * 32 + j) // 5 % 5,
                                           (i * 32 + j) % 5], name="T_reshape")
    check_grad(R, [X])

    X = te.placeholder((1, 2, 5, 5), name="X")
    W = te.placeholder((2, 2, 3, 3), name="W")

    S = topi.reshape(X, (1, 50))
    check_grad(S, [X])

    R = X + topi.nn.conv2d(X + topi.nn.conv2d(X, W, 1, 1, 1), W, 1, 1, 1)
    check_grad(R, [X, W])

    S = topi.nn.softmax(topi.reshape(R, (1, 50)))
    check_grad(S, [X, W])

    S = topi.sigmoid(topi.reshape(R, (1, 50)))
    check_grad(S, [X, W])

    S = topi.tanh(topi.reshape(R, (1, 50)))
    check_grad(S, [X, W])

    S = topi.nn.log_softmax(topi.reshape(R, (1, 50)))
    check_grad(S, [X, W])
    check_grad(S, [W], [X])

    X = te.placeholder((1, 2, 3, 5), name="X")
    Y = te.placeholder((1, 2, 7, 5), name="Y")
    S = topi.concatenate((X, Y), 2)
    check_grad(S, [X, Y])

    X = te.placeholder((1, 2, 6, 5), name="X")
    (S, R) = topi.split(X, 2, 2)
    check_grad(S, [X])
    check_grad(R, [X])
    R1 = topi.concatenate((S, R), 2)
    check_grad(R1, [X])
    R2 = topi.concatenate((R, S), 2)
    check_grad(R2, [X])

    X = te.placeholder((4, 5), name="X")
    I = te.placeholder((100,), name="I", dtype="int32")  # noqa: E741
    R = topi.take(X, topi.abs(I))
    check_grad(R, [X], [I])

    W = te.placeholder((5, 5), name="W")
    exps = topi.exp(topi.nn.dense(X, W))
    sumexps = topi.sum(exps, axis=-1, keepdims=True)
    R = exps / sumexps
    check_grad(R, [X, W], data_range=(-1, 1))


@pytest.mark.slow
def test_stride_dilation():
    X = te.placeholder((1, 2, 10, 10), name="X")
    W = te.placeholder((2, 2, 1, 1), name="W")

    Y = topi.nn.conv2d(X, W, 1, 0, 1)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 2, 0, 1)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 3, 0, 1)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 1, 0, 2)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 2, 0, 2)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 3, 0, 2)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 1, 0, 3)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 2, 0, 3)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 3, 0, 3)
    check_grad(Y, [X, W])

    W = te.placeholder((2, 2, 2, 2), name="W")

    Y = topi.nn.conv2d(X, W, 1, 0, 1)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 2, 0, 1)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 3, 0, 1)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 1, 0, 2)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 2, 0, 2)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 3, 0, 2)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 1, 0, 3)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 2, 0, 3)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 3, 0, 3)
    check_grad(Y, [X, W])

    W = te.placeholder((2, 2, 3, 3), name="W")

    Y = topi.nn.conv2d(X, W, 1, 0, 1)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 2, 0, 1)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 3, 0, 1)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 1, 0, 2)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 2, 0, 2)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 3, 0, 2)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 1, 0, 3)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 2, 0, 3)
    check_grad(Y, [X, W])
    Y = topi.nn.conv2d(X, W, 3, 0, 3)
    check_grad(Y, [X, W])

    Y = topi.nn.pool2d(X, [1, 1], [1, 1], [1, 1], [0, 0, 0, 0], "max")
    check_grad(Y, [X])
    Y = topi.nn.pool2d(X, [1, 1], [1, 1], [2, 2], [0, 0, 0, 0], "max")
    check_grad(Y, [X])
    Y = topi.nn.pool2d(X, [1, 1], [1, 1], [3, 3], [0, 0, 0, 0], "max")
    check_grad(Y, [X])
    Y = topi.nn.pool2d(X, [2, 2], [1, 1], [1, 1], [0, 0, 0, 0], "max")
    check_grad(Y, [X])
    Y = topi.nn.pool2d(X, [2, 2], [1, 1], [2, 2], [0, 0, 0, 0], "max")
    check_grad(Y, [X])
    Y = topi.nn.pool2d(X, [2, 2], [1, 1], [3, 3], [0, 0, 0, 0], "max")
    check_grad(Y, [X])
    Y = topi.nn.pool2d(X, [3, 3], [1, 1], [1, 1], [0, 0, 0, 0], "max")
    check_grad(Y, [X])
    Y = topi.nn.pool2d(X, [3, 3], [1, 1], [2, 2], [0, 0, 0, 0], "max")
    check_grad(Y, [X])
    Y = topi.nn.pool2d(X, [3, 3], [1, 1], [3, 3], [0, 0, 0, 0], "max")
    check_grad(Y, [X])


# ADAPTED: TVM marks this test xfail (its te.gradient refused init=); here init= of te.sum is
# differentiated, so the test runs and passes.
def test_reduction_init():
    np.random.seed(0)
    shape = (10, 10)
    k = te.reduce_axis((0, 10), name="k")
    A0 = te.placeholder(shape, name="A0")

    B = te.compute((10,), lambda i: te.sum(A0[i, k] * A0[k, i], axis=k, init=0.0), name="B")
    check_grad(B, A0)


if __name__ == "__main__":
    test_basic_operation()
    test_topi()
    test_stride_dilation()
