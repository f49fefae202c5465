"""Activation functions and layers: forward and gradient against PyTorch given the same input
(and weights for PReLU), gradients and second derivatives against finite differences
(float64), PyTorch's reprs and in-place behaviour, one fused kernel each way."""
import numpy as np
import pytest
import torch

import nn
import nn.functional as F

RNG = np.random.default_rng(3)
X = RNG.uniform(-4, 4, (3, 4, 6))               # straddles every activation's corners
SMALL = RNG.uniform(-4, 4, (2, 4))
gradcheck = nn.autograd.gradcheck

# (functional name, keyword arguments)
FUNCTIONS = [
    ("relu", {}), ("leaky_relu", {}), ("leaky_relu", {"negative_slope": 0.2}), ("elu", {}),
    ("elu", {"alpha": 0.5}), ("selu", {}), ("celu", {"alpha": 2.0}), ("gelu", {}),
    ("gelu", {"approximate": "tanh"}), ("softplus", {}),
    ("softplus", {"beta": 2.0, "threshold": 3.0}), ("silu", {}), ("mish", {}),
    ("hardtanh", {}), ("hardtanh", {"min_val": -2.0, "max_val": 0.5}), ("relu6", {}),
    ("hardsigmoid", {}), ("hardswish", {}), ("softsign", {}), ("logsigmoid", {}),
    ("threshold", {"threshold": 0.5, "value": -1.0}), ("glu", {"dim": 1}), ("sigmoid", {}),
    ("tanh", {}),
]
IDS = [f"{name}{'-' + '-'.join(map(str, kw.values())) if kw else ''}" for name, kw in FUNCTIONS]


def _call(module, name, x, kw):
    return getattr(module, name)(x, **kw)


@pytest.mark.parametrize("name,kw", FUNCTIONS, ids=IDS)
def test_activation_matches_pytorch_forward_and_backward(name, kw):
    x, t = nn.tensor(X, dtype="float32", requires_grad=True), torch.tensor(
        X, dtype=torch.float32, requires_grad=True)
    out, want = _call(F, name, x, kw), _call(torch.nn.functional, name, t, kw)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    g = RNG.standard_normal(want.shape).astype("float32")
    out.backward(nn.tensor(g))
    want.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)
    if name != "softsign":          # PyTorch composes softsign of a division
        assert out.grad_fn.name() == want.grad_fn.name()


@pytest.mark.parametrize("name,kw", FUNCTIONS, ids=IDS)
def test_activation_gradient_and_second_derivative(name, kw):
    a = nn.tensor(SMALL, requires_grad=True)
    assert gradcheck(lambda v: _call(F, name, v, kw), (a,))
    weights = nn.tensor(RNG.standard_normal(_call(F, name, a, kw).shape))

    def gradient(v, w):
        (g,) = nn.autograd.grad(_call(F, name, v, kw), v, w, create_graph=True)
        return g
    assert gradcheck(gradient, (a, weights.double().requires_grad_()))


def test_second_derivative_matches_pytorch():
    for name, kw in [("gelu", {}), ("elu", {}), ("mish", {}), ("softplus", {}), ("silu", {}),
                     ("logsigmoid", {}), ("hardswish", {}), ("glu", {"dim": 0})]:
        x, t = nn.tensor(SMALL, requires_grad=True), torch.tensor(SMALL, requires_grad=True)
        (gx,) = nn.autograd.grad(_call(F, name, x, kw).sum(), x, create_graph=True)
        (gt,) = torch.autograd.grad(_call(torch.nn.functional, name, t, kw).sum(), t,
                                    create_graph=True)
        (gx * gx).sum().backward()
        (gt * gt).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_prelu_matches_pytorch_per_channel_and_shared():
    for weight in ([0.1, 0.2, 0.3, 0.4], [0.25]):
        x, t = nn.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
        w, wt = nn.tensor(weight, dtype="float64", requires_grad=True), torch.tensor(
            weight, dtype=torch.float64, requires_grad=True)
        out, want = F.prelu(x, w), torch.nn.functional.prelu(t, wt)
        np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy())
        g = RNG.standard_normal(want.shape)
        out.backward(nn.tensor(g))
        want.backward(torch.tensor(g))
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())
        np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-12)
    assert gradcheck(F.prelu, (nn.tensor(X[:2, :, :2], requires_grad=True),
                               nn.tensor([0.1, -0.2, 0.3, 0.5], dtype="float64",
                                         requires_grad=True)))


LAYERS = ["ReLU()", "LeakyReLU(0.2)", "PReLU()", "PReLU(4, init=0.1)", "ELU(alpha=0.7)",
          "SELU()", "CELU(1.5)", "GELU()", "GELU(approximate='tanh')", "SiLU()", "Mish()",
          "Hardtanh(-0.5, 2.0)", "ReLU6()", "Hardsigmoid()", "Hardswish()", "Softplus(2, 5)",
          "Softsign()", "LogSigmoid()", "Threshold(0.1, 20.0)", "GLU()", "Softmax(1)",
          "LogSoftmax(dim=-1)", "Softmin(2)", "Sigmoid()", "Tanh()", "Hardshrink()",
          "Softshrink(0.3)", "Tanhshrink()"]


@pytest.mark.parametrize("spec", LAYERS)
def test_layers_match_pytorch(spec):
    layer, reference = eval("nn." + spec), eval("torch.nn." + spec)
    assert repr(layer) == repr(reference)
    x = nn.tensor(X, dtype="float32", requires_grad=True)
    t = torch.tensor(X, dtype=torch.float32, requires_grad=True)
    out, want = layer(x), reference(t)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    out.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)
    for (name, p), (_, q) in zip(layer.named_parameters(), reference.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5)
    assert [n for n, _ in layer.named_parameters()] == [n for n, _ in
                                                         reference.named_parameters()]


def test_inplace_layers_write_into_their_input_and_print_it():
    for spec in ["ReLU(inplace=True)", "LeakyReLU(0.1, True)", "ELU(inplace=True)",
                 "SELU(True)", "CELU(inplace=True)", "SiLU(True)", "Mish(True)",
                 "Hardtanh(inplace=True)", "ReLU6(True)", "Hardsigmoid(True)",
                 "Hardswish(True)", "Threshold(0.0, -1.0, True)"]:
        layer, reference = eval("nn." + spec), eval("torch.nn." + spec)
        assert repr(layer) == repr(reference)
        x, t = nn.tensor(X[0], dtype="float32"), torch.tensor(X[0], dtype=torch.float32)
        out = layer(x)
        reference(t)
        assert out is x
        np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


def test_inplace_layers_inside_the_graph_give_pytorch_gradients():
    layers = ["ReLU(inplace=True)", "LeakyReLU(0.1, True)", "ELU(inplace=True)",
              "Hardtanh(-0.5, 0.5, True)", "SiLU(True)"]
    a, t = nn.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    out, want = a * 1.5, t * 1.5
    for spec in layers:
        out, want = eval("nn." + spec)(out) * 2, eval("torch.nn." + spec)(want) * 2
    out.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_inplace_activation_on_a_leaf_that_requires_grad_is_refused():
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        nn.ReLU(inplace=True)(nn.tensor([1.0, -1.0], requires_grad=True))


def test_integer_inputs_follow_pytorch():
    i = nn.tensor([-7, 2, 9])
    for name in ("relu", "relu6", "hardtanh"):
        got, want = getattr(F, name)(i), getattr(torch.nn.functional, name)(torch.tensor(
            [-7, 2, 9]))
        assert got.dtype == "int64" and got.tolist() == want.tolist()


def test_activations_run_one_fused_kernel_each_way():
    counts = nn.functional.kernel_calls
    before = dict(counts)
    x = nn.tensor(X, dtype="float32", requires_grad=True)
    F.gelu(F.elu(x)).sum().backward()
    for name in ("gelu", "gelu_backward", "elu", "elu_backward"):
        assert counts[name] == before.get(name, 0) + 1, name


# the corners themselves: PyTorch picks a side at each kink (hardswish: slope 0 at -3, 1 at 3)
CORNERS = np.array([-6.5, -6, -4, -3, -2.5, -1, -0.5, 0, 0.5, 1, 2.9, 3, 3.5, 6, 6.5],
                   "float32")


# glu halves its input: it has no corners of this kind
CORNER_CASES = [(case, i) for case, i in zip(FUNCTIONS, IDS) if case[0] != "glu"]


@pytest.mark.parametrize("name,kw", [c for c, _ in CORNER_CASES] + [
    ("hardshrink", {}), ("softshrink", {"lambd": 1.0}), ("tanhshrink", {})],
    ids=[i for _, i in CORNER_CASES] + ["hardshrink", "softshrink-1.0", "tanhshrink"])
def test_activation_gradients_at_the_corners_match_pytorch(name, kw):
    x = nn.tensor(CORNERS.copy(), requires_grad=True)
    t = torch.tensor(CORNERS.copy(), requires_grad=True)
    out, want = _call(F, name, x, kw), _call(torch.nn.functional, name, t, kw)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    out.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_softshrink_refuses_a_negative_lambda():
    with pytest.raises(RuntimeError, match="softshrink: lambda must be greater or equal to 0"):
        F.softshrink(nn.ones(2), -1.0)
