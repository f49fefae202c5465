"""Mistakes met while porting TVM's tensor-expression tutorials: each names the reducer, axis
or argument at fault and says what to write instead."""
import numpy as np
import pytest

import te


@pytest.fixture
def A():
    return te.placeholder((8, 8), name="A")


def _argmax_like(fidentity):
    return te.comm_reducer(lambda x, y: (te.tir.Select(x[1] >= y[1], x[0], y[0]),
                                         te.max(x[1], y[1])), fidentity, name="argmax")


def test_tuple_reducer_identity_returns_one_value(A):
    argmax = _argmax_like(lambda t0, t1: te.min_value(t1))
    k = te.reduce_axis((0, 8), name="k")
    with pytest.raises(te.TEError, match=r"te\.argmax: the identity function must return a "
                                         r"tuple of 2 values, one per reduced value; "
                                         r"it returned"):
        te.compute((8,), lambda i: argmax((A[i, k], A[i, k]), axis=k), name="T")


def test_tuple_reducer_combine_returns_too_few_values(A):
    pair = te.comm_reducer(lambda x, y: (x[0] + y[0],),
                           lambda t0, t1: (te.const(0, t0), te.const(0, t1)), name="pair")
    k = te.reduce_axis((0, 8), name="k")
    with pytest.raises(te.TEError, match=r"te\.pair: the combine function must return a tuple "
                                         r"of 2 values"):
        te.compute((8,), lambda i: pair((A[i, k], A[i, k]), axis=k), name="T")


def test_single_reducer_identity_returns_a_tuple(A):
    mysum = te.comm_reducer(lambda x, y: x + y,
                            lambda t: (te.const(0, t), te.const(0, t)), name="mysum")
    k = te.reduce_axis((0, 8), name="k")
    with pytest.raises(te.TEError, match=r"te\.mysum: the identity function must return one "
                                         r"value, not a tuple"):
        te.compute((8,), lambda i: mysum(A[i, k], axis=k), name="B")


def test_axis_given_as_a_shape_entry(A):
    k = te.reduce_axis((0, 8), name="k")
    with pytest.raises(te.TEError, match=r"compute D: shape entry 0 is the axis k, a loop "
                                         r"variable; give a size \(its extent is "
                                         r"k\.dom\.extent\)"):
        te.compute((k,), lambda i: A[i, i], name="D")


def test_non_integral_float_shape_is_refused():
    with pytest.raises(te.TEError, match=r"compute P: shape entry 0 is 2\.5 of dtype float32; "
                                         r"shapes must be integers"):
        te.compute((5 / 2,), lambda i: i, name="P")


@pytest.mark.parametrize("fn", [te.popcount, te.clz], ids=["popcount", "clz"])
def test_bit_counts_refuse_floats(A, fn):
    with pytest.raises(TypeError, match=rf"te\.{fn.__name__} needs an integer argument; "
                                        r"A\[0, 0\] has dtype float32"):
        fn(A[0, 0])


@pytest.mark.parametrize("dom", [(0, 2.5), 2.5, (0.5, 3)])
def test_reduce_axis_range_must_be_integers(dom):
    with pytest.raises(te.TEError, match=r"reduce_axis k: the range .* must be integers or "
                                         r"integer te.var"):
        te.reduce_axis(dom, name="k")
    assert te.reduce_axis((0, 4.0), name="k").dom.extent.value == 4     # whole floats: N / bn


def test_nd_arrays_and_devices():
    with pytest.raises(ValueError, match=r"te.nd.empty: shape \(-2,\) must be ints >= 0"):
        te.nd.empty((-2,))
    with pytest.raises(TypeError, match=r"te.nd.empty: unknown dtype 'floaty'"):
        te.nd.empty((2,), "floaty")
    x = te.nd.empty((3,))
    for source in (np.ones(2), np.ones(1)):
        with pytest.raises(ValueError, match=r"copyfrom: source shape \(\d,\) differs from "
                                             r"this array's \(3,\)"):
            x.copyfrom(source)
    x[:] = np.arange(3)
    np.testing.assert_array_equal(x.numpy(), [0, 1, 2])
    with pytest.raises(ValueError, match=r"unknown device 'tpu': use 'cpu' \(te.cpu\(0\)\) or "
                                         r"'cuda'"):
        te.device("tpu", 0)
    assert te.cpu(0).exist and te.nd.array([1, 2], "cpu").device.kind == "cpu"
