"""Losses against torch.nn.functional and torch.nn given the same inputs (values and
gradients, every reduction), numpy references, finite differences (gradcheck, double
backward) and kernel counts (cross entropy: one kernel forward, one backward)."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import nn
from nn import functional as F

RNG = np.random.default_rng(7)
X = RNG.standard_normal((5, 4)).astype("float32")
T = np.array([1, -100, 3, 0, 3])
W = RNG.random(4).astype("float32")
X4 = RNG.standard_normal((2, 3, 4, 5)).astype("float32")
T4 = RNG.integers(0, 3, (2, 4, 5))
A = RNG.standard_normal((3, 7)).astype("float32")
B = RNG.standard_normal((3, 7)).astype("float32")
P = RNG.random((3, 7)).astype("float32")


def compare(ours, theirs, arrays, grads=(0,)):
    """Value and gradients of ``ours`` and ``theirs`` on the same ``arrays``."""
    mine = [nn.tensor(a, requires_grad=k in grads) for k, a in enumerate(arrays)]
    ref = [torch.tensor(a, requires_grad=k in grads) for k, a in enumerate(arrays)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, expect = ours(*mine), theirs(*ref)
    np.testing.assert_allclose(out.detach().numpy(), expect.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    seed = RNG.standard_normal(expect.shape).astype("float32")
    out.backward(nn.tensor(seed))
    expect.backward(torch.tensor(seed))
    for k in grads:
        np.testing.assert_allclose(mine[k].grad.numpy(), ref[k].grad.numpy(), rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_class_indices(reduction, smoothing):
    kw = dict(reduction=reduction, label_smoothing=smoothing, ignore_index=-100)
    compare(lambda x, w: F.cross_entropy(x, nn.tensor(T), w, **kw),
            lambda x, w: TF.cross_entropy(x, torch.tensor(T), w, **kw), [X, W])
    compare(lambda x: F.cross_entropy(x, nn.tensor(T4), **kw),
            lambda x: TF.cross_entropy(x, torch.tensor(T4), **kw), [X4])


def test_cross_entropy_probabilities_and_unbatched():
    probs = RNG.random(X4.shape).astype("float32")
    compare(lambda x, p: F.cross_entropy(x, p, label_smoothing=0.1),
            lambda x, p: TF.cross_entropy(x, p, label_smoothing=0.1), [X4, probs], (0, 1))
    compare(lambda x, p: F.cross_entropy(x, p, nn.tensor(W[:3]), reduction="none"),
            lambda x, p: TF.cross_entropy(x, p, torch.tensor(W[:3]), reduction="none"),
            [X4, probs], (0, 1))
    compare(lambda x: F.cross_entropy(x, nn.tensor(2)),
            lambda x: TF.cross_entropy(x, torch.tensor(2)), [X[0]])


def test_cross_entropy_matches_numpy_and_counts_kernels():
    x = nn.tensor(X, requires_grad=True)
    before = dict(F.kernel_calls)
    loss = F.cross_entropy(x, nn.tensor(T), nn.tensor(W))
    loss.backward()
    assert F.kernel_calls["cross_entropy"] == before.get("cross_entropy", 0) + 1
    assert (F.kernel_calls["cross_entropy_backward"]
            == before.get("cross_entropy_backward", 0) + 1)
    logp = X - np.log(np.exp(X).sum(1, keepdims=True))
    keep = T != -100
    rows, cls = np.arange(5)[keep], T[keep]
    expect = -(W[cls] * logp[rows, cls]).sum() / W[cls].sum()
    np.testing.assert_allclose(loss.item(), expect, rtol=1e-5)
    assert np.all(x.grad.numpy()[1] == 0)                    # the ignored sample


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(reduction):
    logp = X - np.log(np.exp(X).sum(1, keepdims=True))
    compare(lambda x: F.nll_loss(x, nn.tensor(T), nn.tensor(W), reduction=reduction),
            lambda x: TF.nll_loss(x, torch.tensor(T), torch.tensor(W), reduction=reduction),
            [logp])


POINTWISE = [
    ("mse_loss", {}, [A, B], (0, 1)), ("l1_loss", {}, [A, B], (0, 1)),
    ("smooth_l1_loss", {"beta": 0.5}, [A, B], (0, 1)),
    ("huber_loss", {"delta": 0.7}, [A, B], (0, 1)),
    ("binary_cross_entropy", {}, [1 / (1 + np.exp(-A)), P, P[::-1].copy()], (0,)),
    ("binary_cross_entropy_with_logits", {}, [A, P, P[::-1].copy(), P[0].copy()], (0, 1)),
    ("kl_div", {}, [A, P], (0, 1)), ("kl_div", {"log_target": True}, [A, B], (0, 1)),
]


def _call(lib, name, args, kwargs):
    fn = getattr(lib, name)
    if name == "binary_cross_entropy":
        return fn(args[0], args[1], args[2], **kwargs)
    if name == "binary_cross_entropy_with_logits":
        return fn(args[0], args[1], args[2], pos_weight=args[3], **kwargs)
    return fn(*args, **kwargs)


@pytest.mark.parametrize("name,kwargs,arrays,grads", POINTWISE)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_pointwise_losses(name, kwargs, arrays, grads, reduction):
    kwargs = dict(kwargs, reduction=reduction)
    compare(lambda *a: _call(F, name, a, kwargs), lambda *a: _call(TF, name, a, kwargs),
            arrays, grads)


def test_weighted_means_batchmean_and_broadcasting():
    compare(lambda a, b, w: F.mse_loss(a, b, weight=w),
            lambda a, b, w: TF.mse_loss(a, b, weight=w), [A, B[:1].copy(), P], (0, 1))
    compare(lambda a, b, w: F.l1_loss(a, b, weight=w),
            lambda a, b, w: TF.l1_loss(a, b, weight=w), [A, B, P], (0, 1))
    compare(lambda a, b, w: F.huber_loss(a, b, weight=w),
            lambda a, b, w: TF.huber_loss(a, b, weight=w), [A, B, P], (0, 1))
    compare(lambda a, b: F.kl_div(a, b, reduction="batchmean"),
            lambda a, b: TF.kl_div(a, b, reduction="batchmean"), [A, P], (0, 1))


def test_loss_modules_match_torch():
    w = torch.tensor(W)
    pairs = [(nn.CrossEntropyLoss(weight=nn.tensor(W), label_smoothing=0.1),
              torch.nn.CrossEntropyLoss(weight=w, label_smoothing=0.1), [X], T),
             (nn.NLLLoss(reduction="sum"), torch.nn.NLLLoss(reduction="sum"), [X], T)]
    for ours, theirs, arrays, target in pairs:
        assert repr(ours) == repr(theirs)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        compare(lambda x: ours(x, nn.tensor(target)), lambda x: theirs(x, torch.tensor(target)),
                arrays)
    for cls, kwargs, arrays in [("MSELoss", {}, [A, B]), ("L1Loss", {}, [A, B]),
                                ("SmoothL1Loss", {"beta": 0.3}, [A, B]),
                                ("HuberLoss", {"delta": 2.0}, [A, B]), ("BCELoss", {}, [P, P]),
                                ("BCEWithLogitsLoss", {}, [A, P]),
                                ("KLDivLoss", {"reduction": "batchmean"}, [A, P])]:
        ours, theirs = getattr(nn, cls)(**kwargs), getattr(torch.nn, cls)(**kwargs)
        assert repr(ours) == repr(theirs)
        compare(ours, theirs, arrays)


def t64(a):
    return nn.tensor(np.asarray(a, "float64"), requires_grad=True)


def test_gradcheck():
    x = t64(X[:3, :3])
    target = nn.tensor([2, 0, -100])
    weight = nn.tensor(W[:3].astype("float64"))
    assert nn.autograd.gradcheck(
        lambda x: F.cross_entropy(x, target, weight, label_smoothing=0.3), (x,))
    assert nn.autograd.gradcheck(lambda x, p: F.cross_entropy(x, p), (x, t64(P[:3, :3])))
    assert nn.autograd.gradcheck(lambda x: F.nll_loss(x, target, reduction="none"), (x,))
    a, b = t64(A[:2, :3]), t64(B[:2, :3])
    for name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"):
        assert nn.autograd.gradcheck(lambda a, b: getattr(F, name)(a, b), (a, b))
    p = t64(P[:2, :3])
    pos_weight = nn.tensor([2.0, 1.0, 0.5], dtype="float64")
    assert nn.autograd.gradcheck(
        lambda a, p: F.binary_cross_entropy_with_logits(a, p, pos_weight=pos_weight), (a, p))
    target = nn.tensor(P[1:3, 3:6].astype("float64"))
    assert nn.autograd.gradcheck(lambda p: F.binary_cross_entropy(p, target), (p,))
    assert nn.autograd.gradcheck(lambda a, p: F.kl_div(a, p, reduction="batchmean"), (a, p))


@pytest.mark.parametrize("loss", ["cross_entropy", "mse_loss",
                                  "binary_cross_entropy_with_logits"])
def test_double_backward(loss):
    def fn(x, y):
        if loss == "cross_entropy":
            out = F.cross_entropy(x, nn.tensor([1, 0]), label_smoothing=0.1)
        else:
            out = getattr(F, loss)(x, y)
        (gx,) = nn.autograd.grad(out, [x], create_graph=True)
        return gx * gx
    assert nn.autograd.gradcheck(fn, (t64(A[:2, :3]), t64(P[:2, :3])))
