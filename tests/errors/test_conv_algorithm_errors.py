"""conv2d_nchw's algorithm choice: a wrong algorithm name, Winograd asked for where it does not
apply, a Winograd tile that does not exist. Each message names the argument and what to use."""
import re

import pytest

import te
from nn.ops import cpu


def _conv(**kw):
    X = te.placeholder((1, 32, 12, 12), name="x")
    return cpu.conv2d_nchw(X, te.placeholder((32, 32, 3, 3), name="w"), padding=1, **kw)


def test_unknown_algorithm():
    with pytest.raises(ValueError, match=re.escape(
            "conv2d: algorithm must be 'direct', 'winograd' or None (choose), got 'fft'")):
        _conv(algorithm="fft")


def test_winograd_for_a_strided_convolution():
    with pytest.raises(ValueError, match=re.escape(
            "conv2d: algorithm='winograd' needs a 3x3 kernel, stride 1, dilation 1, groups 1 "
            "and at least 16 input and output channels; got kernel 3x3, stride (2, 2), "
            "dilation (1, 1), groups 1, 32 -> 32 channels (use algorithm='direct')")):
        _conv(algorithm="winograd", stride=2)


def test_winograd_with_few_channels():
    X = te.placeholder((1, 3, 12, 12), name="x")
    with pytest.raises(ValueError, match=r"got kernel 3x3, stride \(1, 1\), dilation \(1, 1\), "
                                         r"groups 1, 3 -> 8 channels \(use algorithm='direct'\)"):
        cpu.conv2d_nchw(X, te.placeholder((8, 3, 3, 3)), algorithm="winograd")


def test_winograd_tile_that_does_not_exist():
    with pytest.raises(ValueError, match=re.escape(
            "conv2d: Winograd tile must be one of [2, 4], got 3")):
        _conv(algorithm="winograd", tile=3)
