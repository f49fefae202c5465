"""Misuses of nn.spconv: indices outside the spatial shape or the batch, repeated sites, an
indice_key that names the wrong rulebook, features of the wrong width or count. Each raises a
clear error before any kernel runs."""
import numpy as np
import pytest

import nn
import nn.spconv as sp
from nn.functions.base import kernel_calls


def _tensor(idx, channels=4, shape=(6, 6, 6), batch_size=2):
    idx = np.asarray(idx, np.int32)
    feats = nn.tensor(np.ones((idx.shape[0], channels), "float32"))
    return sp.SparseConvTensor(feats, idx, list(shape), batch_size)


GOOD = [[0, 1, 1, 1], [1, 2, 3, 4], [0, 5, 5, 5]]


def _refused(fn, match, error=ValueError):
    before = sum(kernel_calls.values())
    with pytest.raises(error, match=match):
        fn()
    assert sum(kernel_calls.values()) == before, "a kernel ran before the error"


@pytest.mark.parametrize("layer", [
    lambda: sp.SubMConv3d(4, 2, 3), lambda: sp.SparseConv3d(4, 2, 3, stride=2),
    lambda: sp.SparseMaxPool3d(2)])
def test_coordinate_outside_the_spatial_shape(layer):
    x = _tensor(GOOD + [[1, 0, 6, 0]])
    _refused(lambda: layer()(x), r"coordinate 6 of spatial dimension 1 at row 3 is outside "
                                 r"the spatial shape \[6, 6, 6\]")
    _refused(lambda: layer()(_tensor(GOOD + [[1, -1, 0, 0]])), "coordinate -1 of spatial "
                                                              "dimension 0")
    _refused(x.dense, "outside the spatial shape")


def test_batch_index_outside_batch_size():
    x = _tensor(GOOD + [[2, 0, 0, 0]])
    _refused(lambda: sp.SubMConv3d(4, 2, 3)(x), r"batch index 2 at row 3 is outside "
                                                r"\[0, batch_size=2\)")
    _refused(x.dense, "batch index 2")


def test_duplicate_sites():
    x = _tensor(GOOD + [[1, 2, 3, 4]])
    _refused(lambda: sp.SparseConv3d(4, 2, 3)(x), r"rows 1 and 3 are the same site "
                                                  r"\[1, 2, 3, 4\]")
    _refused(x.dense, "the same site")


def test_wrong_feature_width_and_count():
    x = _tensor(GOOD, channels=3)
    _refused(lambda: sp.SubMConv3d(4, 2, 3)(x), "the input has 3 feature channels, the layer "
                                                "expects in_channels=4")
    with pytest.raises(ValueError, match="features have 2 rows but indices 3"):
        sp.SparseConvTensor(nn.tensor(np.ones((2, 4), "float32")), np.array(GOOD, np.int32),
                            [6, 6, 6], 2)
    with pytest.raises(ValueError, match=r"indices must have shape \(N, 4\)"):
        sp.SparseConvTensor(nn.tensor(np.ones((3, 4), "float32")),
                            np.array(GOOD, np.int32)[:, :3], [6, 6, 6], 2)
    with pytest.raises(ValueError, match="replace_feature: expected \\(3, C\\)"):
        x.replace_feature(nn.tensor(np.ones((2, 3), "float32")))
    _refused(lambda: sp.SubMConv2d(3, 2, 3)(x), "expected 2 spatial dimensions")


def test_mismatched_indice_key():
    x = _tensor(GOOD)
    _refused(lambda: sp.SparseInverseConv3d(4, 2, 3, indice_key="nope")(x),
             "indice_key 'nope' is not in the input's indice_dict")
    y = sp.SubMConv3d(4, 4, 3, indice_key="s")(x)
    _refused(lambda: sp.SparseInverseConv3d(4, 2, 3, indice_key="s")(y),
             "names a submanifold convolution")
    _refused(lambda: sp.SubMConv3d(4, 4, 5, indice_key="s")(y),
             "must have the same kernel_size and dilation")
    _refused(lambda: sp.SparseConv3d(4, 4, 3, indice_key="s")(y),
             "already holds the rulebook of a subm layer")
    z = sp.SparseConv3d(4, 4, 3, stride=2, padding=1, indice_key="d")(x)
    _refused(lambda: sp.SparseInverseConv3d(4, 2, 2, indice_key="d")(z),
             r"must have its convolution's kernel_size \[3, 3, 3\]")
    wrong = x.replace_feature(x.features)
    wrong.indice_dict = z.indice_dict
    _refused(lambda: sp.SparseInverseConv3d(4, 2, 3, indice_key="d")(wrong),
             "is not the output of that convolution")
    other = _tensor([[0, 1, 1, 1]])
    other.indice_dict = y.indice_dict
    _refused(lambda: sp.SubMConv3d(4, 4, 3, indice_key="s")(other),
             "must see the same sites")


def test_bad_layer_arguments():
    with pytest.raises(ValueError, match="odd kernel sizes"):
        sp.SubMConv3d(4, 4, 2)
    with pytest.raises(ValueError, match="kernel_size must be an int or 3 ints"):
        sp.SparseConv3d(4, 4, [3, 3])
    with pytest.raises(ValueError, match="batch_size must be positive"):
        _tensor(GOOD, batch_size=0)
    with pytest.raises(TypeError, match="expects a SparseConvTensor"):
        sp.SubMConv3d(4, 4, 3)(nn.tensor(np.ones((3, 4), "float32")))
