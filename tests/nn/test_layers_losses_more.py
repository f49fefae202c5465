"""The losses, layers and optimizers added after the first PyTorch-parity round, against
torch: Poisson/Gaussian NLL, soft-margin, multi-label soft-margin, multi-margin and triplet
(any distance) losses in every reduction; local response norm, LP pooling, Softmax2d,
Dropout3d, channel shuffle, pdist, gumbel_softmax, the lazy convolutions and batch norms;
Rprop and ASGD. Values and gradients of every floating input (float32, rtol 1e-4)."""
import copy

import numpy as np
import pytest
import torch

import nn
from nn import optim
from torch_compare import check as compare, close, pair

F = nn.functional
TF = torch.nn.functional
rng = np.random.default_rng(0)
REDUCTIONS = ["none", "mean", "sum"]


def randn(*shape):
    return rng.standard_normal(shape).astype("float32")


def check(ours_fn, theirs_fn, *arrays, **kw):
    """torch_compare.check, its output gradients drawn from this file's generator."""
    compare(ours_fn, theirs_fn, *arrays, rng=rng, **kw)


# ----------------------------------------------------------------------------- losses

@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input, full", [(True, False), (False, True), (True, True)])
def test_poisson_nll_loss(reduction, log_input, full):
    x = randn(3, 4)
    if not log_input:
        x = np.abs(x) + 0.1
    t = rng.integers(0 if not full else 1, 5, (3, 4)).astype("float32")
    t[0, 0] = 0.5                   # (torch's target gradient is NaN at 0 with full)
    kw = dict(log_input=log_input, full=full, reduction=reduction)
    check(lambda a, b: F.poisson_nll_loss(a, b, **kw),
          lambda a, b: TF.poisson_nll_loss(a, b, **kw), x, t)
    check(lambda a, b: nn.PoissonNLLLoss(**kw)(a, b),
          lambda a, b: torch.nn.PoissonNLLLoss(**kw)(a, b), x, t)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("var_shape", [(4, 3), (4,), (4, 1)])
def test_gaussian_nll_loss(reduction, var_shape):
    x, t = randn(4, 3), randn(4, 3)
    var = np.abs(randn(*var_shape)) + 1e-3
    var.flat[0] = 1e-9                  # clamped at eps; its gradient passes the clamp
    kw = dict(full=True, reduction=reduction)
    check(lambda a, b, v: F.gaussian_nll_loss(a, b, v, **kw),
          lambda a, b, v: TF.gaussian_nll_loss(a, b, v, **kw), x, t, var)
    check(lambda a, b, v: nn.GaussianNLLLoss(**kw)(a, b, v),
          lambda a, b, v: torch.nn.GaussianNLLLoss(**kw)(a, b, v), x, t, var)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_soft_margin_loss(reduction):
    x, t = randn(3, 5) * 10, np.sign(randn(3, 5)).astype("float32")
    check(lambda a, b: F.soft_margin_loss(a, b, reduction=reduction),
          lambda a, b: TF.soft_margin_loss(a, b, reduction=reduction), x, t, fixed=(1,))
    check(lambda a, b: nn.SoftMarginLoss(reduction=reduction)(a, b),
          lambda a, b: torch.nn.SoftMarginLoss(reduction=reduction)(a, b), x, t, fixed=(1,))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_multilabel_soft_margin_loss(reduction, weighted):
    x, t = randn(3, 4) * 5, (randn(3, 4) > 0).astype("float32")
    w = np.abs(randn(4)) if weighted else None
    wt = (nn.tensor(w), torch.tensor(w)) if weighted else (None, None)
    check(lambda a, b: F.multilabel_soft_margin_loss(a, b, wt[0], reduction=reduction),
          lambda a, b: TF.multilabel_soft_margin_loss(a, b, wt[1], reduction=reduction), x, t)
    check(lambda a, b: nn.MultiLabelSoftMarginLoss(wt[0], reduction=reduction)(a, b),
          lambda a, b: torch.nn.MultiLabelSoftMarginLoss(wt[1], reduction=reduction)(a, b),
          x, t)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p, margin, weighted", [(1, 1.0, False), (2, 0.5, True),
                                                 (1, 2.0, True)])
def test_multi_margin_loss(reduction, p, margin, weighted):
    x, t = randn(4, 5), rng.integers(0, 5, 4).astype("int64")
    w = np.abs(randn(5)) if weighted else None
    wt = (nn.tensor(w), torch.tensor(w)) if weighted else (None, None)
    kw = dict(p=p, margin=margin, reduction=reduction)
    check(lambda a, b: F.multi_margin_loss(a, b, weight=wt[0], **kw),
          lambda a, b: TF.multi_margin_loss(a, b, weight=wt[1], **kw), x, t)
    check(lambda a, b: nn.MultiMarginLoss(weight=wt[0], **kw)(a, b),
          lambda a, b: torch.nn.MultiMarginLoss(weight=wt[1], **kw)(a, b), x, t)
    # one unbatched sample
    check(lambda a, b: F.multi_margin_loss(a, b, **kw),
          lambda a, b: TF.multi_margin_loss(a, b, **kw), x[0], t[:1].reshape(()))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("custom, swap", [(False, False), (False, True), (True, True)])
def test_triplet_margin_with_distance_loss(reduction, custom, swap):
    a, p, n = randn(4, 3), randn(4, 3), randn(4, 3)

    def ours_d(x, y):
        return 1.0 - F.cosine_similarity(x, y)

    def theirs_d(x, y):
        return 1.0 - TF.cosine_similarity(x, y)
    kw = dict(margin=0.7, swap=swap, reduction=reduction)
    check(lambda *xs: F.triplet_margin_with_distance_loss(
              *xs, distance_function=ours_d if custom else None, **kw),
          lambda *xs: TF.triplet_margin_with_distance_loss(
              *xs, distance_function=theirs_d if custom else None, **kw), a, p, n)
    check(lambda *xs: nn.TripletMarginWithDistanceLoss(
              distance_function=ours_d if custom else None, **kw)(*xs),
          lambda *xs: torch.nn.TripletMarginWithDistanceLoss(
              distance_function=theirs_d if custom else None, **kw)(*xs), a, p, n)


CTC_TARGETS = np.array([[1, 2, 2], [3, 1, 1], [1, 1, 3]])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("concatenated", [False, True])
def test_ctc_loss(reduction, concatenated):
    x = randn(6, 3, 4)
    lengths, target_lengths = np.array([6, 5, 4]), np.array([3, 1, 2])
    targets = (np.concatenate([CTC_TARGETS[k, :n] for k, n in enumerate(target_lengths)])
               if concatenated else CTC_TARGETS)
    args = (targets, lengths, target_lengths)
    check(lambda a, *r: F.ctc_loss(a.log_softmax(2), *r, reduction=reduction),
          lambda a, *r: TF.ctc_loss(a.log_softmax(2), *r, reduction=reduction), x, *args)
    check(lambda a, *r: nn.CTCLoss(blank=0, reduction=reduction)(a.log_softmax(2), *r),
          lambda a, *r: torch.nn.CTCLoss(blank=0, reduction=reduction)(a.log_softmax(2), *r),
          x, *args)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_impossible_alignments_and_other_blank(zero_infinity):
    x = randn(2, 3, 4)          # 2 steps cannot emit 3 labels; an empty target can
    args = (CTC_TARGETS - 1, np.array([2, 2, 2]), np.array([3, 1, 0]))
    kw = dict(blank=3, reduction="none", zero_infinity=zero_infinity)
    if zero_infinity:
        check(lambda a, *r: F.ctc_loss(a.log_softmax(2), *r, **kw),
              lambda a, *r: TF.ctc_loss(a.log_softmax(2), *r, **kw), x, *args)
    else:
        out = F.ctc_loss(nn.tensor(x).log_softmax(2), *map(nn.tensor, args), **kw)
        ref = TF.ctc_loss(torch.tensor(x).log_softmax(2), *map(torch.tensor, args), **kw)
        close(out, ref)
    # unbatched (T, C)
    check(lambda a, t: F.ctc_loss(a.log_softmax(1), t, [5], [2]),
          lambda a, t: TF.ctc_loss(a.log_softmax(1), t, [5], [2]), randn(5, 4),
          np.array([2, 1]))


def test_new_losses_on_the_gpu():
    x, t = randn(2, 3), np.sign(randn(2, 3)).astype("float32")
    a = nn.tensor(x, device="cuda", requires_grad=True)
    ta = torch.tensor(x, requires_grad=True)
    loss = F.soft_margin_loss(a, nn.tensor(t, device="cuda")) + F.multi_margin_loss(
        a, nn.tensor(np.array([0, 2]), device="cuda"), p=2)
    tloss = TF.soft_margin_loss(ta, torch.tensor(t)) + TF.multi_margin_loss(
        ta, torch.tensor([0, 2]), p=2)
    loss.backward()
    tloss.backward()
    assert loss.is_cuda and a.grad.is_cuda
    close(loss.cpu(), tloss)
    close(a.grad.cpu(), ta.grad)


# ----------------------------------------------------------------------------- layers

@pytest.mark.parametrize("shape, size", [((2, 5, 4), 3), ((2, 6, 3, 3), 2),
                                         ((1, 4, 2, 2, 3), 5)])
def test_local_response_norm(shape, size):
    x = randn(*shape)
    kw = dict(alpha=0.1, beta=0.6, k=1.5)
    check(lambda a: F.local_response_norm(a, size, **kw),
          lambda a: TF.local_response_norm(a, size, **kw), x)
    check(lambda a: nn.LocalResponseNorm(size, **kw)(a),
          lambda a: torch.nn.LocalResponseNorm(size, **kw)(a), x)


@pytest.mark.parametrize("norm_type, kernel, stride", [(2, 2, None), (3.0, 3, 1),
                                                       (1.5, 2, 1)])
def test_lp_pool(norm_type, kernel, stride):
    x1, x2 = np.abs(randn(2, 3, 7)) + 0.1, np.abs(randn(2, 3, 5, 6)) + 0.1
    check(lambda a: F.lp_pool1d(a, norm_type, kernel, stride),
          lambda a: TF.lp_pool1d(a, norm_type, kernel, stride), x1)
    check(lambda a: nn.LPPool1d(norm_type, kernel, stride)(a),
          lambda a: torch.nn.LPPool1d(norm_type, kernel, stride)(a), x1)
    k2 = (kernel, 2)
    check(lambda a: F.lp_pool2d(a, norm_type, k2, stride),
          lambda a: TF.lp_pool2d(a, norm_type, k2, stride), x2)
    check(lambda a: nn.LPPool2d(norm_type, kernel, stride)(a),
          lambda a: torch.nn.LPPool2d(norm_type, kernel, stride)(a), x2)


def test_softmax2d_and_channel_shuffle():
    for shape in [(2, 3, 2, 2), (3, 2, 4)]:
        check(lambda a: nn.Softmax2d()(a), lambda a: torch.nn.Softmax2d()(a), randn(*shape))
    x = randn(2, 6, 2, 3)
    check(lambda a: F.channel_shuffle(a, 3), lambda a: TF.channel_shuffle(a, 3), x,
          grad=False)
    check(lambda a: nn.ChannelShuffle(2)(a), lambda a: torch.nn.ChannelShuffle(2)(a), x,
          grad=False)
    a = nn.tensor(x, requires_grad=True)
    F.channel_shuffle(a, 2).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.ones_like(x))
    assert repr(nn.ChannelShuffle(2)) == "ChannelShuffle(groups=2)"


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
def test_pdist(p):
    check(lambda a: F.pdist(a, p), lambda a: TF.pdist(a, p), randn(5, 3))


def test_dropout3d_zeroes_whole_channels():
    nn.manual_seed(0)
    x = nn.ones(4, 8, 2, 2, 3, requires_grad=True)
    m = nn.Dropout3d(0.5)
    y = m(x)
    per_channel = y.detach().numpy().reshape(4, 8, -1)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert np.all(per_channel.min(-1) == per_channel.max(-1))   # one value per channel
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())
    unbatched = F.dropout3d(nn.ones(8, 2, 2, 2), 0.5).numpy().reshape(8, -1)
    assert np.all(unbatched.min(-1) == unbatched.max(-1))
    m.eval()
    assert m(x) is x or np.array_equal(m(x).detach().numpy(), x.detach().numpy())
    with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d"):
        F.dropout3d(nn.ones(2, 2, 2), 0.5)


@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax_properties(hard):
    nn.manual_seed(3)
    logits = nn.tensor(randn(6, 5), requires_grad=True)
    y = F.gumbel_softmax(logits, tau=0.5, hard=hard)
    values = y.detach().numpy()
    np.testing.assert_allclose(values.sum(-1), 1.0, rtol=1e-5)
    if hard:
        assert set(np.unique(values)) <= {0.0, 1.0}
    weights = nn.tensor(randn(6, 5))
    (y * weights).sum().backward()
    nn.manual_seed(3)
    again = F.gumbel_softmax(logits.detach(), tau=0.5, hard=hard)
    np.testing.assert_array_equal(again.numpy(), values)        # seeded: reproducible
    # the same noise, soft: the gradient (straight-through when hard) is softmax's at tau
    nn.manual_seed(3)
    soft = F.gumbel_softmax(logits.detach(), tau=0.5, hard=False).numpy().astype("float64")
    w = weights.numpy().astype("float64")
    expected = soft * (w - (soft * w).sum(-1, keepdims=True)) / 0.5
    np.testing.assert_allclose(logits.grad.numpy(), expected, rtol=1e-4, atol=1e-6)
    if hard:
        np.testing.assert_array_equal(values, np.eye(5)[soft.argmax(-1)])
    else:
        np.testing.assert_allclose(values, soft, rtol=1e-6)
    # low temperature: the soft sample concentrates on one class
    nn.manual_seed(4)
    cold = F.gumbel_softmax(nn.tensor(randn(50, 4)), tau=1e-3, dim=1).numpy()
    assert np.mean(cold.max(1) > 0.99) > 0.9


@pytest.mark.parametrize("lazy, eager, shape", [
    (lambda: nn.LazyConv1d(4, 3, padding=1), torch.nn.Conv1d, (2, 3, 6)),
    (lambda: nn.LazyConv2d(6, (2, 3), stride=2, groups=3, bias=False), torch.nn.Conv2d,
     (2, 6, 5, 5)),
    (lambda: nn.LazyConv3d(2, 2), torch.nn.Conv3d, (3, 2, 3, 3))])
def test_lazy_convolutions(lazy, eager, shape):
    m = lazy()
    assert isinstance(m.weight, nn.UninitializedParameter)
    x = randn(*shape)
    m(nn.tensor(x))
    assert type(m).__name__ == eager.__name__
    in_channels = shape[1] if len(shape) == m.nd + 2 else shape[0]
    assert m.in_channels == in_channels
    t = eager(in_channels, m.out_channels, m.kernel_size, m.stride, m.padding, m.dilation,
              m.groups, m.bias is not None)
    t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()})
    check(lambda a: m(a), lambda a: t(a), x)
    fresh = lazy()
    fresh.load_state_dict(m.state_dict())
    close(fresh(nn.tensor(x)), t(torch.tensor(x)))


@pytest.mark.parametrize("lazy, eager, shape", [
    (nn.LazyBatchNorm1d, torch.nn.BatchNorm1d, (4, 3)),
    (nn.LazyBatchNorm1d, torch.nn.BatchNorm1d, (4, 3, 5)),
    (nn.LazyBatchNorm2d, torch.nn.BatchNorm2d, (2, 3, 2, 2))])
def test_lazy_batch_norms(lazy, eager, shape):
    m, t = lazy(), eager(shape[1])
    assert isinstance(m.weight, nn.UninitializedParameter)
    x = randn(*shape)
    check(lambda a: m(a), lambda a: t(a), x)
    assert type(m).__name__ == eager.__name__ and m.num_features == shape[1]
    close(m.running_mean, t.running_mean)
    close(m.running_var, t.running_var)
    assert int(m.num_batches_tracked.item()) == 1
    fresh = lazy()
    fresh.load_state_dict(m.state_dict())
    fresh.eval(), t.eval()
    close(fresh(nn.tensor(x)), t(torch.tensor(x)))
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.LazyBatchNorm2d()(nn.ones(2, 3))


@pytest.mark.parametrize("kernel, output_size", [(2, (4, 5)), ((3, 2), (5, 6)), (2, (1, 1))])
def test_fractional_max_pool2d_with_given_samples_matches_torch(kernel, output_size):
    x, samples = randn(2, 3, 9, 8), rng.random((2, 3, 2)).astype("float32")
    a, ta = pair(x)
    out, index = F.fractional_max_pool2d(a, kernel, output_size, return_indices=True,
                                         _random_samples=nn.tensor(samples))
    tout, tindex = TF.fractional_max_pool2d(ta, kernel, output_size, return_indices=True,
                                            _random_samples=torch.tensor(samples))
    close(out, tout)
    np.testing.assert_array_equal(index.numpy(), tindex.numpy())
    g = randn(*out.shape)
    (out * nn.tensor(g)).sum().backward()
    (tout * torch.tensor(g)).sum().backward()
    close(a.grad, ta.grad)
    m = nn.FractionalMaxPool2d(kernel, output_size, _random_samples=nn.tensor(samples))
    close(m(nn.tensor(x)), tout)


def test_fractional_max_pool2d_random_properties():
    nn.manual_seed(0)
    x = nn.tensor(randn(2, 3, 10, 10))
    out = nn.FractionalMaxPool2d(3, output_ratio=0.5)(x)
    assert out.shape == (2, 3, 5, 5)
    # every output is one of its plane's values, at least the plane's minimum
    planes = x.numpy().reshape(2, 3, -1)
    values = out.numpy().reshape(2, 3, -1)
    for p, v in zip(planes.reshape(6, -1), values.reshape(6, -1)):
        assert np.isin(v, p).all() and v.min() >= p.min()
    assert F.fractional_max_pool2d(x[0], 2, output_size=3).shape == (3, 3, 3)


# ----------------------------------------------------------------------------- optimizers

def _problem(lib, device=None):
    """A tiny two-layer model's fixed weights (leaves) and data."""
    local = np.random.default_rng(1)
    shapes = ((4, 3), (4,), (2, 4), (2,), (5, 3), (5, 2))
    arrays = [local.standard_normal(s).astype("float32") for s in shapes]
    kw = {} if device is None else {"device": device}
    params = [lib.tensor(a, requires_grad=True, **kw) for a in arrays[:4]]
    return params, [lib.tensor(a, **kw) for a in arrays[4:]]


def _run(opt, params, data, steps):
    """``steps`` steps of ``opt``; the parameters (as arrays) after each."""
    X, Y = data
    history = []
    for _ in range(steps):
        opt.zero_grad()
        h = (X @ params[0].T + params[1]).tanh()
        ((h @ params[2].T + params[3] - Y) ** 2).mean().backward()
        opt.step()
        history.append([p.detach().cpu().numpy().copy() for p in params])
    return history


def _trajectory(lib, make, steps=5, device=None):
    """Five steps of the tiny model from fixed weights: the history, optimizer, params."""
    params, data = _problem(lib, device)
    opt = make(params)
    return _run(opt, params, data, steps), opt, params


OPTIMIZERS = [
    ("Rprop", {}),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.06), maximize=True)),
    ("ASGD", {}),
    ("ASGD", dict(lr=0.05, lambd=1e-2, alpha=0.5, t0=2, weight_decay=0.1)),
    ("ASGD", dict(lr=0.02, t0=0, maximize=True))]


@pytest.mark.parametrize("name, kw", OPTIMIZERS)
def test_optimizer_trajectories_match_torch(name, kw):
    ours, opt, params = _trajectory(nn, lambda ps: getattr(optim, name)(ps, **kw))
    theirs, topt, _ = _trajectory(torch, lambda ps: getattr(torch.optim, name)(ps, **kw))
    for mine, ref in zip(ours, theirs):
        for a, b in zip(mine, ref):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    state, tstate = opt.state_dict(), topt.state_dict()
    assert sorted(state["state"][0]) == sorted(tstate["state"][0])
    for k, entries in tstate["state"].items():
        for key, value in entries.items():
            np.testing.assert_allclose(state["state"][k][key].numpy(), value.numpy(),
                                       rtol=1e-5, atol=1e-6)
    mine_group = {k: v for k, v in state["param_groups"][0].items()}
    for key, value in tstate["param_groups"][0].items():
        if key in ("lr", "etas", "step_sizes", "lambd", "alpha", "t0", "weight_decay",
                   "maximize", "params"):
            assert mine_group[key] == (tuple(value) if isinstance(value, tuple) else value)


@pytest.mark.parametrize("name, kw", [OPTIMIZERS[1], OPTIMIZERS[3]])
def test_optimizer_state_dict_round_trip_resumes(name, kw):
    full, _, _ = _trajectory(nn, lambda ps: getattr(optim, name)(ps, **kw), steps=5)
    _, opt, params = _trajectory(nn, lambda ps: getattr(optim, name)(ps, **kw), steps=3)
    saved = copy.deepcopy(opt.state_dict())
    resumed = [nn.tensor(p.detach().numpy().copy(), requires_grad=True) for p in params]
    opt2 = getattr(optim, name)(resumed, **kw)
    opt2.load_state_dict(saved)
    assert sorted(opt2.state[resumed[0]]) == sorted(saved["state"][0])
    _, data = _problem(nn)
    last = _run(opt2, resumed, data, 2)[-1]
    for a, b in zip(last, full[-1]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert opt2.state[resumed[0]]["step"].item() == 5


def test_rprop_and_asgd_on_the_gpu():
    for name, kw in (OPTIMIZERS[1], OPTIMIZERS[3]):
        ours, opt, params = _trajectory(nn, lambda ps: getattr(optim, name)(ps, **kw),
                                        steps=2, device="cuda")
        theirs, _, _ = _trajectory(torch, lambda ps: getattr(torch.optim, name)(ps, **kw),
                                   steps=2)
        assert params[0].is_cuda
        for a, b in zip(ours[-1], theirs[-1]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
