"""te.topi refuses bad shapes, axes and arguments with an error that names the operator and
the argument (and says what to give instead)."""
import pytest

import te
from te import topi


def P(*shape, dtype="float32", name="A"):
    return te.placeholder(shape, dtype, name=name)


def test_shapes_that_do_not_broadcast():
    with pytest.raises(ValueError, match=r"topi\.add\(lhs, rhs\): shapes \[\(3, 4\), \(5,\)\] "
                                         r"do not broadcast \(axis 1 has sizes \['4', '5'\]\)"):
        topi.add(P(3, 4), P(5, name="B"))
    with pytest.raises(ValueError, match=r"topi\.multiply\(lhs, rhs\): shapes .* do not broadcast"):
        P(3, 4) * P(2, 1, 3, name="B")


def test_operand_of_the_wrong_kind():
    with pytest.raises(te.TEError, match=r"topi\.multiply: the right operand is str 'x'"):
        topi.multiply(P(3), "x")
    with pytest.raises(te.TEError, match=r"topi\.exp: x must be a te tensor"):
        topi.exp(3.0)


def test_reduction_axis_out_of_range_or_repeated():
    with pytest.raises(ValueError, match=r"topi\.sum\(data, axis=3\): axis 3 is out of range "
                                         r"for 2 dimensions"):
        topi.sum(P(3, 4), axis=3)
    with pytest.raises(ValueError, match=r"axis \(1, -1\) repeats an axis"):
        topi.max(P(3, 4), axis=(1, -1))
    with pytest.raises(ValueError, match=r"axis 'a' must be an int"):
        topi.min(P(3, 4), axis=("a",))
    with pytest.raises(ValueError, match=r"topi\.argmax.*give one axis"):
        topi.argmax(P(3, 4), axis=(0, 1))


def test_transform_arguments():
    with pytest.raises(ValueError, match=r"topi\.reshape: newshape \(5, 2\) holds 10 elements "
                                         r"but a of shape \(3, 4\) has 12"):
        topi.reshape(P(3, 4), (5, 2))
    with pytest.raises(ValueError, match=r"topi\.reshape: cannot infer the -1"):
        topi.reshape(P(3, 4), (5, -1))
    with pytest.raises(ValueError, match=r"topi\.transpose: axes \(0, 0\) is not a permutation"):
        topi.transpose(P(3, 4), (0, 0))
    with pytest.raises(ValueError, match=r"topi\.concatenate: a_tuple\[1\] has size 5 in "
                                         r"dimension 0 but a_tuple\[0\] has 3; only axis 1"):
        topi.concatenate((P(3, 4), P(5, 4, name="B")), axis=1)
    with pytest.raises(ValueError, match=r"topi\.concatenate: axis=2 is out of range"):
        topi.concatenate((P(3, 4), P(3, 4, name="B")), axis=2)
    with pytest.raises(ValueError, match=r"topi\.split: indices_or_sections=3 does not divide "
                                         r"axis 1 of size 4"):
        topi.split(P(3, 4), 3, axis=1)
    with pytest.raises(ValueError, match=r"topi\.take: mode must be 'clip', 'wrap' or 'fast'"):
        topi.take(P(3, 4), P(2, dtype="int32", name="I"), axis=0, mode="raise")
    with pytest.raises(te.TEError, match=r"topi\.take: indices has dtype float32"):
        topi.take(P(3, 4), P(2, name="I"), axis=0)
    with pytest.raises(ValueError, match=r"topi\.squeeze: axis 1 of a has size 4, not 1"):
        topi.squeeze(P(1, 4), axis=1)


def test_nn_shapes():
    X, W = P(1, 3, 8, 8, name="X"), P(4, 2, 3, 3, name="W")
    with pytest.raises(ValueError, match=r"topi\.nn\.conv2d_nchw: Filter W has 2 input "
                                         r"channels \(dimension 1\) but Input X has 3"):
        topi.nn.conv2d_nchw(X, W, 1, 1, 1)
    with pytest.raises(ValueError, match=r"topi\.nn\.conv2d_nchw: Input X must be 4-D"):
        topi.nn.conv2d_nchw(P(3, 8, 8, name="X"), W, 1, 1, 1)
    with pytest.raises(ValueError, match=r"topi\.nn\.conv2d_nchw: stride must be a positive "
                                         r"int"):
        topi.nn.conv2d_nchw(X, P(4, 3, 3, 3, name="W"), 0, 1, 1)
    with pytest.raises(ValueError, match=r"the output height would be -2: the dilated kernel "
                                         r"\(11x11\) is larger"):
        topi.nn.conv2d_nchw(X, P(4, 3, 11, 11, name="W"), 1, 0, 1)
    with pytest.raises(ValueError, match=r"topi\.nn\.dense: data D has 7 features \(dimension "
                                         r"1\) but weight W has 6"):
        topi.nn.dense(P(2, 7, name="D"), P(3, 6, name="W"))
    with pytest.raises(ValueError, match=r"topi\.nn\.batch_matmul: the batch sizes of tensor_a "
                                         r"\(2\) and tensor_b \(3\) differ"):
        topi.nn.batch_matmul(P(2, 4, 5), P(3, 6, 5, name="B"))
    with pytest.raises(ValueError, match=r"topi\.nn\.pool2d: pool_type must be 'max' or 'avg'"):
        topi.nn.pool2d(X, (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), "sum")
    with pytest.raises(ValueError, match=r"topi\.nn\.pool2d: layout 'NHWC' is not supported"):
        topi.nn.pool2d(X, (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), "max", layout="NHWC")
    with pytest.raises(ValueError, match=r"topi\.nn\.pool2d: padding must be 4 ints >= 0"):
        topi.nn.pool2d(X, (2, 2), (2, 2), (1, 1), (1, 1), "max")
    with pytest.raises(ValueError, match=r"topi\.nn\.pad: pad_before has 2 entries but data X "
                                         r"has 4 dimensions"):
        topi.nn.pad(X, (1, 1))
    with pytest.raises(ValueError, match=r"topi\.nn\.softmax: x A is 0-d"):
        topi.nn.softmax(P())
    with pytest.raises(ValueError, match=r"softmax: axis 2 is out of range for 2 dimensions"):
        topi.nn.softmax(P(3, 4), axis=2)


def test_schedule_of_something_else():
    with pytest.raises(te.TEError, match=r"a schedule takes the output tensors of the "
                                         r"operators, got str"):
        topi.x86.schedule_injective("C")
