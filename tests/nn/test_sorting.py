"""sort, argsort and topk against PyTorch's (stable=True orders: ties keep their input order,
NaN is the largest), their gradients (scattered back to the selected positions) against
PyTorch's and finite differences, and their argument errors."""
import numpy as np
import pytest
import torch

import nn
from nn.autograd import gradcheck

NAN = float("nan")
TIES = np.array([[3.0, 1.0, NAN, 1.0, 2.0, 3.0], [0.0, 5.0, 5.0, -1.0, NAN, 5.0],
                 [2.0, 2.0, 2.0, 2.0, 2.0, 2.0]], "float32")


def _same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("dim", [-1, 0])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_match_pytorch_stable(dim, descending):
    got = nn.tensor(TIES).sort(dim, descending)
    want = torch.tensor(TIES).sort(dim=dim, descending=descending, stable=True)
    _same(got.values.numpy(), want.values.numpy())
    _same(got.indices.numpy(), want.indices.numpy())
    assert got.indices.dtype == "int64"
    values, indices = nn.sort(nn.tensor(TIES), dim=dim, descending=descending)  # unpacks
    _same(values.numpy(), want.values.numpy())
    _same(nn.tensor(TIES).argsort(dim, descending).numpy(),
          torch.argsort(torch.tensor(TIES), dim=dim, descending=descending, stable=True).numpy())


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "float64"])
def test_sort_other_dtypes(dtype):
    x = np.array([[3, 0, 1, 0, 2], [1, 1, 0, 5, 4]]).astype(dtype)
    for descending in (False, True):
        got = nn.tensor(x).sort(descending=descending)
        want = torch.tensor(x).sort(descending=descending, stable=True)
        assert got.values.dtype == dtype
        _same(got.values.numpy(), want.values.numpy())
        _same(got.indices.numpy(), want.indices.numpy())


@pytest.mark.parametrize("k,dim,largest", [(2, -1, True), (3, -1, False), (1, 0, True),
                                           (3, 0, False), (0, 1, True), (6, 1, True)])
def test_topk_matches_pytorch(k, dim, largest):
    got = nn.tensor(TIES).topk(k, dim, largest)
    want = torch.tensor(TIES).topk(k, dim=dim, largest=largest)
    _same(got.values.numpy(), want.values.numpy())
    # PyTorch does not promise which of equal elements it picks: the indices select the values
    picked = np.take_along_axis(TIES, got.indices.numpy(), axis=dim)
    _same(picked, want.values.numpy())


def test_random_rows_match_pytorch():
    x = np.random.default_rng(3).standard_normal((4, 37)).astype("float32")
    for descending in (False, True):
        got = nn.tensor(x).sort(1, descending)
        want = torch.tensor(x).sort(1, descending)      # no ties: the order is unique
        _same(got.values.numpy(), want.values.numpy())
        _same(got.indices.numpy(), want.indices.numpy())
    got, want = nn.tensor(x).topk(5, 1), torch.tensor(x).topk(5, 1)
    _same(got.values.numpy(), want.values.numpy())
    _same(got.indices.numpy(), want.indices.numpy())


@pytest.mark.parametrize("fn", [
    lambda m, a: m.sort(a, 1, descending=True)[0] * m.arange(5.0, dtype=a.dtype),
    lambda m, a: a.sort(0).values.cumsum(0),
    lambda m, a: a.topk(2, 1).values ** 2,
    lambda m, a: a.topk(2, 0, largest=False)[0] * 3,
], ids=["sort_desc", "sort_dim0", "topk", "topk_smallest"])
def test_gradients_scatter_to_the_selected_positions(fn):
    x = np.random.default_rng(5).standard_normal((3, 5))
    a, b = nn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fn(nn, a).sum().backward()
    fn(torch, b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)
    assert gradcheck(lambda t: fn(nn, t), (nn.tensor(x, requires_grad=True),))


def test_zero_d_and_empty():
    values, indices = nn.tensor(3.0).sort()
    assert values.item() == 3.0 and indices.item() == 0 and indices.shape == ()
    assert nn.zeros(0, 3).sort(0).values.shape == (0, 3)
    assert nn.zeros(2, 0).topk(0).indices.shape == (2, 0)


def test_topk_k_out_of_range():
    with pytest.raises(RuntimeError, match=r"selected index k out of range: topk\(k=4\)"):
        nn.tensor([1.0, 2.0, 3.0]).topk(4)
    with pytest.raises(TypeError, match="argument 'k' must be int"):
        nn.tensor([1.0, 2.0, 3.0]).topk(1.5)


def test_sort_on_the_gpu():
    x = nn.tensor(TIES[:2]).cuda().requires_grad_()
    values, indices = x.sort(1, descending=True)
    assert values.is_cuda and indices.is_cuda
    _same(indices.cpu().numpy(),
          torch.tensor(TIES[:2]).sort(dim=1, descending=True, stable=True).indices.numpy())
    values.nan_to_num(0.0).sum().backward()
    assert x.grad.is_cuda
