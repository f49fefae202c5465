"""Misuse of convolution, padding and pooling: PyTorch's messages, one test per mistake.
These fail in argument checks, before any kernel is compiled."""
import re

import pytest

import nn


def _x(*shape, dtype="float32"):
    return nn.zeros(*shape, dtype=dtype)


def test_conv2d_channel_mismatch_names_both_shapes():
    with pytest.raises(RuntimeError, match=re.escape(
            "Given groups=1, weight of size [2, 3, 3, 3], expected input[1, 4, 5, 5] to have "
            "3 channels, but got 4 channels instead")):
        nn.conv2d(_x(1, 4, 5, 5), _x(2, 3, 3, 3))


def test_conv2d_channel_mismatch_unbatched_input():
    with pytest.raises(RuntimeError, match=re.escape("expected input[1, 4, 5, 5] to have 6 "
                                                     "channels, but got 4")):
        nn.conv2d(_x(4, 5, 5), _x(2, 3, 3, 3), groups=2)


def test_conv2d_wrong_input_rank():
    with pytest.raises(RuntimeError, match=re.escape(
            "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: "
            "[4, 5, 5, 5, 5]")):
        nn.conv2d(_x(4, 5, 5, 5, 5), _x(2, 4, 3, 3))


def test_conv1d_wrong_input_rank():
    with pytest.raises(RuntimeError, match=re.escape("Expected 2D (unbatched) or 3D (batched) "
                                                     "input to conv1d")):
        nn.conv1d(_x(1, 3, 5, 5), _x(2, 3, 3))


def test_conv2d_wrong_weight_rank():
    with pytest.raises(RuntimeError, match=r"expected a 4D weight .* got weight of size "
                                           r"\[2, 3, 3\]"):
        nn.conv2d(_x(1, 3, 5, 5), _x(2, 3, 3))


def test_conv2d_kernel_larger_than_padded_input():
    with pytest.raises(RuntimeError, match=re.escape(
            "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel "
            "size can't be greater than actual input size")):
        nn.conv2d(_x(1, 3, 2, 2), _x(2, 3, 3, 3))


def test_conv2d_bad_padding_string():
    with pytest.raises(RuntimeError, match="Invalid padding string: 'full'"):
        nn.conv2d(_x(1, 3, 5, 5), _x(2, 3, 3, 3), padding="full")


def test_conv2d_same_padding_with_stride():
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided "
                                           "convolutions"):
        nn.conv2d(_x(1, 3, 5, 5), _x(2, 3, 3, 3), padding="same", stride=2)


def test_conv2d_negative_padding():
    with pytest.raises(RuntimeError, match="negative padding is not supported"):
        nn.conv2d(_x(1, 3, 5, 5), _x(2, 3, 3, 3), padding=-1)


def test_conv2d_padding_of_wrong_length():
    with pytest.raises(RuntimeError, match=re.escape(
            "expected padding to be a single integer value or a list of 2 values to match the "
            "convolution dimensions, but got padding=[1, 2, 3]")):
        nn.conv2d(_x(1, 3, 5, 5), _x(2, 3, 3, 3), padding=(1, 2, 3))


def test_conv2d_zero_stride():
    with pytest.raises(RuntimeError, match="non-positive stride is not supported"):
        nn.conv2d(_x(1, 3, 5, 5), _x(2, 3, 3, 3), stride=0)


def test_conv2d_zero_groups():
    with pytest.raises(RuntimeError, match="non-positive groups is not supported"):
        nn.conv2d(_x(1, 3, 5, 5), _x(2, 3, 3, 3), groups=0)


def test_conv2d_out_channels_not_divisible_by_groups():
    with pytest.raises(RuntimeError, match=re.escape("Given groups=2, expected weight to be "
                                                     "divisible by 2 at dimension 0")):
        nn.conv2d(_x(1, 4, 5, 5), _x(3, 2, 3, 3), groups=2)


def test_conv2d_bias_of_wrong_size():
    with pytest.raises(RuntimeError, match=re.escape(
            "Given weight of size [2, 3, 3, 3], expected bias to be 1-dimensional with 2 "
            "elements, but got bias of size [3] instead")):
        nn.conv2d(_x(1, 3, 5, 5), _x(2, 3, 3, 3), _x(3))


def test_conv2d_dtype_mismatch():
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        nn.conv2d(_x(1, 3, 5, 5, dtype="float64"), _x(2, 3, 3, 3))


def test_conv2d_integer_input():
    with pytest.raises(RuntimeError, match="conv2d: expected a floating point input, got int64"):
        nn.conv2d(_x(1, 3, 5, 5, dtype="int64"), _x(2, 3, 3, 3, dtype="int64"))


def test_conv2d_module_channels_not_divisible_by_groups():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)


def test_conv2d_module_bad_padding_string():
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(3, 4, 3, padding="full")


def test_conv2d_module_bad_padding_mode():
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")


def test_pad_odd_length():
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        nn.pad(_x(1, 3, 5), (1, 2, 3))


def test_pad_too_long():
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal to two "
                                           "times the input dimension"):
        nn.pad(_x(2, 3), (1, 1, 1, 1, 1, 1))


def test_pad_unknown_mode():
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode mirror"):
        nn.pad(_x(1, 3, 5), (1, 1), mode="mirror")


def test_pad_reflect_larger_than_input():
    with pytest.raises(RuntimeError, match=re.escape(
            "Padding size should be less than the corresponding input dimension, but got: "
            "padding (5, 1) at dimension 2 of input [1, 3, 5]")):
        nn.pad(_x(1, 3, 5), (5, 1), mode="reflect")


def test_pad_circular_wraps_twice():
    with pytest.raises(RuntimeError, match="Padding value causes wrapping around more than "
                                           "once"):
        nn.pad(_x(1, 3, 5), (6, 1), mode="circular")


def test_pad_mode_with_unsupported_rank():
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D "
                                                  "input tensor"):
        nn.pad(_x(1, 3, 5, 5), (1, 1), mode="replicate")


def test_pad_mode_with_value():
    with pytest.raises(RuntimeError, match='Padding mode "reflect" doesn\'t take in value '
                                           "argument"):
        nn.pad(_x(1, 3, 5), (1, 1), mode="reflect", value=2.0)


def test_pad_crop_below_zero():
    with pytest.raises(RuntimeError, match=r"dimension 2 of size 5 padded by \(-6, 0\) would "
                                           "have a negative size"):
        nn.pad(_x(1, 3, 5), (-6, 0))


def test_max_pool_padding_over_half_kernel():
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel "
                                           "size, but got pad=2, kernel_size=3 and dilation=1"):
        nn.functional.max_pool2d(_x(1, 3, 5, 5), 3, padding=2)


def test_max_pool_output_too_small():
    with pytest.raises(RuntimeError, match=re.escape(
            "Given input size: (3x2x2). Calculated output size: (3x0x0). Output size is too "
            "small")):
        nn.functional.max_pool2d(_x(1, 3, 2, 2), 3)


def test_pool_zero_stride():
    with pytest.raises(RuntimeError, match="stride should not be zero"):
        nn.functional.avg_pool2d(_x(1, 3, 5, 5), 2, stride=0)


def test_pool_wrong_rank():
    with pytest.raises(RuntimeError, match=re.escape(
            "max_pool2d: expected a non-empty 3D (unbatched) or 4D (batched) input, but got "
            "input of size: [3, 5, 5, 5, 5]")):
        nn.functional.max_pool2d(_x(3, 5, 5, 5, 5), 3)


def test_adaptive_pool_output_size_length():
    with pytest.raises(RuntimeError, match="adaptive_avg_pool2d: output_size must be 2"):
        nn.functional.adaptive_avg_pool2d(_x(1, 3, 5, 5), (2, 3, 4))


def test_avg_pool_zero_divisor():
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        nn.functional.avg_pool2d(_x(1, 3, 5, 5), 2, divisor_override=0)


def test_max_unpool_bad_output_size():
    values, index = nn.functional.max_pool2d(nn.rand(1, 1, 4, 4), 2, return_indices=True)
    with pytest.raises(RuntimeError, match=r"max_unpool2d: invalid output_size \[9, 4\]"):
        nn.functional.max_unpool2d(values, index, 2, output_size=(9, 4))


# ----------------------------------------------------------------------------- conv3d, grids

def test_conv3d_channel_mismatch_unbatched_input():
    with pytest.raises(RuntimeError, match=re.escape(
            "Given groups=1, weight of size [2, 3, 3, 3, 3], expected input[1, 1, 4, 5, 5] to "
            "have 3 channels, but got 1 channels instead")):
        nn.conv3d(_x(1, 4, 5, 5), _x(2, 3, 3, 3, 3))


def test_conv3d_kernel_deeper_than_input():
    with pytest.raises(RuntimeError, match=re.escape(
            "Calculated padded input size per channel: (2 x 5 x 5). Kernel size: (3 x 3 x 3). "
            "Kernel size can't be greater than actual input size")):
        nn.conv3d(_x(1, 3, 2, 5, 5), _x(2, 3, 3, 3, 3))


def test_conv3d_same_padding_with_stride():
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided "
                                           "convolutions"):
        nn.conv3d(_x(1, 3, 5, 5, 5), _x(2, 3, 3, 3, 3), stride=2, padding="same")


def test_conv3d_module_bad_padding_mode():
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv3d(2, 2, 3, padding_mode="mirror")


def test_grid_sample_grid_last_dimension():
    with pytest.raises(RuntimeError, match=re.escape(
            "grid_sampler(): expected grid to have size 2 in last dimension, but got grid with "
            "sizes [1, 2, 2, 3]")):
        nn.functional.grid_sample(_x(1, 1, 3, 3), _x(1, 2, 2, 3), align_corners=False)


def test_grid_sample_batch_mismatch():
    with pytest.raises(RuntimeError, match=re.escape(
            "grid_sampler(): expected grid and input to have same batch size, but got input "
            "with sizes [1, 1, 3, 3] and grid with sizes [2, 2, 2, 2]")):
        nn.functional.grid_sample(_x(1, 1, 3, 3), _x(2, 2, 2, 2), align_corners=False)


def test_grid_sample_unknown_mode():
    with pytest.raises(ValueError, match=re.escape(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            "'bicubic', but got: 'box'")):
        nn.functional.grid_sample(_x(1, 1, 3, 3), _x(1, 2, 2, 2), mode="box")


def test_grid_sample_bicubic_refused():
    with pytest.raises(NotImplementedError, match=re.escape(
            "grid_sample: mode 'bicubic' is not supported; use 'bilinear' or 'nearest'")):
        nn.functional.grid_sample(_x(1, 1, 3, 3), _x(1, 2, 2, 2), mode="bicubic")


def test_affine_grid_theta_shape_for_5d_size():
    with pytest.raises(ValueError, match=re.escape(
            "Expected a batch of 3D affine matrices of shape Nx3x4 for size (1, 1, 2, 2, 2)")):
        nn.functional.affine_grid(_x(1, 2, 3), (1, 1, 2, 2, 2), align_corners=False)


def test_affine_grid_size_rank():
    with pytest.raises(NotImplementedError, match=re.escape(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            "respectively. Got size (1, 1, 2).")):
        nn.functional.affine_grid(_x(1, 2, 3), (1, 1, 2), align_corners=False)


def test_interpolate_antialias_refused():
    for mode in ("bilinear", "bicubic"):
        with pytest.raises(NotImplementedError, match=re.escape(
                "interpolate: antialias=True is not supported (only antialias=False)")):
            nn.functional.interpolate(_x(1, 1, 4, 4), scale_factor=2, mode=mode, antialias=True)
