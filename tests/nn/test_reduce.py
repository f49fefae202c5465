"""nn's reductions, cumulative operators and softmax family: forward against PyTorch (and so
numpy) given the same inputs, gradients against finite differences (float64), PyTorch's
gradient rules at ties, integer and bool inputs, 0-d tensors, double backward."""
import warnings

import numpy as np
import pytest
import torch

import nn
from nn.autograd import gradcheck

RNG = np.random.default_rng(11)
X = RNG.uniform(0.5, 1.5, (3, 4, 5))       # one input for the forward comparisons
SMALL = RNG.uniform(0.5, 1.5, (2, 3, 3))   # and one for gradcheck


# (name, the same call on nn and torch)
CASES = [
    ("sum_all", lambda m, a: m.sum(a)),
    ("sum_dims_keepdim", lambda m, a: m.sum(a, (0, 2), keepdim=True)),
    ("sum_neg_dim", lambda m, a: a.sum(-1)),
    ("mean_all", lambda m, a: m.mean(a)),
    ("mean_dim", lambda m, a: m.mean(a, 1)),
    ("max_all", lambda m, a: m.max(a)),
    ("max_dim", lambda m, a: m.max(a, 1).values),
    ("min_dim_keepdim", lambda m, a: m.min(a, 2, keepdim=True)[0]),
    ("amax", lambda m, a: m.amax(a, (0, 2))),
    ("amin", lambda m, a: m.amin(a, -1, keepdim=True)),
    ("var_all", lambda m, a: m.var(a)),
    ("var_dim", lambda m, a: m.var(a, 1)),
    ("var_correction0", lambda m, a: m.var(a, (0, 2), correction=0, keepdim=True)),
    ("std_all", lambda m, a: m.std(a)),
    ("std_biased", lambda m, a: m.std(a, 2, unbiased=False)),
    ("prod_dim", lambda m, a: m.prod(a, 1)),
    ("prod_all", lambda m, a: m.prod(a[0])),
    ("logsumexp", lambda m, a: m.logsumexp(a, 1)),
    ("logsumexp_dims", lambda m, a: m.logsumexp(a, (0, 2), keepdim=True)),
    ("softmax_mid", lambda m, a: m.softmax(a, 1)),
    ("softmax_last", lambda m, a: m.softmax(a, -1)),
    ("log_softmax_first", lambda m, a: m.log_softmax(a, 0)),
    ("log_softmax_last", lambda m, a: m.log_softmax(a, 2)),
    ("softmin", lambda m, a: (nn.functional if m is nn else torch.nn.functional).softmin(a, 1)),
    ("cumsum", lambda m, a: m.cumsum(a, 1)),
    ("cumprod", lambda m, a: m.cumprod(a, 2)),
    ("norm", lambda m, a: m.norm(a)),
    ("norm_dim", lambda m, a: m.norm(a, dim=1)),
    ("norm_p1", lambda m, a: m.norm(a, p=1, dim=(0, 1))),
    ("norm_p3", lambda m, a: m.norm(a, p=3, dim=2, keepdim=True)),
    ("norm_inf", lambda m, a: m.norm(a, p=float("inf"), dim=0)),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_reduction_matches_pytorch_and_finite_differences(name, fn):
    got = fn(nn, nn.tensor(X, dtype="float32"))
    want = fn(torch, torch.tensor(X, dtype=torch.float32))
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=1e-6)
    assert gradcheck(lambda a: fn(nn, a), (nn.tensor(SMALL, requires_grad=True),))


@pytest.mark.parametrize("name,fn", [c for c in CASES if c[0] in (
    "max_dim", "amax", "var_dim", "std_all", "prod_dim", "logsumexp", "softmax_mid",
    "log_softmax_last", "cumsum", "norm_dim")])
def test_gradient_matches_pytorch(name, fn):
    a, t = nn.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    out, want = fn(nn, a), fn(torch, t)
    g = RNG.standard_normal(want.shape)
    out.backward(nn.tensor(g))
    want.backward(torch.tensor(g))
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert out.grad_fn.name() == want.grad_fn.name()


def test_max_along_a_dim_returns_values_and_indices():
    x = nn.tensor([[1.0, 5.0, 5.0], [7.0, 0.0, 7.0]])
    values, indices = nn.max(x, 1)
    assert values.tolist() == [5.0, 7.0] and indices.tolist() == [1, 0]
    result = x.min(0)
    assert result.values.tolist() == [1.0, 0.0, 5.0] and result.indices.tolist() == [0, 1, 0]
    assert nn.max(x, nn.tensor([6.0])).tolist() == [[6, 6, 6], [7, 6, 7]]   # maximum


def test_ties_route_the_gradient_as_pytorch():
    values = [[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]
    for fn in [lambda m, a: m.max(a, 1).values, lambda m, a: m.amax(a, 1), lambda m, a: m.max(a),
               lambda m, a: m.amin(a, (0, 1)), lambda m, a: m.min(a, 0)[0]]:
        a, t = nn.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
        fn(nn, a).sum().backward()
        fn(torch, t).sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy())


def test_argmax_argmin_flatten_without_dim():
    x = nn.tensor([[1.0, 9.0, 3.0], [9.0, -4.0, 2.0]])
    assert nn.argmax(x).item() == 1 and nn.argmin(x).item() == 4
    assert nn.argmax(x, 0).tolist() == [1, 0, 0]
    assert x.argmin(1, keepdim=True).tolist() == [[0], [1]]
    assert nn.argmax(x, keepdim=True).shape == (1, 1)


def test_integer_and_bool_reductions_follow_pytorch():
    values = [[1, 2, -3], [4, 0, 6]]
    for fn in [lambda m, a: m.sum(a), lambda m, a: m.sum(a > 0, 1),
               lambda m, a: m.sum(a, dtype=getattr(m, "float32", None) or "float32"),
               lambda m, a: m.max(a > 0), lambda m, a: m.amax(a, 0),
               lambda m, a: m.prod(a, 1), lambda m, a: m.prod(a > -5),
               lambda m, a: m.all(a), lambda m, a: m.any(a, 1), lambda m, a: m.all(a > -5, 0),
               lambda m, a: m.cumsum(a, 1), lambda m, a: m.cumsum(a > 0, 0),
               lambda m, a: m.cumprod(a, 1), lambda m, a: m.max(a, 1).values,
               lambda m, a: m.argmax(a, 1), lambda m, a: m.amin(a > 0, 1)]:
        got = fn(nn, nn.tensor(values))
        want = fn(torch, torch.tensor(values))
        assert got.dtype == str(want.dtype).replace("torch.", "")
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_any_all_on_floats_and_zero_dim_tensors():
    x = nn.tensor([[0.0, 0.5], [0.0, 0.0]])
    assert nn.any(x).item() and not nn.all(x).item()
    assert nn.any(x, 0).tolist() == [False, True] and nn.all(x, 1, keepdim=True).shape == (2, 1)
    s = nn.tensor(3.0, requires_grad=True)
    for out in (s.sum(), s.mean(), s.amax(), s.max(), s.logsumexp(0), s.softmax(0), s.prod(),
                s.cumsum(0)):
        assert out.shape == ()
    s.sum().backward()
    assert s.grad.item() == 1.0


def test_sum_and_mean_take_dtype():
    x = nn.tensor([[1, 2], [3, 4]], dtype="int32")
    assert nn.sum(x).dtype == "int64"
    assert nn.mean(x, dtype="float64").item() == 2.5
    assert nn.sum(x, 0, dtype="float32").tolist() == [4.0, 6.0]


def test_var_and_std_accept_unbiased_positionally_and_warn_without_degrees_of_freedom():
    x = nn.tensor(X, dtype="float32")
    np.testing.assert_allclose(nn.var(x, False).item(), X.var(), rtol=1e-5)
    np.testing.assert_allclose(nn.std(x, 1, True, True).numpy(),
                               X.std(1, ddof=1, keepdims=True), rtol=1e-5)
    var, mean = nn.var_mean(x, 2)
    np.testing.assert_allclose(var.numpy(), X.var(2, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(mean.numpy(), X.mean(2), rtol=1e-5)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        assert np.isnan(nn.var(nn.tensor([1.0])).item())


def test_logsumexp_and_log_softmax_are_stable():
    big = nn.tensor([[1000.0, 1000.0], [-1000.0, -1000.0]])
    np.testing.assert_allclose(nn.logsumexp(big, 1).numpy(), [1000 + np.log(2),
                                                              -1000 + np.log(2)], rtol=1e-6)
    np.testing.assert_allclose(nn.log_softmax(big, 1).numpy(), np.full((2, 2), -np.log(2)),
                               rtol=1e-6)
    np.testing.assert_allclose(nn.softmax(big, 1).numpy(), np.full((2, 2), 0.5))
    ninf = nn.tensor([float("-inf"), float("-inf")])
    assert nn.logsumexp(ninf, 0).item() == float("-inf")


def test_softmax_without_dim_warns_and_picks_pytorch_dim():
    x = nn.tensor(X[0], dtype="float32")
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        out = nn.softmax(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.nn.functional.softmax(torch.tensor(X[0], dtype=torch.float32))
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-6)
    assert nn.softmax(nn.tensor([1, 2]), 0, dtype="float64").dtype == "float64"


@pytest.mark.parametrize("fn", [lambda a: a.softmax(1), lambda a: a.log_softmax(-1),
                                lambda a: a.logsumexp(1), lambda a: a.var(0),
                                lambda a: a.prod(1), lambda a: nn.norm(a, dim=1)],
                         ids=["softmax", "log_softmax", "logsumexp", "var", "prod", "norm"])
def test_double_backward(fn):
    x = nn.tensor(SMALL[0], requires_grad=True)
    weights = nn.tensor(RNG.standard_normal(fn(x).shape))

    def gradient(a):
        (g,) = nn.autograd.grad((fn(a) * weights).sum(), a, create_graph=True)
        return g
    assert gradcheck(gradient, (x,))


def test_prod_gradient_is_exact_with_zeros():
    a = nn.tensor([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0]], requires_grad=True)
    t = torch.tensor(a.detach().numpy(), requires_grad=True)
    nn.prod(a, 1).sum().backward()
    torch.prod(t, 1).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), t.grad.numpy())


def test_norm_gradient_is_zero_at_zero():
    z = nn.zeros(3, requires_grad=True)
    nn.norm(z).backward()
    assert z.grad.tolist() == [0.0, 0.0, 0.0]


def test_fused_reductions_run_as_one_kernel_each():
    counts = nn.functional.kernel_calls
    before = dict(counts)
    x = nn.tensor(X, dtype="float32", requires_grad=True)
    x.log_softmax(1).sum().backward()
    x.var(2)
    assert counts["log_softmax"] == before.get("log_softmax", 0) + 1
    assert counts["log_softmax_backward"] == before.get("log_softmax_backward", 0) + 1
    assert counts["variance"] == before.get("variance", 0) + 1
