"""Matrix products and the Linear family: forward against numpy, gradients against finite
differences (and twice, through create_graph), layers against PyTorch given the same weights,
and the kernels that ran (one fused dense forward; GEMMs without transposed copies backward)."""
import numpy as np
import pytest
import torch

import nn
from nn.autograd import gradcheck
from nn.functions import kernel_calls

rng = np.random.default_rng(0)


def t64(*shape, requires_grad=True):
    return nn.tensor(rng.standard_normal(shape), requires_grad=requires_grad)


def test_products_match_numpy():
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((3, 7))
    np.testing.assert_allclose(nn.mm(nn.tensor(a), nn.tensor(b)).numpy(), a @ b, rtol=1e-12)
    x, y = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 3, 4))
    np.testing.assert_allclose(nn.bmm(nn.tensor(x), nn.tensor(y)).numpy(), x @ y, rtol=1e-12)
    np.testing.assert_allclose(nn.matmul(nn.tensor(x), nn.tensor(b)).numpy(), x @ b,
                               rtol=1e-12)
    v, w = rng.standard_normal(3), rng.standard_normal(3)
    np.testing.assert_allclose(nn.mv(nn.tensor(a), nn.tensor(v)).numpy(), a @ v, rtol=1e-12)
    assert nn.dot(nn.tensor(v), nn.tensor(w)).item() == pytest.approx(v @ w, rel=1e-12)
    np.testing.assert_allclose(nn.outer(nn.tensor(v), nn.tensor(w)).numpy(), np.outer(v, w))
    c = rng.standard_normal(7)
    np.testing.assert_allclose(nn.addmm(nn.tensor(c), nn.tensor(a), nn.tensor(b), beta=0.5,
                                        alpha=2).numpy(), 0.5 * c + 2 * (a @ b), rtol=1e-12)


def test_linear_forward_matches_numpy_and_torch():
    x, w, b = (rng.standard_normal(s).astype("float32") for s in ((2, 5, 3), (4, 3), (4,)))
    ours = nn.linear(nn.tensor(x), nn.tensor(w), nn.tensor(b)).numpy()
    np.testing.assert_allclose(ours, x @ w.T + b, rtol=1e-5, atol=1e-6)
    ref = torch.nn.functional.linear(*map(torch.from_numpy, (x, w, b))).numpy()
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)
    assert nn.linear(nn.tensor(x[0, 0]), nn.tensor(w)).shape == (4,)


@pytest.mark.parametrize("shape", [(5, 3), (2, 5, 3), (3,)])
def test_linear_gradcheck(shape):
    x, w, b = t64(*shape), t64(4, 3), t64(4)
    assert gradcheck(nn.linear, (x, w, b))
    assert gradcheck(nn.linear, (x, w))


def test_products_gradcheck():
    assert gradcheck(nn.mm, (t64(5, 3), t64(3, 7)))
    assert gradcheck(nn.bmm, (t64(2, 5, 3), t64(2, 3, 4)))
    assert gradcheck(nn.matmul, (t64(2, 5, 3), t64(3, 4)))
    assert gradcheck(nn.bilinear, (t64(5, 3), t64(5, 2), t64(4, 3, 2), t64(4)))
    assert gradcheck(lambda c, a, b: nn.addmm(c, a, b, alpha=2), (t64(7), t64(5, 3), t64(3, 7)))


@pytest.mark.parametrize("ta, tb", [(False, False), (False, True), (True, False),
                                    (True, True)])
def test_batched_product_reads_operands_transposed(ta, tb):
    """The batched kernel reads either operand transposed in place; the backward of each form
    is written in the others."""
    a = t64(2, 4, 3) if ta else t64(2, 3, 4)
    b = t64(1, 5, 4) if tb else t64(1, 4, 5)            # a batch of 1 broadcasts
    A, B = a.detach().numpy(), b.detach().numpy()
    want = (A.transpose(0, 2, 1) if ta else A) @ (B.transpose(0, 2, 1) if tb else B)
    product = nn.functions.linalg.Bmm.apply
    np.testing.assert_allclose(product(a, b, ta, tb).detach().numpy(), want, rtol=1e-12)
    assert gradcheck(lambda a, b: product(a, b, ta, tb), (a, b))
    kernel_calls.clear()
    product(a, b, ta, tb).backward(nn.ones(2, 3, 5, dtype="float64"))
    assert set(kernel_calls) <= {"batch_matmul", "sum"}      # sum: b's broadcast batch


def test_double_backward():
    def grads(x, w, b):
        y = nn.linear(x, w, b)
        return nn.autograd.grad((y * y).sum(), (x, w), create_graph=True)
    assert gradcheck(grads, (t64(5, 3), t64(4, 3), t64(4)))

    def bmm_grads(a, b):
        y = nn.bmm(a, b)
        return nn.autograd.grad((y * y).sum(), (a, b), create_graph=True)
    assert gradcheck(bmm_grads, (t64(2, 3, 4), t64(2, 4, 5)))


def test_linear_runs_one_fused_kernel_and_gemms_backward():
    x = nn.randn(6, 3, requires_grad=True)
    lin = nn.Linear(3, 4)
    kernel_calls.clear()
    y = lin(x)
    assert dict(kernel_calls) == {"dense": 1}
    assert y.grad_fn.name() == "AddmmBackward0"
    kernel_calls.clear()
    y.backward(nn.ones(6, 4))
    # grad x = g @ W (matmul), grad W = g^T @ x (matmul_tn, reading g in place), grad b a sum
    assert dict(kernel_calls) == {"matmul": 1, "matmul_tn": 1, "sum": 1}


def copy_linear(ours, ref):
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(ours.weight.detach().numpy()))
        if ours.bias is not None:
            ref.bias.copy_(torch.from_numpy(ours.bias.detach().numpy()))


def compare_grads(ours, ref):
    for (name, p), (ref_name, q) in zip(ours.named_parameters(), ref.named_parameters()):
        assert name == ref_name
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("bias", [True, False])
def test_linear_module_matches_torch(bias):
    ours, ref = nn.Linear(3, 4, bias=bias), torch.nn.Linear(3, 4, bias=bias)
    copy_linear(ours, ref)
    x = rng.standard_normal((2, 5, 3)).astype("float32")
    xo, xr = nn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yo, yr = ours(xo), ref(xr)
    np.testing.assert_allclose(yo.detach().numpy(), yr.detach().numpy(), rtol=1e-5, atol=1e-6)
    (yo * yo).sum().backward()
    (yr * yr).sum().backward()
    np.testing.assert_allclose(xo.grad.numpy(), xr.grad.numpy(), rtol=1e-4, atol=1e-5)
    compare_grads(ours, ref)
    assert repr(ours) == repr(ref)


def test_bilinear_module_matches_torch():
    nn.manual_seed(0)
    ours, ref = nn.Bilinear(3, 2, 4), torch.nn.Bilinear(3, 2, 4)
    bound = 1 / np.sqrt(3)
    assert np.abs(ours.weight.detach().numpy()).max() <= bound
    copy_linear(ours, ref)
    a, b = rng.standard_normal((5, 3)).astype("float32"), rng.standard_normal((5, 2)).astype(
        "float32")
    yo = ours(nn.tensor(a), nn.tensor(b))
    yr = ref(torch.from_numpy(a), torch.from_numpy(b))
    np.testing.assert_allclose(yo.detach().numpy(), yr.detach().numpy(), rtol=1e-5, atol=1e-5)
    yo.sum().backward()
    yr.sum().backward()
    compare_grads(ours, ref)
    assert repr(ours) == repr(ref) and list(ours.state_dict()) == list(ref.state_dict())


def test_lazy_linear_infers_in_features():
    lazy = nn.LazyLinear(4)
    assert repr(lazy) == repr(torch.nn.LazyLinear(4))
    assert isinstance(lazy.weight, nn.UninitializedParameter)
    assert lazy(nn.randn(2, 3)).shape == (2, 4)
    assert type(lazy) is nn.Linear and lazy.in_features == 3
    assert lazy.weight.shape == (4, 3) and lazy.bias.shape == (4,)
    assert type(lazy.weight) is nn.Parameter and lazy.weight.requires_grad
    assert np.abs(lazy.weight.detach().numpy()).max() <= 1 / np.sqrt(3)
    # a state_dict gives an uninitialized LazyLinear its shapes
    lazy2 = nn.LazyLinear(4)
    lazy2.load_state_dict(lazy.state_dict())
    np.testing.assert_array_equal(lazy2.weight.detach().numpy(), lazy.weight.detach().numpy())
    x = nn.randn(1, 3)
    np.testing.assert_array_equal(lazy2(x).detach().numpy(), lazy(x).detach().numpy())
    assert type(lazy2) is nn.Linear and lazy2.in_features == 3


def test_flatten_unflatten_match_torch():
    x = rng.standard_normal((2, 3, 4, 5)).astype("float32")
    for args in ((), (0, 2), (1, -2), (-1, -1)):
        assert nn.Flatten(*args)(nn.tensor(x)).shape == torch.nn.Flatten(*args)(
            torch.from_numpy(x)).shape
    assert repr(nn.Flatten()) == repr(torch.nn.Flatten())
    flat = nn.Flatten()(nn.tensor(x))
    np.testing.assert_array_equal(flat.numpy(), x.reshape(2, -1))
    back = nn.Unflatten(1, (3, -1, 5))(flat)
    np.testing.assert_array_equal(back.numpy(), x)
    assert repr(nn.Unflatten(1, (3, 20))) == repr(torch.nn.Unflatten(1, (3, 20)))
    xg = t64(2, 3, 2)
    assert gradcheck(lambda t: nn.Unflatten(-1, (2, 3))(nn.Flatten()(t)), (xg,))
