"""Misuse of the Module system, nn.init, the factories, the matrix products and the Linear
family: one test per mistake, each error naming the argument, shapes or key and what to do."""
import numpy as np
import pytest

import nn
from nn import init


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)


# ----------------------------------------------------------------------------- state_dict

def test_load_state_dict_size_mismatch_names_the_key():
    sd = Net().state_dict()
    sd["fc.weight"] = nn.zeros(4, 5)
    with pytest.raises(RuntimeError, match=r"size mismatch for fc.weight: copying a param with "
                       r"shape \[4, 5\] from checkpoint, the shape in current model is \[4, 3\]"):
        Net().load_state_dict(sd)


def test_load_state_dict_missing_and_unexpected_keys():
    sd = Net().state_dict()
    sd["fc.scale"] = sd.pop("fc.bias")
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "fc.bias"\. \n\t'
                       r'Unexpected key\(s\) in state_dict: "fc.scale"\.'):
        Net().load_state_dict(sd)


def test_load_state_dict_wants_a_mapping():
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        Net().load_state_dict([("fc.weight", nn.zeros(4, 3))])


def test_load_state_dict_value_not_a_tensor():
    sd = Net().state_dict()
    sd["fc.bias"] = [0.0] * 4
    with pytest.raises(RuntimeError, match='While copying the parameter named "fc.bias", '
                       "expected nn.Tensor"):
        Net().load_state_dict(sd)


# ----------------------------------------------------------------------------- Module

def test_to_an_integer_dtype():
    with pytest.raises(TypeError, match="only accepts floating point dtypes, but got desired "
                       "dtype=int64"):
        Net().to("int64")


def test_to_unknown_argument():
    with pytest.raises(TypeError, match="to\\(\\) expects a device, a dtype or a tensor"):
        Net().to("fast")


def test_backward_hook_returning_wrong_number_of_grads():
    lin = nn.Linear(3, 2)
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    y = lin(nn.ones(1, 3, requires_grad=True))
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of "
                       "grad_input, got 2, but expected 1"):
        y.sum().backward()


def test_backward_hook_replacing_grads_of_inputs_that_need_none():
    lin = nn.Linear(3, 2)
    lin.register_full_backward_hook(lambda m, gi, go: (nn.zeros(1, 3),))
    with pytest.raises(RuntimeError, match="no input requires gradient should always return "
                       "None"):
        lin(nn.ones(1, 3)).sum().backward()


def test_forward_pre_hook_with_kwargs_bad_return():
    lin = nn.Linear(3, 2)
    lin.register_forward_pre_hook(lambda m, args, kwargs: args, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"must return None or a tuple of \(new_args, "
                       r"new_kwargs\)"):
        lin(nn.ones(1, 3))


def test_uninitialized_parameter_used_before_forward():
    lazy = nn.LazyLinear(4)
    with pytest.raises(RuntimeError, match="uninitialized parameter. Call the module's "
                       "forward once"):
        lazy.weight.shape


def test_sequential_insert_out_of_range():
    with pytest.raises(IndexError, match="Index out of range: 5"):
        nn.Sequential(nn.ReLU()).insert(5, nn.ReLU())


def test_parameter_list_extend_with_a_tensor():
    with pytest.raises(TypeError, match="ParameterList.extend should be called with an "
                       "iterable, but got Tensor"):
        nn.ParameterList().extend(nn.zeros(3))


def test_parameter_dict_key_not_a_string():
    with pytest.raises(TypeError, match="ParameterDict keys must be strings, got int"):
        nn.ParameterDict()[0] = nn.zeros(1)


def test_parameter_list_is_not_callable():
    with pytest.raises(RuntimeError, match="ParameterList should not be called"):
        nn.ParameterList([nn.zeros(1)])(nn.zeros(1))


# ----------------------------------------------------------------------------- layers

def test_linear_negative_features():
    with pytest.raises(ValueError, match="Linear: out_features must be a non-negative int, "
                       "got -2"):
        nn.Linear(3, -2)


def test_linear_input_of_the_wrong_width():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                       r"\(10x5 and 3x4\)"):
        nn.Linear(3, 4)(nn.zeros(2, 5, 5))


def test_linear_dtype_mismatch():
    with pytest.raises(RuntimeError, match="linear: expected both operands to have the same "
                       "dtype, but got float64 and float32"):
        nn.Linear(3, 4)(nn.zeros(2, 3, dtype="float64"))


def test_linear_bias_shape():
    with pytest.raises(RuntimeError, match=r"bias must have shape \(4,\)"):
        nn.linear(nn.zeros(2, 3), nn.zeros(4, 3), nn.zeros(3))


def test_bilinear_input_size():
    with pytest.raises(RuntimeError, match="input2 size does not match weight size: got 3 but "
                       "expected 2"):
        nn.Bilinear(4, 2, 5)(nn.zeros(1, 4), nn.zeros(1, 3))


def test_bilinear_batch_mismatch():
    with pytest.raises(RuntimeError, match=r"input batch dimensions do not match: got \[2\] "
                       r"and \[3\]"):
        nn.Bilinear(4, 2, 5)(nn.zeros(2, 4), nn.zeros(3, 2))


def test_unflatten_size_not_ints():
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints, but found "
                       "element of type float at pos 1"):
        nn.Unflatten(1, (2, 2.5))


# ----------------------------------------------------------------------------- products

def test_mm_shapes():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                       r"\(2x3 and 4x5\)"):
        nn.mm(nn.zeros(2, 3), nn.zeros(4, 5))


def test_mm_not_a_matrix():
    with pytest.raises(RuntimeError, match="mat2 must be a matrix"):
        nn.mm(nn.zeros(2, 3), nn.zeros(3))


def test_bmm_not_3d():
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        nn.bmm(nn.zeros(2, 3), nn.zeros(2, 3, 4))


def test_bmm_batch_mismatch():
    with pytest.raises(RuntimeError, match="batch1 and batch2 must have same number of "
                       "batches, got 2 and 3"):
        nn.bmm(nn.zeros(2, 3, 4), nn.zeros(3, 4, 5))


def test_bmm_inner_sizes():
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 "
                       r"tensor to be: \[2, 4\] but got: \[2, 5\]"):
        nn.bmm(nn.zeros(2, 3, 4), nn.zeros(2, 5, 4))


def test_matmul_shapes_name_both():
    with pytest.raises(RuntimeError, match=r"\(2x3x4 and 5x6\)"):
        nn.matmul(nn.zeros(2, 3, 4), nn.zeros(5, 6))


def test_dot_sizes():
    with pytest.raises(RuntimeError, match=r"expected tensor \[3\] and src \[4\]"):
        nn.dot(nn.zeros(3), nn.zeros(4))


# ----------------------------------------------------------------------------- nn.init

def test_fan_of_a_vector():
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor "
                       "with fewer than 2 dimensions"):
        init.xavier_uniform_(nn.zeros(5))


def test_kaiming_bad_mode():
    with pytest.raises(ValueError, match=r"Mode fan_avg not supported, please use one of "
                       r"\['fan_in', 'fan_out'\]"):
        init.kaiming_uniform_(nn.zeros(3, 4), mode="fan_avg")


def test_bad_nonlinearity():
    with pytest.raises(ValueError, match="Unsupported nonlinearity softplus"):
        init.kaiming_normal_(nn.zeros(3, 4), nonlinearity="softplus")


def test_bad_negative_slope():
    with pytest.raises(ValueError, match="negative_slope slope not a valid number"):
        init.calculate_gain("leaky_relu", "slope")


def test_eye_of_3d():
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(nn.zeros(2, 2, 2))


def test_dirac_dims_and_groups():
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions"):
        init.dirac_(nn.zeros(2, 2))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(nn.zeros(5, 2, 3), groups=2)


def test_orthogonal_of_a_vector():
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
        init.orthogonal_(nn.zeros(4))


def test_random_init_of_an_integer_tensor():
    with pytest.raises(TypeError, match="nn.init.uniform_: expected a floating point tensor, "
                       "got int64"):
        init.uniform_(nn.zeros(3, dtype="int64"))


def test_init_bad_generator():
    with pytest.raises(TypeError, match="generator must be None or a numpy.random.Generator"):
        init.normal_(nn.zeros(3), generator=np.random.RandomState(0))


# ----------------------------------------------------------------------------- factories

def test_factory_device_of_wrong_type():
    with pytest.raises(TypeError, match="device must be None, a string such as 'cpu'"):
        nn.ones(2, device=0)


def test_factory_negative_size():
    with pytest.raises(RuntimeError, match=r"zeros\(\): trying to create tensor with negative "
                       r"dimension -1: \[2, -1\]"):
        nn.zeros(2, -1)


def test_factory_size_not_ints():
    with pytest.raises(TypeError, match=r"rand\(\): argument 'size' must be a tuple of ints, "
                       "but found element of type float"):
        nn.rand(2.5)


def test_random_factory_of_integer_dtype():
    with pytest.raises(TypeError, match=r"randn\(\): expected a floating point dtype, got "
                       "int32"):
        nn.randn(3, dtype="int32")


def test_randint_empty_range():
    with pytest.raises(RuntimeError, match="expects 'from' to be less than 'to', but got "
                       "from=5 >= to=5"):
        nn.randint(5, 5, (2,))


def test_randint_without_size():
    with pytest.raises(TypeError, match="randint\\(\\) missing required argument 'size'"):
        nn.randint(0, 5)


def test_arange_inconsistent_step():
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        nn.arange(0, 5, -1)


def test_normal_number_forms_need_size():
    with pytest.raises(TypeError, match="needs size"):
        nn.normal(0.0, 1.0)


def test_normal_negative_std():
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        nn.normal(nn.zeros(2), -1.0)


def test_linspace_negative_steps():
    with pytest.raises(RuntimeError, match="number of steps must be a non-negative int"):
        nn.linspace(0, 1, -3)


# ----------------------------------------------------------------------------- inputs, loading

@pytest.mark.parametrize("value,kind", [(np.ones((2, 3), "float32"), "numpy.ndarray"),
                                        ([[1.0, 2.0, 3.0]], "list")])
def test_linear_of_a_non_tensor(value, kind):
    with pytest.raises(TypeError, match=rf"linear\(\): argument 'input' \(position 1\) must be "
                                        rf"Tensor, not {kind}"):
        nn.Linear(3, 2)(value)
    with pytest.raises(TypeError, match=rf"linear\(\): argument 'input' \(position 1\) must be "
                                        rf"Tensor, not {kind}"):
        nn.LazyLinear(2)(value)


def test_bilinear_of_a_non_tensor():
    with pytest.raises(TypeError, match=r"bilinear\(\): argument 'input2' \(position 2\) must "
                                        r"be Tensor, not numpy.ndarray"):
        nn.Bilinear(2, 2, 2)(nn.ones(1, 2), np.ones((1, 2)))


def test_load_state_dict_size_mismatch_copies_nothing():
    m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 3))
    w0 = m[0].weight.detach().numpy().copy()
    sd = {**m.state_dict(), "0.weight": nn.full((2, 2), 9.0), "1.weight": nn.ones(5, 5)}
    with pytest.raises(RuntimeError, match=r"size mismatch for 1.weight: copying a param with "
                                           r"shape \[5, 5\] from checkpoint, the shape in "
                                           r"current model is \[3, 2\]"):
        m.load_state_dict(sd)
    np.testing.assert_array_equal(m[0].weight.detach().numpy(), w0)
    with pytest.raises(RuntimeError, match="size mismatch for 1.weight"):
        m.load_state_dict(sd, strict=False)
    np.testing.assert_array_equal(m[0].weight.detach().numpy(), w0)


def test_load_state_dict_missing_or_unexpected_copies_nothing():
    m = nn.Sequential(nn.Linear(2, 2))
    w0 = m[0].weight.detach().numpy().copy()
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "0.bias"'):
        m.load_state_dict({"0.weight": nn.full((2, 2), 9.0)})
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "0.extra"'):
        m.load_state_dict({**m.state_dict(), "0.weight": nn.full((2, 2), 9.0),
                           "0.extra": nn.ones(1)})
    np.testing.assert_array_equal(m[0].weight.detach().numpy(), w0)


def test_container_operators_with_wrong_operands():
    s = nn.Sequential(nn.ReLU())
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential "
                                         "class, but <class 'int'> is given."):
        s + 3
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential "
                                         "class"):
        s += nn.ModuleList([nn.ReLU()])
    with pytest.raises(ValueError, match="Non-positive multiplication factor 0 for"):
        s * 0
    with pytest.raises(TypeError, match="unsupported operand type"):
        s * "x"
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, "
                                        "but got int"):
        nn.ModuleList([nn.ReLU()]) + 3


def test_pad_sequence_and_vector_conversion_errors():
    pad = nn.utils.rnn.pad_sequence
    with pytest.raises(RuntimeError, match="Expected padding_side to be one of left or right, "
                                           "but got middle."):
        pad([nn.ones(2)], padding_side="middle")
    with pytest.raises(RuntimeError, match="received an empty list of sequences"):
        pad([])
    with pytest.raises(RuntimeError, match=r"trailing shape \[3\] of sequence 0, but sequence 1 "
                                           r"has shape \[1, 4\]"):
        pad([nn.ones(2, 3), nn.ones(1, 4)])
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        nn.utils.vector_to_parameters([1.0, 2.0], [nn.ones(2)])
    with pytest.raises(RuntimeError, match=r"at least 2 elements \(the parameters' total\), got "
                                           r"shape \[1\]"):
        nn.utils.vector_to_parameters(nn.ones(1), [nn.ones(2)])
    with pytest.raises(ValueError, match="expected a non-empty list of Tensors"):
        nn.utils.parameters_to_vector([])
