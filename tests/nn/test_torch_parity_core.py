"""nn's core against PyTorch: values and gradients of in-place writes, functional in-place
forms, tensors from lists of tensors, the composed torch-level functions, autograd.Function
with ``setup_context``, leaves frozen between forward and backward, overlapping in-place
writes."""
import numpy as np
import pytest
import torch

import nn
import nn.functional as F
import torch.nn.functional as TF

from torch_compare import close, pair

X = np.array([[0.5, 1.0], [2.0, 3.0]], np.float32)


def _both(build, array=X, device="cpu"):
    """``build(lib, x)`` on an nn leaf (on ``device``) and a torch leaf holding ``array``,
    ``.sum().backward()`` of the result; returns (ours, theirs, our grad, their grad)."""
    ours, theirs = pair(array)
    if device != "cpu":
        ours = nn.tensor(array, requires_grad=True, device=device)
    a, b = build(nn, ours), build(torch, theirs)
    a.sum().backward()
    b.sum().backward()
    return a, b, ours.grad, theirs.grad


def _host(t):
    return t.cpu() if t is not None and t.is_cuda else t


# ----------------------------------------------------------------------------- 1. CopySlices


def _set_row(L, x):
    y = x * 1
    y[0] = 0.0
    return y.sqrt()


def _set_mask(L, x):
    y = x * 1
    y[L.tensor([[True, False], [False, True]])] = 0.0
    return y.sqrt()


def _set_index(L, x):
    y = x * 1
    y[L.tensor([1])] = 0.0
    return y.sqrt()


def _set_inf_then_lse(L, x):
    y = x * 1
    y[0] = float("-inf")
    return y.logsumexp(1)[1:]


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("build", [_set_row, _set_mask, _set_index, _set_inf_then_lse])
def test_overwritten_elements_get_zero_gradient_even_under_inf(build, device):
    """The gradient of an element overwritten in place is exactly 0, even where the
    gradient downstream is inf or NaN there (sqrt at 0, logsumexp of -inf)."""
    a, b, ga, gb = _both(build, device=device)
    close(_host(a), b)
    close(_host(ga), gb)
    assert not np.isnan(_host(ga).numpy()).any()


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("build", [
    lambda L, x: x.relu().sqrt(),                               # relu's mask meets sqrt'(0)
    lambda L, x: (x.floor() + x.sign()) * float("inf"),        # floor/sign: zeros
    lambda L, x: x.max(1)[0] * L.tensor([float("inf"), 1.0], device=x.device)])
def test_masked_gradients_stay_zero_under_inf(build, device):
    data = np.array([[-1.0, 0.0], [2.0, 3.0]], np.float32)
    a, b, ga, gb = _both(build, data, device=device)
    close(_host(a), b)
    close(_host(ga), gb)
    assert not np.isnan(_host(ga).numpy()).any()


def test_overwritten_slice_of_a_view_gets_zero_gradient():
    ours, theirs = pair(X)
    for L, x in ((nn, ours), (torch, theirs)):
        y = x * 1
        y[:, 1][0] = 0.0
        y.rsqrt().sum().backward()
    close(ours.grad, theirs.grad)


# ----------------------------------------------------------------------------- 2. inplace=


@pytest.mark.parametrize("name,args", [
    ("relu", ()), ("relu6", ()), ("leaky_relu", (0.1,)), ("elu", ()), ("selu", ()),
    ("celu", ()), ("hardtanh", ()), ("hardsigmoid", ()), ("hardswish", ()), ("silu", ()),
    ("mish", ()), ("threshold", (0.5, -1.0))])
def test_functional_inplace_keyword(name, args):
    data = np.array([-2.0, -0.5, 0.25, 1.5, 7.0], np.float32)
    ours, theirs = pair(data)
    a, b = ours * 1, theirs * 1
    ra = getattr(F, name)(a, *args, inplace=True)
    assert getattr(TF, name)(b, *args, inplace=True) is b
    assert ra is a
    close(a, b)
    (a * a).sum().backward()
    (b * b).sum().backward()
    close(ours.grad, theirs.grad)


def test_relu_inplace_false_is_out_of_place():
    x = nn.tensor([-1.0, 2.0])
    y = F.relu(x, inplace=False)
    assert x.tolist() == [-1.0, 2.0] and y.tolist() == [0.0, 2.0]


# ----------------------------------------------------------------------------- 3. factories


@pytest.mark.parametrize("items", [
    lambda L: [L.tensor(1.0), L.tensor(2.0)],
    lambda L: [L.tensor(1.0, dtype=L.float64), L.tensor(2.0, dtype=L.float64)],
    lambda L: [[L.tensor(1), L.tensor(2)], [L.tensor(3), L.tensor(4)]],
    lambda L: [L.tensor(1), 2.5],
    lambda L: [L.ones(1), L.ones(1)],
    lambda L: (L.tensor(3, dtype=L.int32), L.tensor(4, dtype=L.int32))])
def test_tensor_from_a_list_of_tensors(items):
    a, b = nn.tensor(items(nn)), torch.tensor(items(torch))
    assert a.tolist() == b.tolist()
    assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]


def test_tensor_from_tensors_of_several_elements_is_refused_as_torch():
    with pytest.raises(ValueError, match="only one element tensors"):
        torch.tensor([torch.ones(2), torch.ones(2)])
    with pytest.raises(ValueError, match="only one element tensors"):
        nn.tensor([nn.ones(2), nn.ones(2)])


def test_as_tensor_and_is_tensor():
    array = np.arange(3.0, dtype=np.float32)
    t = nn.as_tensor(array)
    array[0] = 5.0
    assert t.tolist() == [5.0, 1.0, 2.0]            # shares the array's memory, as torch's
    assert nn.as_tensor(t) is t
    assert nn.as_tensor(t, dtype=nn.float64).dtype == nn.float64
    assert nn.as_tensor([1, 2]).tolist() == torch.as_tensor([1, 2]).tolist()
    assert nn.is_tensor(t) and not nn.is_tensor(array) and not nn.is_tensor([1.0])


def test_broadcast_to():
    a, b, ga, gb = _both(lambda L, x: L.broadcast_to(x[:1], (3, 2)) * L.arange(3.0)[:, None])
    close(a, b)
    close(ga, gb)
    assert nn.ones(3).broadcast_to((2, 3)).shape == (2, 3)


def test_broadcast_tensors():
    u, tu = pair([[1.0], [2.0]])
    v, tv = pair([3.0, 4.0, 5.0])
    ours, theirs = nn.broadcast_tensors(u, v), torch.broadcast_tensors(tu, tv)
    for a, b in zip(ours, theirs):
        close(a, b)
    (ours[0] * ours[1]).sum().backward()
    (theirs[0] * theirs[1]).sum().backward()
    close(u.grad, tu.grad)
    close(v.grad, tv.grad)


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    u, tu = pair([1.0, 2.0, 3.0])
    v, tv = pair([4.0, 5.0])
    ours = nn.meshgrid(u, v, indexing=indexing)
    theirs = torch.meshgrid(tu, tv, indexing=indexing)
    for a, b in zip(ours, theirs):
        assert a.shape == tuple(b.shape)
        close(a, b)
    (ours[0] * ours[1] ** 2).sum().backward()
    (theirs[0] * theirs[1] ** 2).sum().backward()
    close(u.grad, tu.grad)
    close(v.grad, tv.grad)
    grids = nn.meshgrid(nn.arange(2), nn.arange(3), nn.arange(4), indexing=indexing)
    want = torch.meshgrid(torch.arange(2), torch.arange(3), torch.arange(4), indexing=indexing)
    assert [g.tolist() for g in grids] == [g.tolist() for g in want]


@pytest.mark.parametrize("kwargs", [{}, {"n": 2}, {"dim": 0}, {"n": 3, "dim": 1},
                                    {"prepend": "p"}, {"append": "p", "dim": 0}])
def test_diff(kwargs):
    data = np.array([[1.0, 4.0, 2.0], [0.5, -1.0, 3.0]], np.float32)

    def build(L, x):
        kw = dict(kwargs)
        if "prepend" in kw:
            kw["prepend"] = L.ones(2, 1)
        if "append" in kw:
            kw["append"] = L.ones(1, 3) * 2
        return L.diff(x, **kw) * L.arange(1.0, 1.0 + L.diff(x, **kw).numel()).reshape(
            L.diff(x, **kw).shape)
    a, b, ga, gb = _both(build, data)
    close(a, b)
    close(ga, gb)


def test_diff_of_bools_and_method():
    m = [True, False, False, True]
    assert nn.tensor(m).diff().tolist() == torch.tensor(m).diff().tolist()


@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (1, True)])
def test_nanmean(dim, keepdim):
    data = np.array([[1.0, np.nan, 3.0], [np.nan, 5.0, 2.0]], np.float32)
    a, b, ga, gb = _both(lambda L, x: L.nanmean(x, dim=dim, keepdim=keepdim) * 3, data)
    close(a, b)
    close(ga, gb)
    assert nn.tensor(data).nanmean().item() == pytest.approx(2.75)


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
def test_addcmul_addcdiv(name):
    data = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    x, tx = pair(data)
    y, ty = pair(data[:1] + 1)
    z, tz = pair(data[:, :1] + 2)
    a = getattr(nn, name)(x, y, z, value=0.5)
    b = getattr(torch, name)(tx, ty, tz, value=0.5)
    close(a, b)
    (a * a).sum().backward()
    (b * b).sum().backward()
    for ours, theirs in ((x, tx), (y, ty), (z, tz)):
        close(ours.grad, theirs.grad)
    u, tu = nn.tensor(data), torch.tensor(data)
    getattr(u, name + "_")(nn.tensor(data), nn.tensor(data) + 1, value=2)
    getattr(tu, name + "_")(torch.tensor(data), torch.tensor(data) + 1, value=2)
    close(u, tu)
    close(getattr(u, name)(u, u), getattr(tu, name)(tu, tu))


def test_addcmul_in_place_in_the_graph():
    ours, theirs = pair(X)
    for x in (ours, theirs):
        y = x * 2
        y.addcmul_(x, x, value=3)
        y.sum().backward()
    close(ours.grad, theirs.grad)


def test_bernoulli():
    nn.manual_seed(0)
    probs = nn.tensor([0.0, 1.0, 0.0, 1.0])
    assert nn.bernoulli(probs).tolist() == [0.0, 1.0, 0.0, 1.0]
    assert probs.bernoulli().dtype == nn.float32
    draws = nn.bernoulli(nn.full((20000,), 0.3))
    assert abs(draws.mean().item() - 0.3) < 0.02
    assert nn.zeros(3).bernoulli_(1.0).tolist() == [1.0, 1.0, 1.0]
    assert nn.zeros(3).bernoulli_(nn.tensor([1.0, 0.0, 1.0])).tolist() == [1.0, 0.0, 1.0]
    p = nn.tensor([0.2, 0.7], requires_grad=True)
    nn.bernoulli(p).sum().backward()            # torch's derivative of bernoulli is zero
    assert p.grad.tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="p_in >= 0 && p_in <= 1"):
        nn.bernoulli(nn.tensor([1.5]))


def test_multinomial():
    nn.manual_seed(0)
    weights = nn.tensor([[0.0, 10.0, 0.0, 30.0], [1.0, 0.0, 0.0, 0.0]])
    drawn = nn.multinomial(weights, 2)
    assert drawn.dtype == nn.int64 and drawn.shape == (2, 2)
    assert sorted(drawn[0].tolist()) == [1, 3]
    assert drawn[1, 0].item() == 0
    many = weights[0].multinomial(4000, replacement=True)
    counts = np.bincount(many.numpy(), minlength=4)
    assert counts[0] == counts[2] == 0 and abs(counts[3] / 4000 - 0.75) < 0.03
    assert nn.multinomial(nn.tensor([1.0, 0.0]), 2).tolist() == \
        torch.multinomial(torch.tensor([1.0, 0.0]), 2).tolist()
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        nn.multinomial(nn.ones(3), 4)


@pytest.mark.parametrize("kwargs", [{}, {"return_inverse": True}, {"return_counts": True},
                                    {"return_inverse": True, "return_counts": True},
                                    {"dim": 0, "return_inverse": True, "return_counts": True},
                                    {"dim": 1}])
def test_unique(kwargs):
    data = [[3, 1, 3], [2, 1, 3], [3, 1, 3]]
    ours = nn.unique(nn.tensor(data), **kwargs)
    theirs = torch.unique(torch.tensor(data), **kwargs)
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    assert [t.tolist() for t in ours] == [t.tolist() for t in theirs]
    assert nn.tensor([2.0, 1.0, 2.0]).unique().tolist() == [1.0, 2.0]


# ----------------------------------------------------------------------------- 4, 5. autograd


def test_leaf_frozen_between_forward_and_backward_gets_no_grad():
    for L in (nn, torch):
        w = L.ones(2, requires_grad=True)
        v = L.ones(2, requires_grad=True)
        loss = (w * 3 + v).sum()
        w.requires_grad_(False)
        loss.backward()
        assert w.grad is None
        assert v.grad.tolist() == [1.0, 1.0]


def _scale_function(L):
    class Scale(L.autograd.Function):
        @staticmethod
        def forward(x, s):
            return x * s

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.s = inputs[1]
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ctx.s + x * 0, None
    return Scale


def test_function_with_setup_context():
    ours, theirs = pair([1.0, 2.0])
    a = _scale_function(nn).apply(ours, 3.0)
    b = _scale_function(torch).apply(theirs, 3.0)
    close(a, b)
    a.sum().backward()
    b.sum().backward()
    close(ours.grad, theirs.grad)


def test_function_with_setup_context_on_gpu():
    x = nn.tensor([1.0, 2.0], requires_grad=True, device="cuda")
    _scale_function(nn).apply(x, 3.0).sum().backward()
    assert x.grad.cpu().tolist() == [3.0, 3.0]


# ----------------------------------------------------------------------------- 6. overlap


def test_in_place_with_its_own_memory_in_the_same_layout_is_allowed():
    for L in (nn, torch):
        m = L.arange(4.0).reshape(2, 2)
        m.add_(m)
        assert m.tolist() == [[0.0, 2.0], [4.0, 6.0]]
        y = L.arange(6.0)
        y[::2].mul_(y[1::2])                    # disjoint strided views
        assert y.tolist() == [0.0, 1.0, 6.0, 3.0, 20.0, 5.0]
        y[1:].add_(y[1:])                          # overlapping, but the same layout
        assert y.tolist() == [0.0, 2.0, 12.0, 6.0, 40.0, 10.0]
    a, b = nn.arange(6.0), torch.arange(6.0)
    for y in (a, b):
        y[::2].mul_(y[1::2])
        y[1:].add_(y[1:])
    close(a, b)
