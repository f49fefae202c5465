"""nn's elementwise operators: forward against numpy (odd shapes, broadcasting, 0-d), every
gradient against finite differences (float64), dtype promotion and integer semantics against
PyTorch, NaN handling, and the kernels that run them."""
import math

import numpy as np
import pytest
import torch

import nn
from nn.autograd import gradcheck

RNG = np.random.default_rng(5)


def leaf(shape, low=-1.0, high=1.0):
    return nn.tensor(RNG.uniform(low, high, shape), dtype="float64", requires_grad=True)


def numpy_erf(x):
    return np.vectorize(math.erf)(x)


# (name, numpy reference, value range)
UNARY = [
    ("exp", np.exp, (-2, 2)), ("exp2", np.exp2, (-2, 2)), ("expm1", np.expm1, (-2, 2)),
    ("log", np.log, (0.2, 3)), ("log2", np.log2, (0.2, 3)), ("log10", np.log10, (0.2, 3)),
    ("log1p", np.log1p, (-0.5, 3)), ("sqrt", np.sqrt, (0.2, 3)),
    ("rsqrt", lambda x: 1 / np.sqrt(x), (0.2, 3)), ("square", np.square, (-2, 2)),
    ("abs", np.abs, (-2, 2)), ("sign", np.sign, (-2, 2)), ("sin", np.sin, (-3, 3)),
    ("cos", np.cos, (-3, 3)), ("tan", np.tan, (-1, 1)), ("asin", np.arcsin, (-0.9, 0.9)),
    ("acos", np.arccos, (-0.9, 0.9)), ("atan", np.arctan, (-3, 3)), ("sinh", np.sinh, (-2, 2)),
    ("cosh", np.cosh, (-2, 2)), ("erf", numpy_erf, (-2, 2)),
    ("reciprocal", np.reciprocal, (0.5, 2)), ("floor", np.floor, (-3, 3)),
    ("ceil", np.ceil, (-3, 3)), ("round", np.round, (-3, 3)), ("trunc", np.trunc, (-3, 3)),
    ("frac", lambda x: x - np.trunc(x), (-3, 3)),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), (-3, 3)), ("tanh", np.tanh, (-2, 2)),
    ("relu", lambda x: np.maximum(x, 0), (-2, 2)), ("neg", np.negative, (-2, 2)),
    ("clone", np.copy, (-2, 2)), ("nan_to_num", np.copy, (-2, 2)),
]


@pytest.mark.parametrize("name,ref,span", UNARY, ids=[u[0] for u in UNARY])
def test_unary_forward_and_gradient(name, ref, span):
    fn = getattr(nn, name)
    x = RNG.uniform(*span, (3, 7)).astype("float32")
    np.testing.assert_allclose(fn(nn.tensor(x)).numpy(), ref(x), rtol=2e-6, atol=2e-6)
    a = leaf((2, 3), *span)
    if name != "square":        # PyTorch records square as PowBackward0
        node = getattr(torch, name)(torch.tensor(x, requires_grad=True)).grad_fn.name()
        assert fn(a).grad_fn.name() == node
    assert gradcheck(fn, (a,))
    assert getattr(a, name)().shape == (2, 3)       # the tensor method


# (name, function, numpy reference, shapes, range of the second operand)
BINARY = [
    ("add", nn.add, np.add, [(2, 1, 3), (4, 1)], (-1, 1)),
    ("add_alpha", lambda a, b: nn.add(a, b, alpha=2.5), lambda a, b: a + 2.5 * b,
     [(2, 3), (3,)], (-1, 1)),
    ("sub_alpha", lambda a, b: nn.sub(a, b, alpha=-2), lambda a, b: a + 2 * b,
     [(3,), (2, 3)], (-1, 1)),
    ("mul", nn.mul, np.multiply, [(2, 3), (2, 1)], (-1, 1)),
    ("div", nn.div, np.divide, [(2, 3), (3,)], (0.5, 2)),
    ("pow", nn.pow, np.power, [(2, 3), (2, 1)], (0.5, 2)),
    ("maximum", nn.maximum, np.maximum, [(2, 3), (3,)], (-1, 1)),
    ("minimum", nn.minimum, np.minimum, [(2, 3), (3,)], (-1, 1)),
    ("fmod", nn.fmod, np.fmod, [(2, 3), (2, 1)], (0.35, 0.45)),
    ("remainder", nn.remainder, np.remainder, [(2, 3), (2, 1)], (-0.45, -0.35)),
    ("atan2", nn.atan2, np.arctan2, [(2, 3), (3,)], (-1, 1)),
    ("lerp_tensor", nn.lerp, lambda a, b: a + b * (b - a), [(2, 3), (3,)], (0, 1)),
]


@pytest.mark.parametrize("name,fn,ref,shapes,span", BINARY, ids=[b[0] for b in BINARY])
def test_binary_forward_broadcast_and_gradient(name, fn, ref, shapes, span):
    if name == "lerp_tensor":
        fn = lambda a, b: nn.lerp(a, b, b)   # noqa: E731  (weight = end)
    x = RNG.uniform(0.5, 2, shapes[0])
    y = RNG.uniform(*span, shapes[1])
    got = fn(nn.tensor(x, dtype="float32"), nn.tensor(y, dtype="float32"))
    np.testing.assert_allclose(got.numpy(), ref(x, y), rtol=1e-5, atol=1e-6)
    a = nn.tensor(x, requires_grad=True)
    b = nn.tensor(y, requires_grad=True)
    assert gradcheck(fn, (a, b))


def test_scalar_operands_in_both_positions_and_their_gradients():
    a = leaf((2, 3), 0.5, 2)
    for fn, ref in [(lambda t: 2 - t, lambda v: 2 - v), (lambda t: 3 / t, lambda v: 3 / v),
                    (lambda t: 2 ** t, lambda v: 2 ** v), (lambda t: t ** 2.5, lambda v: v ** 2.5),
                    (lambda t: nn.lerp(t, t * 2, 0.25), lambda v: v + 0.25 * v),
                    (lambda t: t % 0.3, lambda v: v % 0.3), (lambda t: 1.5 * t, lambda v: 1.5 * v)]:
        np.testing.assert_allclose(fn(a).detach().numpy(), ref(a.detach().numpy()), rtol=1e-12)
        assert gradcheck(fn, (a,))


def test_pow_node_names_follow_pytorch():
    a = leaf((3,), 0.5, 2)
    assert (a ** 2).grad_fn.name() == "PowBackward0"
    assert (a ** a).grad_fn.name() == "PowBackward1"


def test_pow_exponent_gradient_is_zero_at_a_zero_base():
    base = nn.tensor([0.0, 2.0], dtype="float64")
    exponent = nn.tensor([2.0, 3.0], dtype="float64", requires_grad=True)
    (base ** exponent).sum().backward()
    np.testing.assert_allclose(exponent.grad.numpy(), [0.0, 8 * math.log(2)])


def test_zero_dim_tensors_broadcast_and_keep_their_shape():
    s = nn.tensor(2.0, requires_grad=True)
    v = nn.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = s * v + nn.exp(s)
    assert out.shape == (3,) and nn.exp(s).shape == ()
    out.sum().backward()
    assert s.grad.shape == () and math.isclose(s.grad.item(), 6 + 3 * math.exp(2), rel_tol=1e-6)
    np.testing.assert_allclose(v.grad.numpy(), [2, 2, 2])
    assert gradcheck(lambda a, b: nn.atan2(a, b) * nn.maximum(a, b),
                     (leaf(()), leaf((4,))))


PROMOTIONS = [
    lambda m: m.tensor([1, 2]) + 1.5,
    lambda m: m.tensor([1.0, 2.0]) + m.tensor(1.0, dtype=_dtype(m, "float64")),
    lambda m: m.tensor([1, 2]) + m.tensor(1.0, dtype=_dtype(m, "float64")),
    lambda m: m.tensor([1, 2], dtype=_dtype(m, "int32")) + m.tensor(7),
    lambda m: m.tensor([1, 2], dtype=_dtype(m, "int32")) + m.tensor(1.5),
    lambda m: m.tensor([1.0], dtype=_dtype(m, "float16")) * 2.5,
    lambda m: m.tensor([True, False]) + 2,
    lambda m: m.tensor([True, False]) * m.tensor([True, True]),
    lambda m: m.tensor([1, 2], dtype=_dtype(m, "int8")) * m.tensor([3], dtype=_dtype(m, "uint8")),
    lambda m: m.tensor([3, 4]) / 2,
    lambda m: m.where(m.tensor([True, False]), m.tensor([1, 2]), 2.5),
    lambda m: m.where(m.tensor([True, False]), 1, 2),
    lambda m: m.clamp(m.tensor([1, 5, -3]), 0.5),
    lambda m: m.pow(2, m.tensor([1, 2, 3])),
    lambda m: m.pow(m.tensor([1, 2, 3]), 2),
    lambda m: m.pow(m.tensor([1, 2, 3]), 0.5),
    lambda m: m.exp(m.tensor([1, 2])),
    lambda m: m.square(m.tensor([True, False])),
    lambda m: m.maximum(m.tensor([1, 2]), m.tensor([True, False])),
    lambda m: m.atan2(m.tensor([1, -1]), m.tensor([2, 2])),
]


def _dtype(module, name):
    return getattr(torch, name) if module is torch else name


@pytest.mark.parametrize("k", range(len(PROMOTIONS)))
def test_dtype_promotion_matches_pytorch(k):
    got, want = PROMOTIONS[k](nn), PROMOTIONS[k](torch)
    assert got.dtype == str(want.dtype).replace("torch.", "")
    np.testing.assert_allclose(got.numpy().astype("float64"), want.numpy().astype("float64"),
                               rtol=1e-6)


def test_integer_arithmetic_matches_pytorch():
    a_values, b_values = [7, -7, 5, -5, 0, 9], [2, 2, -3, -3, 4, 9]
    for fn in [lambda m, a, b: m.floor_divide(a, b), lambda m, a, b: m.remainder(a, b),
               lambda m, a, b: m.fmod(a, b), lambda m, a, b: m.div(a, b, rounding_mode="trunc"),
               lambda m, a, b: m.div(a, b, rounding_mode="floor"), lambda m, a, b: a // b,
               lambda m, a, b: a % b, lambda m, a, b: m.bitwise_and(a, b),
               lambda m, a, b: m.bitwise_or(a, b), lambda m, a, b: m.bitwise_xor(a, b),
               lambda m, a, b: m.pow(a.abs(), b.abs()), lambda m, a, b: m.maximum(a, b),
               lambda m, a, b: m.clamp(a, -2, 3), lambda m, a, b: m.clamp(a, b),
               lambda m, a, b: m.div(a, b), lambda m, a, b: a * b - b,
               lambda m, a, b: m.sign(a), lambda m, a, b: m.abs(a), lambda m, a, b: ~a,
               lambda m, a, b: m.relu(a), lambda m, a, b: m.floor(a) + m.round(b)]:
        got = fn(nn, nn.tensor(a_values), nn.tensor(b_values))
        want = fn(torch, torch.tensor(a_values), torch.tensor(b_values))
        assert got.dtype == str(want.dtype).replace("torch.", "")
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_comparisons_logical_and_bitwise_ops_are_bool_tensors_like_pytorch():
    a, b = [1.0, 2.0, float("nan"), 0.0], [2.0, 2.0, 1.0, -0.0]
    for name in ["lt", "le", "gt", "ge", "eq", "ne", "less", "less_equal", "greater",
                 "greater_equal", "not_equal", "logical_and", "logical_or", "logical_xor"]:
        got = getattr(nn, name)(nn.tensor(a), nn.tensor(b))
        want = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
        assert got.dtype == "bool" and got.tolist() == want.tolist(), name
    assert nn.logical_not(nn.tensor(a)).tolist() == torch.logical_not(torch.tensor(a)).tolist()
    flags, other = nn.tensor([True, False, True]), nn.tensor([True, True, False])
    assert (flags & other).tolist() == [True, False, False]
    assert (flags | other).tolist() == [True, True, True]
    assert (flags ^ other).tolist() == [False, True, True]
    assert (~flags).tolist() == [False, True, False]
    assert nn.logical_and(nn.tensor([0, 3]), nn.tensor([1.0, 2.0])).tolist() == [False, True]


def test_equal_is_a_python_bool():
    a = nn.tensor([[1, 2], [3, 4]])
    assert nn.equal(a, a.float()) is True
    assert nn.equal(a, nn.tensor([[1, 2], [3, 5]])) is False
    assert nn.equal(a, nn.tensor([1, 2, 3, 4])) is False


def test_nan_and_infinity_follow_pytorch():
    nan, inf = float("nan"), float("inf")
    x = [nan, inf, -inf, 1.5, -0.0]
    y = [1.0, nan, 2.0, 0.5, 0.0]
    for fn in [lambda m, a, b: m.maximum(a, b), lambda m, a, b: m.minimum(a, b),
               lambda m, a, b: m.clamp(a, -1, 1), lambda m, a, b: m.isnan(a),
               lambda m, a, b: m.isinf(a), lambda m, a, b: m.isfinite(a),
               lambda m, a, b: m.nan_to_num(a), lambda m, a, b: m.nan_to_num(a, 1.0, 2.0, -3.0),
               lambda m, a, b: m.sign(a), lambda m, a, b: m.expm1(b)]:
        got = fn(nn, nn.tensor(x), nn.tensor(y))
        want = fn(torch, torch.tensor(x), torch.tensor(y))
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert nn.isnan(nn.tensor([1, 2])).tolist() == [False, False]
    assert nn.isfinite(nn.tensor([1, 2])).tolist() == [True, True]


def test_round_to_decimals_and_half_to_even():
    x = [2.5, -0.5, 1.5, 1.2345, -2.675]
    np.testing.assert_array_equal(nn.round(nn.tensor(x)).numpy(),
                                  torch.round(torch.tensor(x)).numpy())
    np.testing.assert_allclose(nn.round(nn.tensor(x), decimals=2).numpy(),
                               torch.round(torch.tensor(x), decimals=2).numpy(), atol=1e-6)


def test_where_broadcasts_and_sends_gradients_to_both_sides():
    cond = nn.tensor([[True], [False]])
    x, y = leaf((2, 3)), leaf((3,))
    out = nn.where(cond, x, y)
    np.testing.assert_array_equal(out.detach().numpy(), np.where(
        cond.numpy(), x.detach().numpy(), y.detach().numpy()))
    assert out.grad_fn.name() == "WhereBackward0"
    assert gradcheck(lambda a, b: nn.where(cond, a, b), (x, y))
    assert gradcheck(lambda a: nn.where(cond, a, 0.5), (x,))
    assert nn.where(nn.tensor([True, False]), 1.0, 0).tolist() == [1.0, 0.0]


def test_masked_fill_with_a_number_and_a_zero_dim_tensor():
    x = leaf((2, 3))
    mask = nn.tensor([True, False, True])
    out = nn.masked_fill(x, mask, -1.0)
    want = np.where(mask.numpy(), -1.0, x.detach().numpy())
    np.testing.assert_array_equal(out.detach().numpy(), want)
    value = nn.tensor(0.5, dtype="float64", requires_grad=True)
    assert gradcheck(lambda a, v: x.masked_fill(mask, v) * a, (x, value))
    assert nn.tensor([1, 2, 3]).masked_fill(mask, 2.7).tolist() == [2, 2, 2]


def test_clamp_forms_and_their_gradients():
    x = leaf((3, 4), -2, 2)
    low, high = leaf((4,), -1, 0), leaf((3, 1), 0.2, 1)
    np.testing.assert_allclose(nn.clamp(x, low, high).detach().numpy(),
                               np.minimum(np.maximum(x.detach().numpy(), low.detach().numpy()),
                                          high.detach().numpy()))
    assert gradcheck(lambda a, lo, hi: nn.clamp(a, lo, hi), (x, low, high))
    assert gradcheck(lambda a: nn.clamp(a, -0.5, 0.5), (x,))
    assert gradcheck(lambda a: a.clamp_min(0.1) + a.clamp_max(-0.1) + a.clip(max=0.3), (x,))
    assert nn.clamp(x, min=-0.5).grad_fn.name() == "ClampMinBackward0"
    crossed = nn.clamp(nn.tensor([0.0, 5.0]), 2.0, 1.0)       # min > max gives max
    assert crossed.tolist() == [1.0, 1.0]


def test_ties_share_the_gradient_of_maximum_as_pytorch():
    a, b = nn.tensor([1.0, 2.0, 3.0], requires_grad=True), nn.tensor([1.0, 5.0, 0.0],
                                                                      requires_grad=True)
    nn.maximum(a, b).sum().backward()
    assert a.grad.tolist() == [0.5, 0.0, 1.0] and b.grad.tolist() == [0.5, 1.0, 0.0]


def test_double_backward_through_elementwise_gradients():
    x = leaf((2, 3), 0.5, 1.5)

    def first_derivative(a):
        (g,) = nn.autograd.grad((a.sin() * a.log() + a ** 3 / a.exp()).sum(), a,
                                create_graph=True)
        return g
    assert gradcheck(first_derivative, (x,))


def test_in_place_methods_write_into_the_tensor():
    x = nn.tensor([-1.5, 0.5, 2.5])
    x.clamp_(-1, 1)
    assert x.tolist() == [-1.0, 0.5, 1.0]
    x.abs_().sqrt_()
    np.testing.assert_allclose(x.numpy(), np.sqrt([1.0, 0.5, 1.0]))


def test_elementwise_ops_run_as_compiled_kernels():
    counts = nn.functional.kernel_calls
    before = dict(counts)
    x = nn.tensor([[0.5, -2.0, 1.0]], requires_grad=True)
    (nn.where(x > 0, x.sin(), x.clamp(-1, 1)) + x.atan2(x)).sum().backward()
    for name in ("sin", "cos", "clamp", "where", "atan2", "gt"):
        assert counts[name] > before.get(name, 0), name
