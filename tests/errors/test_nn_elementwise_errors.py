"""Misuses of the elementwise operators, reductions and activations: one test per message,
each PyTorch's own where PyTorch has one."""
import pytest

import nn
import nn.functional as F


def floats(*shape):
    return nn.zeros(*shape)


def ints():
    return nn.tensor([1, 2, 3])


def flags():
    return nn.tensor([True, False, True])


def test_shapes_that_do_not_broadcast_name_both_sizes():
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 1"):
        floats(2, 3) + floats(4)


def test_operator_without_a_tensor_operand():
    with pytest.raises(TypeError, match="expected a Tensor operand, got int and int"):
        nn.add(1, 2)


def test_operand_that_is_not_a_number():
    with pytest.raises(TypeError, match="expected a Tensor or a Python number, got str"):
        nn.mul(floats(2), "2")


def test_subtracting_bool_tensors_says_use_xor():
    with pytest.raises(RuntimeError, match=r"Use the `\^` or `logical_xor\(\)` operator"):
        flags() - flags()


def test_negating_a_bool_tensor_says_use_invert():
    with pytest.raises(RuntimeError, match=r"use the `~` or `logical_not\(\)` operator"):
        -flags()


def test_float_alpha_with_integer_tensors():
    with pytest.raises(RuntimeError, match="argument alpha must not be a floating point"):
        nn.add(ints(), ints(), alpha=0.5)


def test_unknown_rounding_mode():
    with pytest.raises(RuntimeError, match="rounding_mode to be one of None, 'trunc', or "
                                           "'floor' but found 'round'"):
        nn.div(floats(2), 2, rounding_mode="round")


def test_integer_division_by_zero():
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ints() // 0


def test_integer_remainder_by_zero():
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        nn.remainder(ints(), 0)


def test_integers_to_negative_powers():
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not "
                                           "allowed"):
        ints() ** -1


def test_pow_with_an_exponent_that_is_not_a_number():
    with pytest.raises(TypeError, match="argument 'exponent' must be a Number or a Tensor, "
                                        "not str"):
        nn.pow(floats(2), "2")


def test_frac_of_integers_is_not_implemented():
    with pytest.raises(NotImplementedError, match="\"frac_cpu\" not implemented for 'Long'"):
        nn.frac(ints())


def test_abs_of_bool_is_not_implemented():
    with pytest.raises(NotImplementedError, match="\"abs_cpu\" not implemented for 'Bool'"):
        nn.abs(flags())


def test_bitwise_op_on_floats():
    with pytest.raises(NotImplementedError, match="\"bitwise_and_cpu\" not implemented for "
                                                  "'Float'"):
        nn.bitwise_and(floats(2), 1)


def test_bitwise_not_on_floats():
    with pytest.raises(NotImplementedError, match="\"bitwise_not_cpu\" not implemented for "
                                                  "'Float'"):
        ~floats(2)


def test_lerp_of_integers():
    with pytest.raises(NotImplementedError, match="lerp_kernel_scalar"):
        nn.lerp(ints(), ints(), 0.5)


def test_lerp_weight_of_another_dtype():
    with pytest.raises(RuntimeError, match="expected dtype float32 for `weight` but got dtype "
                                           "float64"):
        nn.lerp(floats(2), floats(2), nn.zeros(2, dtype="float64"))


def test_clamp_without_bounds():
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        nn.clamp(floats(2))


def test_clamp_with_a_bound_that_is_not_a_number():
    with pytest.raises(TypeError, match="argument 'min' must be a Number or a Tensor, not str"):
        nn.clamp(floats(2), "0")


def test_where_with_a_condition_that_is_not_bool():
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor, "
                                           "but got a tensor with dtype float32"):
        nn.where(floats(2), floats(2), floats(2))


def test_where_with_only_a_condition_points_to_nonzero():
    with pytest.raises(TypeError, match=r"nonzero\(condition, as_tuple=True\)"):
        nn.where(flags())


def test_masked_fill_with_an_integer_mask():
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks, but got "
                                           "mask with dtype int64"):
        floats(3).masked_fill(ints(), 1.0)


def test_masked_fill_with_a_value_of_one_dimension():
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor, but "
                                           r"got tensor with 1 dimension\(s\)"):
        floats(3).masked_fill(flags(), floats(1))


def test_equal_of_a_tensor_and_a_number():
    with pytest.raises(TypeError, match="equal\\(\\): expected two Tensors, got Tensor and int"):
        nn.equal(floats(2), 0)


def test_mean_of_integers():
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype. Input "
                                           "dtype must be either a floating point"):
        ints().mean()


def test_var_of_integers():
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        ints().var()


def test_var_with_both_unbiased_and_correction():
    with pytest.raises(RuntimeError, match="can't specify both unbiased and correction"):
        nn.var(floats(3), 0, True, correction=0)


def test_reduction_dim_out_of_range():
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                         r"of \[-2, 1\], but got 2\)"):
        floats(2, 3).sum(2)


def test_max_of_an_empty_tensor_needs_a_dim():
    with pytest.raises(RuntimeError, match="max\\(\\): Expected reduction dim to be specified "
                                           "for input.numel\\(\\) == 0"):
        nn.max(floats(0))


def test_softmax_of_integers():
    with pytest.raises(NotImplementedError, match="softmax_lastdim_kernel_impl"):
        nn.softmax(ints(), 0)


def test_norm_of_integers():
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as "
                                           "input. Got int64"):
        nn.norm(ints())


def test_activation_of_integers_is_not_implemented():
    with pytest.raises(NotImplementedError, match="\"gelu_cpu\" not implemented for 'Long'"):
        F.gelu(ints())


def test_gelu_with_an_unknown_approximation():
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(floats(2), approximate="fast")


def test_hardtanh_with_crossed_bounds():
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        nn.Hardtanh(1.0, -1.0)


def test_celu_with_alpha_zero():
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        F.celu(floats(2), alpha=0.0)


def test_activation_parameter_that_is_not_a_number():
    with pytest.raises(TypeError, match="negative_slope must be a number, not str"):
        F.leaky_relu(floats(2), "0.1")


def test_prelu_weight_count_that_does_not_match_the_channels():
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel "
                                           "size. Found parameter numbers = 3 and channel size "
                                           "= 4"):
        F.prelu(floats(2, 4), nn.zeros(3))


def test_glu_over_an_odd_dimension():
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is "
                                           "size 5"):
        F.glu(floats(2, 5))


def test_argmax_of_a_bool_tensor():
    with pytest.raises(RuntimeError, match=r"argmax\(\): does not support bool input"):
        flags().argmax()
    with pytest.raises(RuntimeError, match=r"argmin\(\): does not support bool input"):
        flags().argmin(0)


def test_cross_entropy_with_an_int32_target():
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got "
                                           "Int"):
        F.cross_entropy(nn.tensor([[1., 2.]]), nn.tensor([1], dtype=nn.int32))


def test_clamp_of_a_bool_tensor_by_bools():
    with pytest.raises(NotImplementedError, match="\"clamp_scalar_cpu\" not implemented for "
                                                  "'Bool'"):
        flags().clamp(True, True)


def test_shift_of_floats_or_bools():
    with pytest.raises(NotImplementedError, match="\"lshift_cpu\" not implemented for 'Float'"):
        floats(2) << 1
    with pytest.raises(NotImplementedError, match="\"rshift_cpu\" not implemented for 'Bool'"):
        flags() >> flags()


def test_float_result_into_an_int_tensor():
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        ints().add_(floats(3))


def test_numpy_of_a_cuda_tensor_via_asarray():
    import numpy as np
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy. Use "
                                        r"Tensor.cpu\(\) to copy the tensor to host memory "
                                        "first."):
        np.asarray(floats(2).cuda())


def test_format_spec_of_a_dimensioned_tensor():
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
        f"{floats(2):.2f}"
