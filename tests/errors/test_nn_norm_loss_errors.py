"""One test per misuse of the normalization, dropout, loss and embedding layers: PyTorch's
messages, naming the shapes or values at fault."""
import numpy as np
import pytest

import nn
from nn import functional as F


def test_batch_norm_layers_check_input_rank():
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(nn.zeros(2, 3, 4, 5))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(3)(nn.zeros(2, 3, 4))


def test_batch_norm_one_value_per_channel():
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when "
                                         r"training, got input size \[1, 3\]"):
        nn.BatchNorm1d(3)(nn.zeros(1, 3))


def test_batch_norm_parameter_shape():
    with pytest.raises(RuntimeError, match=r"expected weight to have shape \[3\].*got \[4\]"):
        F.batch_norm(nn.zeros(2, 3), None, None, nn.ones(4), training=True)


def test_norm_parameter_dtype():
    with pytest.raises(RuntimeError, match="expected weight to have the input's dtype float64, "
                                           "but got float32"):
        F.group_norm(nn.zeros(2, 4, 3, dtype="float64"), 2, nn.ones(4))


def test_layer_norm_shape_mismatch():
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\], expected input with "
                                           r"shape \[\*, 5\], but got input of size\[3, 4\]"):
        F.layer_norm(nn.zeros(3, 4), (5,))


def test_group_norm_groups_must_divide_channels():
    with pytest.raises(RuntimeError, match=r"divisible by num_groups, but got input of shape "
                                           r"\[2, 6, 4\] and num_groups=4"):
        F.group_norm(nn.zeros(2, 6, 4), 4)
    with pytest.raises(ValueError, match=r"num_channels \(6\) must be divisible by num_groups "
                                         r"\(4\)"):
        nn.GroupNorm(4, 6)


def test_instance_norm_feature_count():
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match "
                                         r"num_features \(3\), but got: 4"):
        nn.InstanceNorm1d(3, affine=True)(nn.zeros(2, 4, 5))


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_dropout_probability(p):
    with pytest.raises(ValueError, match=f"dropout probability has to be between 0 and 1, "
                                         f"but got {p}"):
        F.dropout(nn.ones(3), p)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        nn.AlphaDropout(p)


def test_dropout1d_rank():
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a "
                                           "4D input"):
        F.dropout1d(nn.ones(2, 2, 2, 2))


def test_target_out_of_bounds():
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        F.cross_entropy(nn.zeros(2, 3), nn.tensor([0, 5]))
    with pytest.raises(IndexError, match="Target -2 is out of bounds."):
        F.nll_loss(nn.zeros(2, 3), nn.tensor([-2, 1]))


def test_cross_entropy_shape_mismatch():
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target "
                                         r"batch_size \(2\)"):
        F.cross_entropy(nn.zeros(3, 4), nn.tensor([0, 1]))
    with pytest.raises(RuntimeError, match=r"Expected target size \[2, 5\], got \[2, 4\]"):
        F.cross_entropy(nn.zeros(2, 3, 5), nn.zeros(2, 4, dtype="int64"))
    with pytest.raises(RuntimeError, match=r"input \[2, 3\] and target \[2, 4\]"):
        F.cross_entropy(nn.zeros(2, 3), nn.zeros(2, 4))


def test_cross_entropy_options():
    with pytest.raises(RuntimeError, match=r"weight tensor should be defined either for all 3 "
                                           r"classes or no classes but got weight tensor of "
                                           r"shape: \[2\]"):
        F.cross_entropy(nn.zeros(2, 3), nn.tensor([0, 1]), weight=nn.ones(2))
    with pytest.raises(ValueError, match="label_smoothing must be between 0.0 and 1.0. Got: 2"):
        F.cross_entropy(nn.zeros(2, 3), nn.tensor([0, 1]), label_smoothing=2)
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.mse_loss(nn.zeros(2), nn.zeros(2), reduction="avg")


def test_binary_losses_need_equal_sizes():
    with pytest.raises(ValueError, match=r"Using a target size \(\[2, 1\]\) that is different "
                                         r"to the input size \(\[2, 3\]\) is deprecated"):
        F.binary_cross_entropy(nn.full((2, 3), 0.5), nn.zeros(2, 1))
    with pytest.raises(ValueError, match=r"Target size \(\[3\]\) must be the same as input "
                                         r"size \(\[2, 3\]\)"):
        F.binary_cross_entropy_with_logits(nn.zeros(2, 3), nn.zeros(3))


def test_binary_cross_entropy_needs_probabilities():
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(nn.tensor([0.5, 1.5]), nn.tensor([0.0, 1.0]))


def test_regression_loss_broadcast_warning_and_bad_shapes():
    with pytest.warns(UserWarning, match=r"Using a target size \(\[3\]\) that is different to "
                                         r"the input size \(\[2, 3\]\)"):
        F.mse_loss(nn.zeros(2, 3), nn.zeros(3))
    with pytest.warns(UserWarning), pytest.raises(
            RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b "
                                r"\(4\)"):
        F.l1_loss(nn.zeros(2, 3), nn.zeros(4))


def test_embedding_index_errors():
    w = nn.zeros(4, 2)
    with pytest.raises(IndexError, match=r"index 4 is out of range for an embedding of 4 rows "
                                         r"\(weight of shape \[4, 2\]\)"):
        F.embedding(nn.tensor([1, 4]), w)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices'"):
        F.embedding(nn.tensor([1.0]), w)
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(nn.tensor([3]), 2)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=5)
    assert np.all(w.numpy() == 0)


def test_cross_entropy_of_one_sample_with_a_batch_of_targets():
    with pytest.raises(ValueError, match="For 1D input, 1D target must have size 1, but got "
                                         "target size: 2"):
        F.cross_entropy(nn.randn(3), nn.tensor([1, 2]))
    with pytest.raises(ValueError, match="For 1D input, 1D target must have size 1"):
        F.nll_loss(nn.randn(3), nn.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected, multi-target not "
                                           "supported"):
        F.cross_entropy(nn.randn(3), nn.tensor([[1]]))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(4\) to match target "
                                         r"batch_size \(2\)"):
        F.cross_entropy(nn.randn(4, 3), nn.tensor([1, 2]))


@pytest.mark.parametrize("target", [[2.0, -1.0], [0.5, 1.5], [float("nan"), 0.0]])
def test_binary_cross_entropy_target_out_of_range(target):
    with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
        F.binary_cross_entropy(nn.tensor([0.5, 0.2]), nn.tensor(target))
    with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
        nn.BCELoss()(nn.tensor([0.5, 0.2]), nn.tensor(target))


def test_binary_cross_entropy_nan_input():
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(nn.tensor([float("nan"), 0.2]), nn.tensor([0.5, 0.0]))


# ----------------------------------------------------------------------------- added layers

def test_multi_margin_loss_misuse():
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(nn.randn(2, 3), nn.tensor([0, 1]), p=3)
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(nn.randn(2, 3), nn.tensor([0, 3]))
    with pytest.raises(RuntimeError, match=r"Expected target size \[2\], but got \[3\]"):
        F.multi_margin_loss(nn.randn(2, 3), nn.tensor([0, 1, 2]))
    with pytest.raises(RuntimeError, match=r"Expected non-empty vector or matrix.*\[2, 3, 4\]"):
        F.multi_margin_loss(nn.randn(2, 3, 4), nn.tensor([0, 1]))


def test_gaussian_and_poisson_nll_misuse():
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(nn.randn(4, 3), nn.randn(4, 3), nn.ones(2))
    with pytest.raises(ValueError, match="var has negative entry/entries"):
        F.gaussian_nll_loss(nn.randn(4, 3), nn.randn(4, 3), -nn.ones(4, 3))
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.poisson_nll_loss(nn.randn(4, 3), nn.randn(4, 3), reduction="avg")


def test_triplet_margin_with_distance_loss_misuse():
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
        F.triplet_margin_with_distance_loss(nn.randn(2, 3), nn.randn(2, 3), nn.randn(2, 3),
                                            margin=0)
    with pytest.raises(ValueError, match="TripletMarginWithDistanceLoss: expected margin to "
                                         "be greater than 0, got -1 instead"):
        nn.TripletMarginWithDistanceLoss(margin=-1)
    with pytest.raises(RuntimeError, match="anchor 2D, positive 1D, and negative 2D inputs"):
        F.triplet_margin_with_distance_loss(nn.randn(2, 3), nn.randn(3), nn.randn(2, 3))


def test_added_layers_check_their_inputs():
    with pytest.raises(ValueError, match=r"Expected 3D or higher dimensionality input "
                                         r"\(got 2 dimensions\)"):
        F.local_response_norm(nn.randn(2, 3), 2)
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 1D"):
        nn.Softmax2d()(nn.randn(3))
    with pytest.raises(RuntimeError, match="Number of channels must be divisible by groups. "
                                           "Got 5 channels and 2 groups."):
        F.channel_shuffle(nn.randn(2, 5, 3), 2)
    with pytest.raises(RuntimeError, match=r"channel_shuffle expects input with > 2 dims"):
        nn.ChannelShuffle(5)(nn.randn(2, 5))
    with pytest.raises(RuntimeError, match="Value of groups:0"):
        F.channel_shuffle(nn.randn(2, 6, 3), 0)
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        F.pdist(nn.randn(2, 5, 3))
    with pytest.raises(RuntimeError, match="pdist only supports non-negative p values"):
        F.pdist(nn.randn(2, 5), -1)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        nn.Dropout3d(1.5)
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) "
                                           r"input to LazyConv2d, but got input of size"):
        nn.LazyConv2d(3, 2)(nn.randn(2, 3))


def test_fractional_max_pool_and_ctc_misuse():
    with pytest.raises(ValueError, match="FractionalMaxPool2d requires specifying either an "
                                         "output size, or a pooling ratio"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="fractional_max_pool2d requires specifying either"):
        F.fractional_max_pool2d(nn.randn(1, 1, 4, 4), 2)
    with pytest.raises(RuntimeError, match="pool height 3 too large relative to input height 4"):
        F.fractional_max_pool2d(nn.randn(1, 1, 4, 4), 3, output_size=3)
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(nn.randn(3, 1, 4).log_softmax(2), nn.tensor([[1]]), [3], [1], blank=4)
