"""In-place writes through views (CPU and GPU), in-place ops on non-leaves in the graph
(CopySlices), device of index-built gradients, cumprod at zero, grad-mode switches and small
Tensor API additions, each compared with torch or numpy."""
import numpy as np
import pytest
import torch

import nn


def _rows(t):
    return t.detach().cpu().numpy()


# ----------------------------------------------------------------------------- 1: GPU views

WRITES = {
    "setitem_row": lambda t: t.__setitem__(1, 5.0),
    "row_zero_": lambda t: t[0].zero_(),
    "slice_mul_": lambda t: t[:, 1:3].mul_(0),
    "view_add_": lambda t: t.view(12).add_(1),
    "t_setitem": lambda t: t.t().__setitem__((0, 0), -1.0),
    "chunk_fill_": lambda t: t.chunk(2, 1)[0].fill_(0),
    "diagonal_fill_": lambda t: t.diagonal().fill_(9),
    "nested_view": lambda t: t[1:][0, 1:].add_(100),
}


@pytest.mark.parametrize("name", sorted(WRITES))
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_writes_through_views_reach_base(name, device):
    t = nn.arange(12.).view(3, 4).to(device)
    ref = torch.arange(12.).view(3, 4)
    WRITES[name](t)
    WRITES[name](ref)
    np.testing.assert_array_equal(_rows(t), ref.numpy())


def test_views_read_writes_into_their_base_and_inplace_reshapes():
    """A GPU view is a copy: it must still read what later writes put into its base, through
    in-place reshapes (t_, unsqueeze_) of the base too."""
    def run(lib, dev):
        x = lib.arange(6.).view(2, 3).to(dev)
        y, v = x[1:], x[0]
        x.t_()
        x.add_(1)
        v.fill_(-5)
        x[1, 1] = 40
        x.unsqueeze_(0).mul_(2)
        return [_rows(t) for t in (x, y, v)]
    for got, want in zip(run(nn, "cuda"), run(torch, "cpu")):
        np.testing.assert_array_equal(got, want)


GPU_LAYOUTS = {      # what is a view and what a copy follows the strides, as in PyTorch
    "t_contiguous_is_a_copy": lambda L, a: a.t().contiguous(),
    "t_reshape_is_a_copy": lambda L, a: a.t().reshape(4),
    "column_contiguous_is_a_copy": lambda L, a: a[:, 0].contiguous(),
    "row_contiguous_is_the_view": lambda L, a: a[0].contiguous(),
    "t_row_is_a_view": lambda L, a: a.t()[1],
    "t_t_is_a_view": lambda L, a: a.t().t(),
    "expand_is_a_view": lambda L, a: a[0].expand(3, 2),
    "unsqueeze_expand_is_a_view": lambda L, a: a[None].expand(2, 2, 2),
}


@pytest.mark.parametrize("name", sorted(GPU_LAYOUTS))
def test_gpu_views_and_copies_follow_the_strides(name):
    def run(lib, dev):
        a = lib.tensor([[1., 2.], [3., 4.]]).to(dev)
        t = GPU_LAYOUTS[name](lib, a)
        a.add_(10)                          # a view sees it, a copy does not
        seen = _rows(t).copy()
        if "expand" not in name:            # (torch refuses writes into expanded views)
            t[(0,) * t.ndim] = -1.0         # it reaches a through a view only
        return seen, _rows(a)
    for got, want in zip(run(nn, "cuda"), run(torch, "cpu")):
        np.testing.assert_array_equal(got, want)


def test_gpu_contiguous_copy_in_the_graph():
    results = []
    for lib, dev in ((nn, "cuda"), (torch, "cpu")):
        x = lib.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        w = x.to(dev) * 1
        y = w.t().contiguous()
        y.mul_(2)
        (w.sum() + y.sum()).backward()
        results.append((_rows(w), _rows(x.grad)))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_gpu_parameter_view_under_no_grad():
    emb = nn.Embedding(4, 2).cuda()
    lin = nn.Linear(3, 3).cuda()
    with nn.no_grad():
        emb.weight[0].fill_(0)
        lin.weight.diagonal().fill_(9)
    assert _rows(emb.weight)[0].tolist() == [0, 0]
    assert np.diag(_rows(lin.weight)).tolist() == [9, 9, 9]


# ----------------------------------------------------------------------------- 2-4: devices

def test_embedding_backward_on_gpu_and_sgd():
    emb = nn.Embedding(5, 3, padding_idx=0).cuda()
    out = emb(nn.tensor([[0, 2, 2]]).cuda())
    out.sum().backward()
    assert emb.weight.grad.device == nn.device("cuda")
    g = _rows(emb.weight.grad)
    assert g[0].tolist() == [0, 0, 0] and g[2].tolist() == [2, 2, 2]
    nn.optim.SGD(emb.parameters(), lr=0.1).step()
    w = nn.Parameter(nn.randn(4, 2).cuda())
    (nn.functional.embedding(nn.tensor([1]).cuda(), w).sum() + (w @ w.t()).sum()).backward()
    assert w.grad.device == nn.device("cuda")


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_dim_backward_on_gpu(name):
    data = np.array([[1., 5, 3], [4, 2, 6]], "float32")
    w = nn.tensor(data, device="cuda", requires_grad=True)
    r = torch.tensor(data, requires_grad=True)
    getattr(w, name)(1).values.sum().backward()
    getattr(r, name)(1).values.sum().backward()
    assert w.grad.device == nn.device("cuda")
    np.testing.assert_array_equal(_rows(w.grad), r.grad.numpy())
    assert nn.tensor(3.).cuda().argmax(0).device == nn.device("cuda")


def test_gpu_mask_and_index_assignment():
    t = nn.arange(4.).cuda()
    t[t > 1] = 0
    assert _rows(t).tolist() == [0, 1, 0, 0]
    t = nn.arange(4.).cuda()
    t[nn.tensor([0, 2]).cuda()] = 9.
    assert _rows(t).tolist() == [9, 1, 9, 3]
    t = nn.arange(4.).cuda()
    t[nn.tensor([True, False, True, False]).cuda()] = nn.tensor([7., 8.]).cuda()
    assert _rows(t).tolist() == [7, 1, 8, 3]
    t = nn.arange(4.).cuda().index_fill_(0, nn.tensor([1]).cuda(), -1.)
    assert _rows(t).tolist() == torch.arange(4.).index_fill_(0, torch.tensor([1]), -1.).tolist()


# ----------------------------------------------------------------------------- 5: cumprod

@pytest.mark.parametrize("values", [[3., 0, 2, 5], [0., 0, 2, 5], [1., 2, 3, 0], [2., 3, 4, 5]])
def test_cumprod_backward_at_zero(values):
    x = nn.tensor(values, requires_grad=True)
    r = torch.tensor(values, requires_grad=True)
    w = [1., -2, 3, 0.5]
    (x.cumprod(0) * nn.tensor(w)).sum().backward()
    (r.cumprod(0) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), r.grad.numpy(), rtol=1e-6)


# ----------------------------------------------------------------------------- 6: CopySlices

GRAPH_WRITES = {
    "setitem_number": lambda L, x, y: y.__setitem__(0, 100.),
    "setitem_slice": lambda L, x, y: y.__setitem__(slice(1, 3), x[:2] * 5),
    "setitem_mask": lambda L, x, y: y.__setitem__(y > 2, 0.),
    "setitem_index": lambda L, x, y: y.__setitem__(L.tensor([0, 3]), x[1:3] ** 2),
    "view_add_": lambda L, x, y: y[1:].add_(x[:3]),
    "view_mul_": lambda L, x, y: y[:2].mul_(x[2:]),
    "view_sub_div_": lambda L, x, y: y[1:3].sub_(x[:2]).div_(2),
    "view_clamp_": lambda L, x, y: y[::2].clamp_(-1, 2),
    "view_fill_": lambda L, x, y: y[2:].fill_(7),
    "zero_": lambda L, x, y: y.zero_(),
    "view_of_view": lambda L, x, y: y.view(2, 2)[1].mul_(3),
    "copy_into_view": lambda L, x, y: y[1:3].copy_(x[2:] * x[2:]),
}


@pytest.mark.parametrize("name", sorted(GRAPH_WRITES))
def test_inplace_on_non_leaf_matches_torch(name):
    results = []
    for lib in (torch, nn):
        x = lib.tensor([1., -2., 3., 4.], requires_grad=True)
        y = x * 2
        GRAPH_WRITES[name](lib, x, y)
        (y * lib.tensor([1., 2., 3., 4.])).sum().backward()
        results.append((y.detach().numpy().copy(), x.grad.numpy().copy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-6)


# views taken before another write into the same storage: their gradient follows the write
STALE_VIEWS = {
    "overlapping_view_write": lambda L, y: (y[0:2], y[0].mul_(3)),
    "base_write": lambda L, y: (y[1:], y.mul_(2)),
    "base_setitem": lambda L, y: (y[:, 1], y.__setitem__((slice(None), slice(1, 2)), 7.)),
    "view_of_view": lambda L, y: (y[1:][:, 0], y[2].add_(y[0].detach())),
    "plain_base_takes_graph": lambda L, y: (y[1], y.copy_(L.ones(3, 2) * L.tensor(2.))),
}


@pytest.mark.parametrize("name", sorted(STALE_VIEWS))
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_views_made_before_an_inplace_write_follow_it(name, device):
    results = []
    for lib in (torch, nn):
        x = lib.tensor(np.arange(6.).reshape(3, 2), requires_grad=True)
        y = (x * 1) if device == "cpu" or lib is torch else (x.to(device) * 1)
        view, _ = STALE_VIEWS[name](lib, y)
        w = lib.tensor(np.arange(1., view.numel() + 1).reshape(view.shape))
        if lib is nn:
            w = w.to(view.device)
        (view * view * w).sum().backward()
        results.append((_rows(view), _rows(x.grad), view.requires_grad))
    np.testing.assert_allclose(results[1][0], results[0][0])
    np.testing.assert_allclose(results[1][1], results[0][1])
    assert results[1][2] == results[0][2]


def test_inplace_into_plain_tensor_from_graph():
    for lib in (torch, nn):
        x = lib.tensor([1., 2.], requires_grad=True)
        b = lib.zeros(4)
        b[1:3] = x * 3
        (b * b).sum().backward()
        if lib is torch:
            expected = x.grad.numpy().copy()
    np.testing.assert_allclose(x.grad.numpy(), expected)


def test_inplace_on_gpu_non_leaf():
    x = nn.tensor([1., -2., 3., 4.], device="cuda", requires_grad=True)
    y = x * 2
    y[0] = 100.
    y[1:].add_(x[:3])
    y.sum().backward()
    assert _rows(y).tolist() == [100, -3, 4, 11]
    assert _rows(x.grad).tolist() == [1, 3, 3, 2]


def test_modified_saved_tensor_still_raises():
    x = nn.tensor([1., 2.], requires_grad=True)
    y = x * 1
    z = y * y                  # saves y
    y[0] = 5.
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    x = nn.tensor([1., 2.], requires_grad=True)
    z = (x * 1).exp()
    z.mul_(2)                  # exp saved its output
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_view_of_leaf_inplace_raises():
    x = nn.tensor([1., 2.], requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        x[0].mul_(2)


# ----------------------------------------------------------------------------- 7: saved outputs

@pytest.mark.parametrize("fn", ["exp", "sigmoid", "tanh"])
def test_input_modified_after_output_saving_op(fn):
    results = []
    for lib in (torch, nn):
        x = lib.tensor([0.5, -1., 2.], requires_grad=True)
        y = x * 1
        z = getattr(y, fn)()
        y.mul_(2)
        z.sum().backward()
        results.append(x.grad.numpy().copy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5)


# ----------------------------------------------------------------------------- 8: grad mode

def test_set_grad_enabled_as_function_context_decorator():
    try:
        nn.set_grad_enabled(False)
        assert not nn.is_grad_enabled()
        assert not (nn.ones(2, requires_grad=True) * 2).requires_grad
    finally:
        nn.set_grad_enabled(True)
    assert nn.is_grad_enabled()
    with nn.set_grad_enabled(False):
        assert not nn.is_grad_enabled()
    assert nn.is_grad_enabled()

    @nn.set_grad_enabled(False)
    def f():
        return nn.is_grad_enabled()
    assert nn.is_grad_enabled() and not f() and nn.is_grad_enabled()


def test_inference_mode():
    with nn.inference_mode():
        assert not (nn.ones(2, requires_grad=True) * 2).requires_grad
    with nn.inference_mode(False):
        assert nn.is_grad_enabled()

    @nn.inference_mode
    def f():
        return nn.is_grad_enabled()

    @nn.inference_mode()
    def g():
        return nn.is_grad_enabled()
    assert not f() and not g() and nn.is_grad_enabled()


# ----------------------------------------------------------------------------- 9: Tensor API

def test_new_factories_and_layout():
    for lib in (torch, nn):
        t = lib.ones(2, 3, dtype=lib.float64)
        got = [t.new_zeros(2), t.new_ones((1, 2)), t.new_full((2,), 7.), t.new_empty(3),
               t.new_tensor([1, 2])]
        if lib is torch:
            ref = [(tuple(g.shape), str(g.dtype).split(".")[1]) for g in got]
            vals = [g.numpy() for g in got[:3]]
            strides = (t.stride(), t.t().stride(), t.t().is_contiguous(), t[:, 1].stride(0))
        else:
            assert [(g.shape, g.dtype) for g in got] == ref
            for a, b in zip(got, vals):
                np.testing.assert_array_equal(a.numpy(), b)
            assert (t.stride(), t.t().stride(), t.t().is_contiguous(),
                    t[:, 1].stride(0)) == strides


def test_inplace_shape_methods_and_detach_():
    for lib in (torch, nn):
        x = lib.tensor([1., 2., 3., 4.], requires_grad=True)
        y = (x * 1).view(2, 2)
        y.t_()
        (y * lib.tensor([[1., 2.], [3., 4.]])).sum().backward()
        z = lib.ones(3)
        z.unsqueeze_(0)
        shapes = [tuple(z.shape)]
        z.squeeze_()
        shapes.append(tuple(z.shape))
        w = x * 2
        w.detach_()
        if lib is torch:
            ref = (x.grad.numpy().copy(), shapes)
    np.testing.assert_array_equal(x.grad.numpy(), ref[0])
    assert shapes == ref[1] and w.grad_fn is None and not w.requires_grad


def test_random_fills():
    nn.manual_seed(0)
    t = nn.empty(2000)
    assert abs(t.normal_(2., 0.5).mean().item() - 2) < 0.1
    u = t.uniform_(1, 3).numpy()
    assert u.min() >= 1 and u.max() < 3
    assert set(np.unique(t.bernoulli_(0.3).numpy())) <= {0., 1.}
    assert abs(t.exponential_(2.).mean().item() - 0.5) < 0.1
    g = nn.empty(3).cuda().normal_()
    assert g.is_cuda


def test_median_isclose_repeat_interleave():
    data = np.array([[3., 1, 2, 7], [0, 5, 4, 4]], "float32")
    x, r = nn.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    assert x.median().item() == r.median().item()
    v, i = x.median(1)
    rv, ri = r.median(1)
    np.testing.assert_array_equal(v.detach().numpy(), rv.detach().numpy())
    np.testing.assert_array_equal(i.numpy(), ri.numpy())
    v.sum().backward()
    rv.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), r.grad.numpy())
    a, b = [1., float("nan"), float("inf"), 2.], [1 + 1e-7, float("nan"), float("inf"), 2.1]
    for eq in (False, True):
        np.testing.assert_array_equal(
            nn.isclose(nn.tensor(a), nn.tensor(b), equal_nan=eq).numpy(),
            torch.isclose(torch.tensor(a), torch.tensor(b), equal_nan=eq).numpy())
    assert nn.allclose(nn.tensor(a[:1]), nn.tensor(b[:1])) and not nn.tensor(a).allclose(
        nn.tensor(b))
    xr, rr = nn.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    out = xr.repeat_interleave(nn.tensor([1, 2]), dim=0)
    ref = rr.repeat_interleave(torch.tensor([1, 2]), dim=0)
    np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
    (out * out).sum().backward()
    (ref * ref).sum().backward()
    np.testing.assert_array_equal(xr.grad.numpy(), rr.grad.numpy())
    np.testing.assert_array_equal(xr.detach().repeat_interleave(2).numpy(),
                                  rr.detach().repeat_interleave(2).numpy())


def test_load_state_dict_into_a_gpu_model_with_size_one_axes():
    cpu = nn.Conv2d(1, 2, 3)
    gpu = nn.Conv2d(1, 2, 3).cuda()
    gpu.load_state_dict(cpu.state_dict())
    np.testing.assert_array_equal(_rows(gpu.weight), _rows(cpu.weight))
    np.testing.assert_array_equal(_rows(gpu.bias), _rows(cpu.bias))
    lin = nn.Linear(1, 2).cuda()
    source = nn.Linear(1, 2).state_dict()
    lin.load_state_dict(source)
    assert tuple(lin.weight.shape) == (2, 1) and tuple(lin.bias.shape) == (2,)
    np.testing.assert_array_equal(lin.weight.detach().cpu().numpy(), source["weight"].numpy())
    np.testing.assert_array_equal(lin.bias.detach().cpu().numpy(), source["bias"].numpy())
