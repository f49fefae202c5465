"""Misuses of te.gradient and Function.from_te: each raises a clear error naming the tensor."""
import numpy as np
import pytest

import nn
import te
from te.expr import Call
from te.tensor import TEError


def _square(name="B"):
    A = te.placeholder((4,), name="A")
    return A, te.compute((4,), lambda i: A[i] * A[i], name=name)


def test_input_not_in_the_graph():
    A, B = _square()
    Z = te.placeholder((4,), name="Z")
    with pytest.raises(TEError, match="input Z is not used by output B"):
        te.gradient(B, [A, Z])


def test_head_with_the_wrong_shape():
    A, B = _square()
    with pytest.raises(TEError, match=r"head H has shape \[3\].*shape \[4\] of output B"):
        te.gradient(B, A, te.placeholder((3,), name="H"))
    with pytest.raises(TEError, match="head H has dtype int32"):
        te.gradient(B, A, te.placeholder((4,), "int32", name="H"))
    with pytest.raises(TEError, match="head must be a te.Tensor"):
        te.gradient(B, A, np.ones(4))


def test_several_outputs_need_one_head_each():
    A, B = _square()
    D = te.compute((4,), lambda i: A[i] + 1.0, name="D")
    with pytest.raises(TEError, match="2 outputs need a list of as many heads"):
        te.gradient([B, D], A, te.placeholder((4,), name="H"))
    with pytest.raises(TEError, match="heads HB and HD have different prefixes"):
        te.gradient([B, D], A, [te.placeholder((3, 4), name="HB"),
                                te.placeholder((2, 4), name="HD")])


def test_integer_output_and_integer_input():
    A = te.placeholder((4,), name="A")
    I = te.compute((4,), lambda i: A[i].astype("int32"), name="I")
    with pytest.raises(TEError, match="output I has dtype int32"):
        te.gradient(I, A)
    K = te.placeholder((4,), "int32", name="K")
    B = te.compute((4,), lambda i: A[i] * K[i].astype("float32"), name="B")
    with pytest.raises(TEError, match="input K has dtype int32"):
        te.gradient(B, [A, K])
    with pytest.raises(TEError, match="inputs must be te.Tensors"):
        te.gradient(B, ["A"])


def test_reducer_without_a_known_derivative():
    A = te.placeholder((4, 5), name="A")
    k = te.reduce_axis((0, 5), "k")
    odd = te.comm_reducer(lambda x, y: x * y + x, lambda t: te.const(0, t), name="odd")
    B = te.compute((4,), lambda i: odd(A[i, k], axis=k), name="B")
    with pytest.raises(TEError, match="reducer 'odd' in compute B"):
        te.gradient(B, A)
    argmax = te.comm_reducer(
        lambda x, y: (te.select(x[1] >= y[1], x[0], y[0]), te.max(x[1], y[1])),
        lambda t0, t1: (te.const(-1, t0), te.min_value(t1)), name="argmax")
    m = te.reduce_axis((0, 5), "m")
    idx, val = te.compute((4,), lambda i: argmax((m, A[i, m]), axis=m), name="AM")
    with pytest.raises(TEError, match="compute AM is a tuple reduction"):
        te.gradient(val, A)


def test_intrinsic_without_a_derivative():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: Call("my_special", (A[i],), "float32"), name="B")
    with pytest.raises(TEError, match="intrinsic 'my_special' in compute B"):
        te.gradient(B, A)


def test_extern_stage_on_the_path():
    te.register_func("test.errors.autodiff.copy", lambda x, y: y.copyfrom(x.numpy()),
                     override=True)
    A = te.placeholder((4,), name="A")
    E = te.extern((4,), [A], lambda ins, outs: te.call_packed("test.errors.autodiff.copy",
                                                              ins[0], outs[0]), name="E")
    B = te.compute((4,), lambda i: E[i] * 2.0, name="B")
    with pytest.raises(TEError, match="cannot differentiate through E, an output of ExternOp"):
        te.gradient(B, A)


def test_from_te_arguments_and_results():
    def declare(x):
        return te.compute(x.shape, lambda i: x[i] * 2.0, name="twice")
    f = nn.autograd.Function.from_te(declare)
    with pytest.raises(TypeError, match="Twice: argument 1 is a float"):
        nn.autograd.Function.from_te(lambda x, y: x, name="Twice")(nn.ones(2), 2.0)
    with pytest.raises(TypeError, match="must return te.compute tensors; output 0"):
        nn.autograd.Function.from_te(lambda x: x, name="Same")(nn.ones(2))
    with pytest.raises(TypeError, match="expected a function"):
        nn.autograd.Function.from_te(3)
    assert f(nn.ones(2)).tolist() == [2.0, 2.0]
