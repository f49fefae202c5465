"""Embedding and one_hot: lookups and the scatter-add gradient (padding row excluded) against
torch, gradcheck, max_norm renormalization, from_pretrained, default initialization."""
import numpy as np
import torch

import nn
from nn import functional as F

RNG = np.random.default_rng(3)
IDX = np.array([[1, 2, 1, 7], [0, 9, 1, 2]])


def test_lookup_and_gradient_match_torch():
    w = RNG.standard_normal((10, 4)).astype("float32")
    g = RNG.standard_normal((2, 4, 4)).astype("float32")
    for kwargs in ({}, {"padding_idx": 2}, {"scale_grad_by_freq": True, "padding_idx": -1}):
        ours, theirs = nn.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
        out = F.embedding(nn.tensor(IDX), ours, **kwargs)
        expect = torch.nn.functional.embedding(torch.tensor(IDX), theirs, **kwargs)
        np.testing.assert_array_equal(out.detach().numpy(), expect.detach().numpy())
        out.backward(nn.tensor(g))
        expect.backward(torch.tensor(g))
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6)


def test_gradcheck_and_double_backward():
    w = nn.tensor(RNG.standard_normal((5, 3)), requires_grad=True)
    idx = nn.tensor([1, 3, 1, 0])
    assert nn.autograd.gradcheck(lambda w: F.embedding(idx, w), (w,))

    def grad_of(w):
        out = F.embedding(idx, w)
        (gw,) = nn.autograd.grad((out * out).sum(), [w], create_graph=True)
        return gw
    assert nn.autograd.gradcheck(grad_of, (w,))


def test_max_norm_renormalizes_like_torch():
    w = RNG.standard_normal((6, 3)).astype("float32") * 3
    ours, theirs = nn.tensor(w), torch.tensor(w)
    out = F.embedding(nn.tensor([0, 2, 2]), ours, max_norm=1.5)
    expect = torch.nn.functional.embedding(torch.tensor([0, 2, 2]), theirs, max_norm=1.5)
    np.testing.assert_allclose(out.numpy(), expect.numpy(), rtol=1e-5)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5)


def test_module_init_repr_and_from_pretrained():
    nn.manual_seed(0)
    layer = nn.Embedding(1000, 8, padding_idx=3)
    data = layer.weight.detach().numpy()
    assert np.all(data[3] == 0) and abs(data.std() - 1) < 0.05
    assert repr(layer) == repr(torch.nn.Embedding(1000, 8, padding_idx=3))
    assert layer(nn.tensor([[3, 4]])).shape == (1, 2, 8)
    frozen = nn.Embedding.from_pretrained(nn.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert not frozen.weight.requires_grad
    assert frozen(nn.tensor([1])).tolist() == [[3.0, 4.0]]


def test_one_hot():
    np.testing.assert_array_equal(F.one_hot(nn.tensor([0, 2, 1])).numpy(), np.eye(3)[[0, 2, 1]])
    out = F.one_hot(nn.tensor([[1], [0]]), num_classes=4)
    assert out.dtype == "int64" and out.shape == (2, 1, 4)
    assert out.tolist() == [[[0, 1, 0, 0]], [[1, 0, 0, 0]]]
