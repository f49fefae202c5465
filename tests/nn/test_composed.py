"""Distances, unfold/fold, EmbeddingBag, the margin losses and RReLU against PyTorch: values
and gradients of every floating input (and of the bag's table)."""
import numpy as np
import pytest
import torch

import nn
from torch_compare import check as compare, close

F = nn.functional
rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape).astype("float32")


def check(ours_fn, theirs_fn, *arrays, **kw):
    """torch_compare.check, its output gradients drawn from this file's generator."""
    compare(ours_fn, theirs_fn, *arrays, rng=rng, **kw)


@pytest.mark.parametrize("p, keepdim", [(2.0, False), (1.0, True), (3.0, False)])
def test_pairwise_distance_and_cosine_similarity(p, keepdim):
    a, b = randn(3, 5), randn(1, 5)
    check(lambda x, y: F.pairwise_distance(x, y, p, keepdim=keepdim),
          lambda x, y: torch.nn.functional.pairwise_distance(x, y, p, keepdim=keepdim), a, b)
    check(lambda x, y: nn.PairwiseDistance(p, keepdim=keepdim)(x, y),
          lambda x, y: torch.nn.PairwiseDistance(p, keepdim=keepdim)(x, y), a, b)
    check(lambda x, y: nn.CosineSimilarity(dim=-1)(x, y),
          lambda x, y: torch.nn.CosineSimilarity(dim=-1)(x, y), a, b)
    assert isinstance(nn.Identity(3, foo=1), nn.Module)


WINDOWS = [dict(kernel_size=2), dict(kernel_size=(2, 3), stride=2, padding=1),
           dict(kernel_size=3, dilation=2, padding=(2, 1), stride=(1, 2))]


@pytest.mark.parametrize("kw", WINDOWS)
def test_unfold_and_fold(kw):
    x = randn(2, 3, 5, 6)
    check(lambda t: F.unfold(t, **kw), lambda t: torch.nn.functional.unfold(t, **kw), x)
    check(lambda t: nn.Unfold(**kw)(t[0]), lambda t: torch.nn.Unfold(**kw)(t[0]), x)
    cols = torch.nn.functional.unfold(torch.tensor(x), **kw)
    c = randn(*cols.shape)
    check(lambda t: F.fold(t, (5, 6), **kw), lambda t: torch.nn.functional.fold(t, (5, 6), **kw),
          c)
    check(lambda t: nn.Fold((5, 6), **kw)(t[1]), lambda t: torch.nn.Fold((5, 6), **kw)(t[1]), c)


def test_unfold_and_fold_errors_name_the_problem():
    with pytest.raises(RuntimeError, match="no sliding block fits"):
        F.unfold(nn.zeros(1, 1, 2, 2), 3)
    with pytest.raises(RuntimeError, match="number of sliding blocks"):
        F.fold(nn.zeros(1, 4, 5), (4, 4), 2)
    with pytest.raises(TypeError, match="'kernel_size'"):
        F.unfold(nn.zeros(1, 1, 4, 4), 2.5)


def _bags(mode, **kw):
    torch.manual_seed(0)
    theirs = torch.nn.EmbeddingBag(6, 3, mode=mode, **kw)
    ours = nn.EmbeddingBag(6, 3, mode=mode, **kw)
    ours.weight.data = nn.tensor(theirs.weight.detach().numpy().copy())
    return ours, theirs


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("layout", ["2d", "offsets", "last_offset", "padding"])
def test_embedding_bag(mode, layout):
    kw = {"include_last_offset": True} if layout == "last_offset" else (
        {"padding_idx": 2} if layout == "padding" else {})
    ours, theirs = _bags(mode, **kw)
    if layout == "2d":
        args = [np.array([[1, 2, 4], [5, 0, 5]])]
    elif layout == "last_offset":
        args = [np.array([1, 2, 4, 5, 0, 3]), np.array([0, 2, 2, 6])]    # an empty bag
    else:
        args = [np.array([1, 2, 4, 5, 2, 3, 2]), np.array([0, 3, 3, 6])]  # an empty bag
    psw = randn(*args[0].shape) if mode == "sum" else None
    out = ours(*[nn.tensor(a) for a in args],
               per_sample_weights=None if psw is None else nn.tensor(psw, requires_grad=True))
    tpsw = None if psw is None else torch.tensor(psw, requires_grad=True)
    tout = theirs(*[torch.tensor(a) for a in args], per_sample_weights=tpsw)
    close(out, tout)
    g = randn(*out.shape)
    (out * nn.tensor(g)).sum().backward()
    (tout * torch.tensor(g)).sum().backward()
    close(ours.weight.grad, theirs.weight.grad)


def test_embedding_bag_errors():
    w = nn.randn(4, 2)
    with pytest.raises(ValueError, match="offsets has to be None"):
        F.embedding_bag(nn.tensor([[0, 1]]), w, nn.tensor([0]))
    with pytest.raises(ValueError, match="offsets"):
        F.embedding_bag(nn.tensor([0, 1]), w)
    with pytest.raises(NotImplementedError, match="mode='sum'"):
        F.embedding_bag(nn.tensor([[0, 1]]), w, mode="max",
                        per_sample_weights=nn.ones(1, 2))


T = np.array([1.0, -1.0, 1.0, -1.0], "float32")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_margin_losses(reduction):
    tf = torch.nn
    check(lambda a, b, t: nn.MarginRankingLoss(0.3, reduction=reduction)(a, b, t),
          lambda a, b, t: tf.MarginRankingLoss(0.3, reduction=reduction)(a, b, t),
          randn(4), randn(4), T)
    check(lambda a, t: nn.HingeEmbeddingLoss(0.7, reduction=reduction)(a, t),
          lambda a, t: tf.HingeEmbeddingLoss(0.7, reduction=reduction)(a, t),
          randn(4, 1) * 0 + randn(4, 1), np.stack([T, -T], 1))
    check(lambda a, b, t: nn.CosineEmbeddingLoss(0.2, reduction=reduction)(a, b, t),
          lambda a, b, t: tf.CosineEmbeddingLoss(0.2, reduction=reduction)(a, b, t),
          randn(4, 3), randn(4, 3), T)
    for swap in (False, True):
        check(lambda a, p, n: nn.TripletMarginLoss(1.5, p=1.0, swap=swap,
                                                   reduction=reduction)(a, p, n),
              lambda a, p, n: tf.TripletMarginLoss(1.5, p=1.0, swap=swap,
                                                   reduction=reduction)(a, p, n),
              randn(4, 3), randn(4, 3), randn(4, 3))
    target = np.array([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 1, 2, 3]])
    check(lambda a, t: nn.MultiLabelMarginLoss(reduction=reduction)(a, t),
          lambda a, t: tf.MultiLabelMarginLoss(reduction=reduction)(a, t), randn(3, 4), target)


def test_unbatched_margin_losses():
    check(lambda a, t: F.multilabel_margin_loss(a, t),
          lambda a, t: torch.nn.functional.multilabel_margin_loss(a, t),
          randn(4), np.array([2, 1, -1, 0]))
    check(lambda a, b, t: F.cosine_embedding_loss(a, b, t),
          lambda a, b, t: torch.nn.functional.cosine_embedding_loss(a, b, t),
          randn(3), randn(3), np.array(-1.0, "float32"))
    with pytest.raises(ValueError, match="margin to be greater than 0"):
        nn.TripletMarginLoss(margin=0.0)


def test_rrelu():
    x = randn(3, 4)
    m, tm = nn.RReLU(0.1, 0.4).eval(), torch.nn.RReLU(0.1, 0.4).eval()
    check(lambda t: m(t), lambda t: tm(t), x)
    m.train()
    t = nn.tensor(x, requires_grad=True)
    out = m(t)
    neg = x < 0
    assert out.shape == (3, 4)
    np.testing.assert_array_equal(out.detach().numpy()[~neg], x[~neg])
    ratio = out.detach().numpy()[neg] / x[neg]
    assert np.all((ratio >= 0.1 - 1e-6) & (ratio <= 0.4 + 1e-6))
    out.sum().backward()
    np.testing.assert_allclose(t.grad.numpy()[neg], ratio, rtol=1e-5)
    with pytest.raises(ValueError, match="lower bound"):
        F.rrelu(t, 0.5, 0.1, training=True)
