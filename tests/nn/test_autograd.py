"""nn.autograd: every operator's forward against numpy and its gradient against central
finite differences (gradcheck, float64), and PyTorch's autograd semantics."""
import gc

import numpy as np
import pytest

import nn
from nn.autograd import Function, GradcheckError, gradcheck

RNG = np.random.default_rng(0)


def leaf(*shape, low=-1.0, high=1.0):
    return nn.tensor(RNG.uniform(low, high, shape), dtype="float64", requires_grad=True)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# (name, function of tensors, the same function in numpy, operand shapes, value range)
CASES = [
    ("add", lambda a, b: a + b, np.add, [(3, 4), (4,)], (-1, 1)),
    ("add_scalar", lambda a: 2.5 + a, lambda a: 2.5 + a, [(5,)], (-1, 1)),
    ("sub", lambda a, b: a - b, np.subtract, [(2, 1, 3), (4, 1)], (-1, 1)),
    ("rsub", lambda a: 1 - a, lambda a: 1 - a, [(3,)], (-1, 1)),
    ("mul", lambda a, b: a * b, np.multiply, [(3, 1), (1, 5)], (-1, 1)),
    ("div", lambda a, b: a / b, np.divide, [(2, 3), (3,)], (0.5, 2)),
    ("rdiv", lambda a: 2 / a, lambda a: 2 / a, [(4,)], (0.5, 2)),
    ("neg", lambda a: -a, np.negative, [(7,)], (-1, 1)),
    ("pow3", lambda a: a ** 3, lambda a: a ** 3, [(2, 3)], (-1, 1)),
    ("pow_half", lambda a: a ** 0.5, np.sqrt, [(5,)], (0.5, 2)),
    ("pow0", lambda a: a ** 0, np.ones_like, [(3,)], (-1, 1)),
    ("exp", nn.exp, np.exp, [(3, 5)], (-1, 1)),
    ("log", nn.log, np.log, [(3, 5)], (0.5, 2)),
    ("sqrt", nn.sqrt, np.sqrt, [(17,)], (0.5, 2)),
    ("tanh", nn.tanh, np.tanh, [(2, 9)], (-2, 2)),
    ("sigmoid", nn.sigmoid, sigmoid, [(2, 9)], (-3, 3)),
    ("relu", nn.relu, lambda a: np.maximum(a, 0), [(4, 5)], (-1, 1)),
    ("mm", lambda a, b: a @ b, np.matmul, [(3, 4), (4, 5)], (-1, 1)),
    ("bmm", lambda a, b: a @ b, np.matmul, [(2, 3, 4), (2, 4, 2)], (-1, 1)),
    ("bmm_broadcast", lambda a, b: a @ b, np.matmul, [(2, 3, 4), (4, 2)], (-1, 1)),
    ("bmm_batch_broadcast", lambda a, b: a @ b, np.matmul, [(2, 1, 2, 3), (3, 3, 2)],
     (-1, 1)),
    ("matvec", lambda a, b: a @ b, np.matmul, [(3, 4), (4,)], (-1, 1)),
    ("vecmat", lambda a, b: a @ b, np.matmul, [(3,), (3, 2)], (-1, 1)),
    ("dot", lambda a, b: a @ b, np.matmul, [(5,), (5,)], (-1, 1)),
    ("sum_all", lambda a: a.sum(), np.sum, [(3, 4)], (-1, 1)),
    ("sum_dim", lambda a: a.sum(1), lambda a: a.sum(1), [(3, 4)], (-1, 1)),
    ("sum_dims_keepdim", lambda a: a.sum((0, 2), keepdim=True),
     lambda a: a.sum((0, 2), keepdims=True), [(2, 3, 4)], (-1, 1)),
    ("mean_all", lambda a: a.mean(), np.mean, [(3, 4)], (-1, 1)),
    ("mean_dim", lambda a: a.mean(-1, keepdim=True), lambda a: a.mean(-1, keepdims=True),
     [(3, 4)], (-1, 1)),
    ("max_dim", lambda a: a.max(1).values, lambda a: a.max(1), [(3, 5)], (-1, 1)),
    ("max_dim_keepdim", lambda a: a.max(0, keepdim=True)[0],
     lambda a: a.max(0, keepdims=True), [(4, 3)], (-1, 1)),
    ("max_all", lambda a: a.max(), np.max, [(3, 4)], (-1, 1)),
    ("reshape", lambda a: a.reshape(4, 3) * 1.0, lambda a: a.reshape(4, 3), [(3, 4)], (-1, 1)),
    ("view", lambda a: a.view(-1), lambda a: a.reshape(-1), [(2, 3)], (-1, 1)),
    ("transpose", lambda a: a.transpose(0, 2), lambda a: a.transpose(2, 1, 0), [(2, 3, 4)],
     (-1, 1)),
    ("t", lambda a: a.t(), np.transpose, [(2, 3)], (-1, 1)),
    ("permute", lambda a: a.permute(1, 2, 0), lambda a: a.transpose(1, 2, 0), [(2, 3, 4)],
     (-1, 1)),
    ("unsqueeze", lambda a: a.unsqueeze(1), lambda a: a[:, None], [(2, 3)], (-1, 1)),
    ("squeeze", lambda a: a.squeeze(), np.squeeze, [(1, 3, 1)], (-1, 1)),
    ("composite", lambda a, b: ((a * b).tanh() + a.exp() / b).sum(0),
     lambda a, b: (np.tanh(a * b) + np.exp(a) / b).sum(0), [(3, 2), (2,)], (0.5, 1.5)),
]


@pytest.mark.parametrize("name,fn,ref,shapes,span", CASES, ids=[c[0] for c in CASES])
def test_forward_matches_numpy_and_gradient_matches_finite_differences(name, fn, ref, shapes,
                                                                      span):
    inputs = [leaf(*s, low=span[0], high=span[1]) for s in shapes]
    out = fn(*inputs)
    want = ref(*[t.detach().numpy() for t in inputs])
    assert out.shape == np.shape(want)
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    assert gradcheck(fn, inputs)


def test_float32_forward_and_backward():
    a = nn.tensor(RNG.uniform(-1, 1, (33, 17)), dtype="float32", requires_grad=True)
    b = nn.tensor(RNG.uniform(-1, 1, (17, 9)), dtype="float32", requires_grad=True)
    (a @ b).sigmoid().sum().backward()
    an, bn = a.detach().numpy(), b.detach().numpy()
    s = sigmoid(an @ bn)
    np.testing.assert_allclose(a.grad.numpy(), (s * (1 - s)) @ bn.T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), an.T @ (s * (1 - s)), rtol=1e-5, atol=1e-6)
    assert a.grad.dtype == "float32"


def test_max_returns_values_and_first_indices():
    x = nn.tensor([[1.0, 3.0, 3.0], [5.0, 0.0, 5.0]], requires_grad=True)
    values, indices = x.max(1)
    assert values.tolist() == [3.0, 5.0] and indices.tolist() == [1, 0]
    assert indices.dtype == "int64" and not indices.requires_grad
    assert values.grad_fn.name() == "MaxBackward0"
    values.sum().backward()
    assert x.grad.tolist() == [[0, 1, 0], [1, 0, 0]]


def test_matmul_shape_mismatch_names_both_shapes():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(2x3 and 4x5\)"):
        nn.zeros(2, 3) @ nn.zeros(4, 5)
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        nn.zeros(2, 3) + nn.zeros(4)


# ----------------------------------------------------------------------------- semantics

def test_issue_example():
    w = nn.tensor([1.0], requires_grad=True)
    x = nn.tensor([2.0], requires_grad=True)
    a = nn.add(w, x)
    b = nn.add(w, 1)
    y = nn.mul(a, b)
    y.backward()
    assert w.grad.tolist() == [5.0] and x.grad.tolist() == [2.0]
    assert w.is_leaf and not a.is_leaf and w.grad_fn is None
    assert y.grad_fn.name() == "MulBackward0" and a.grad_fn.name() == "AddBackward0"
    assert type(y.grad_fn).__name__ == "MulBackward0"
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert a.grad is None
    (first, _), (second, _) = y.grad_fn.next_functions
    assert first is a.grad_fn and second is b.grad_fn
    assert first.next_functions[0][0].name() == "AccumulateGrad"
    assert first.next_functions[0][0] is second.next_functions[0][0]   # one per leaf


def test_gradients_accumulate_until_zeroed():
    w = nn.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    grad = w.grad
    (w * 3).sum().backward()
    assert w.grad.tolist() == [5.0, 7.0] and w.grad is grad      # accumulated in place
    w.grad.zero_()
    (w * 3).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]
    w.grad = None
    w.sum().backward()
    assert w.grad.tolist() == [1.0, 1.0]


def test_shared_gradient_buffers_are_not_aliased():
    w, x = nn.tensor([1.0], requires_grad=True), nn.tensor([1.0], requires_grad=True)
    (w + x).backward()
    w.grad.zero_()
    assert x.grad.tolist() == [1.0]


def test_second_backward_through_freed_graph_raises():
    x = nn.tensor([2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [8.0]
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_backward_errors():
    x = nn.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        nn.tensor([1.0]).backward()
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(nn.ones(3))
    (x * 2).backward(nn.tensor([1.0, 10.0]))
    assert x.grad.tolist() == [2.0, 20.0]


def test_retain_grad_and_hooks():
    x = nn.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    handle = x.register_hook(lambda g: seen.append(g.tolist()))
    doubled = x.register_hook(lambda g: g * 2)          # a hook may replace the gradient
    h = x * 3
    h.retain_grad()
    h.register_hook(lambda g: g + 1)
    h.sum().backward()
    assert h.grad.tolist() == [2.0, 2.0]                # after h's hook
    assert seen == [[6.0, 6.0]] and x.grad.tolist() == [12.0, 12.0]
    handle.remove()
    doubled.remove()
    x.grad = None
    (x * 3).sum().backward()
    assert seen == [[6.0, 6.0]] and x.grad.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="cannot register a hook"):
        nn.zeros(2).register_hook(print)


def test_no_grad_enable_grad_detach_requires_grad():
    x = nn.tensor([1.0], requires_grad=True)
    with nn.no_grad():
        y = x * 2
        assert not nn.is_grad_enabled()
        with nn.enable_grad():
            z = x * 2
    assert not y.requires_grad and y.grad_fn is None and z.requires_grad

    @nn.no_grad()
    def f(t):
        return t * 2
    assert not f(x).requires_grad and nn.is_grad_enabled()
    d = x.detach()
    assert not d.requires_grad and d.numpy() is not None
    d.numpy()[0] = 4.0
    assert x.item() == 4.0                               # same storage
    assert not (d * 2).requires_grad
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
        (x * 2).requires_grad_(False)


def test_autograd_grad():
    x = nn.tensor([1.0, 2.0], requires_grad=True)
    y = nn.tensor([3.0], requires_grad=True)
    h = x * y
    out = (h * h).sum()
    gx, gh = nn.autograd.grad(out, [x, h], retain_graph=True)
    assert gx.tolist() == [18.0, 36.0] and gh.tolist() == [6.0, 12.0]
    assert x.grad is None and y.grad is None and gx.grad_fn is None
    unused = nn.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        nn.autograd.grad(out, [x, unused], retain_graph=True)
    gx, gu = nn.autograd.grad(out, [x, unused], allow_unused=True, retain_graph=True)
    assert gu is None
    (gy,) = nn.autograd.grad(h, y, grad_outputs=nn.tensor([1.0, 1.0]))
    assert gy.tolist() == [3.0]
    with pytest.raises(RuntimeError, match="does not require grad"):
        nn.autograd.grad(out, nn.zeros(1))


def test_higher_order_gradient_of_cube():
    x = nn.tensor([2.0, -1.0], dtype="float64", requires_grad=True)
    (d1,) = nn.autograd.grad((x ** 3).sum(), x, create_graph=True)
    assert d1.tolist() == [12.0, 3.0] and d1.requires_grad
    (d2,) = nn.autograd.grad(d1.sum(), x, create_graph=True)
    assert d2.tolist() == [12.0, -6.0]
    (d3,) = nn.autograd.grad(d2.sum(), x)
    assert d3.tolist() == [6.0, 6.0]
    # backward(create_graph=True) leaves a .grad with a graph of its own
    y = nn.tensor([3.0], dtype="float64", requires_grad=True)
    (y.tanh() * y).sum().backward(create_graph=True)
    assert y.grad.grad_fn is not None


def test_second_derivatives_of_every_op_family_match_finite_differences():
    a, b = leaf(2, 3, low=0.5, high=1.5), leaf(3, 2, low=0.5, high=1.5)

    def first(p, q):
        out = ((p @ q).sigmoid() * (p.sum(0) / q.t().exp()).mean() + p.log().max(1).values
               .sum()).tanh().sum()
        return nn.autograd.grad(out, [p, q], create_graph=True)
    assert gradcheck(first, (a, b))


class Cube(Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return nn.tensor(x.detach().numpy() ** 3 * scale, dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x * ctx.scale, None


def test_custom_function():
    x = leaf(4)
    y = Cube.apply(x, 2.0)
    assert y.grad_fn.name() == "CubeBackward" and y.requires_grad
    assert gradcheck(lambda t: Cube.apply(t, 2.0), (x,))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * x.detach().numpy() ** 2)
    with nn.no_grad():
        assert not Cube.apply(x, 1.0).requires_grad


def test_custom_function_with_a_wrong_backward_is_reported():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    class WrongShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return g

    x = nn.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        Bad.apply(x).sum().backward()
    with pytest.raises(RuntimeError, match="invalid gradient at index 0"):
        WrongShape.apply(x).backward()


def test_gradcheck_catches_a_wrong_gradient():
    class Wrong(Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(Wrong.apply, (leaf(3),))
    assert gradcheck(Wrong.apply, (leaf(3),), raise_exception=False) is False


def test_graph_is_freed_with_its_outputs():
    x = nn.tensor([1.0], requires_grad=True)
    y = (x * 2).exp()
    node = y.grad_fn
    import weakref
    ref = weakref.ref(node)
    y.sum().backward()
    del y, node
    gc.collect()
    assert ref() is None


def _mlp_reference(x, w1, b1, w2, b2, target):
    """Loss and gradients of the MLP below, by hand-written backpropagation in numpy."""
    z1 = x @ w1 + b1
    h = np.maximum(z1, 0)
    out = np.tanh(h @ w2 + b2)
    diff = out - target
    dz2 = 2 * diff / diff.size * (1 - out * out)
    dh = dz2 @ w2.T
    dz1 = dh * (z1 > 0)
    return (diff ** 2).mean(), (x.T @ dz1, dz1.sum(0), h.T @ dz2, dz2.sum(0))


def test_mlp_gradients_match_numpy_backprop_and_torch():
    x_np = RNG.standard_normal((8, 5)).astype("float32")
    w1_np, b1_np = RNG.standard_normal((5, 16)).astype("float32"), RNG.standard_normal(16)
    w2_np, b2_np = RNG.standard_normal((16, 3)).astype("float32"), RNG.standard_normal(3)
    target = RNG.standard_normal((8, 3)).astype("float32")
    values = [v.astype("float32") for v in (w1_np, b1_np, w2_np, b2_np)]

    def loss(lib, make):
        w1, b1, w2, b2 = (make(v) for v in values)
        h = (lib.tensor(x_np) @ w1 + b1).relu()
        out = (h @ w2 + b2).tanh()
        err = ((out - lib.tensor(target)) ** 2).mean()
        err.backward()
        return err, (w1, b1, w2, b2)

    ours, params = loss(nn, lambda v: nn.tensor(v, requires_grad=True))
    ref_loss, ref_grads = _mlp_reference(x_np, *values, target)
    np.testing.assert_allclose(ours.item(), ref_loss, rtol=1e-5)
    for p, g in zip(params, ref_grads):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-4, atol=1e-6)
    try:                                   # also PyTorch itself, where it is installed
        import torch
    except ImportError:
        return
    ref, ref_params = loss(torch, lambda v: torch.tensor(v, requires_grad=True))
    np.testing.assert_allclose(ours.item(), ref.item(), rtol=1e-5)
    for p, q in zip(params, ref_params):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_backward_with_inputs_accumulates_only_there():
    a = nn.tensor([1.0, 2.0], requires_grad=True)
    b = nn.tensor([3.0, 4.0], requires_grad=True)
    h = a * b
    (h * h).sum().backward(inputs=[a, h])
    np.testing.assert_allclose(a.grad.numpy(), [2 * 1.0 * 3 * 3, 2 * 2.0 * 4 * 4])
    np.testing.assert_allclose(h.grad.numpy(), [6.0, 16.0])
    assert b.grad is None
    with pytest.raises(RuntimeError, match="cannot be empty"):
        (a * 2).sum().backward(inputs=[])
