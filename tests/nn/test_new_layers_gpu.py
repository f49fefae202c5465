"""The layers added with attention, recurrent layers and friends on GPU tensors (numba's CUDA
simulator in the suite): each gives the values and gradients (inputs and parameters) that the
same computation gives on CPU tensors, its results and gradients stay on the GPU, and
``device="cuda"`` places a module's parameters there. Sizes are tiny: the simulator is slow."""
import copy

import numpy as np
import pytest

import nn

F = nn.functional
RNG = np.random.default_rng(0)


def randn(*shape):
    return RNG.standard_normal(shape).astype("float32")


def _tensors(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _tensors(o)]
    return [out] if isinstance(out, nn.Tensor) else []


def same_on_both(fn, arrays, module=None, rtol=1e-4, atol=1e-5):
    """Run ``fn(module, *tensors)`` on CPU tensors and on GPU tensors (a copy of ``module``
    moved with ``.cuda()``); compare every output, and the gradients of the floating inputs and
    of the parameters after backward of a random weighted sum of the outputs."""
    results = []
    for where in ("cpu", "cuda"):
        xs = [nn.tensor(a).to(where) for a in arrays]
        xs = [x.requires_grad_() if x.is_floating_point() else x for x in xs]
        m = None if module is None else copy.deepcopy(module).to(where)
        outs = _tensors(fn(m, *xs))
        loss = 0
        for k, o in enumerate(outs):
            assert o.device.type == where, (where, o.device)
            if o.requires_grad:
                w = np.random.default_rng(k).standard_normal(o.shape).astype("float32")
                loss = loss + (o * nn.tensor(w).to(where)).sum()
        loss.backward()
        grads = [x.grad for x in xs if x.requires_grad]
        grads += [] if m is None else [p.grad for p in m.parameters()]
        for g in grads:
            assert g is not None and g.device.type == where
        results.append(([o.detach().cpu().numpy() for o in outs],
                        [g.cpu().numpy() for g in grads]))
    (outs, grads), (gouts, ggrads) = results
    for a, b in zip(outs + grads, gouts + ggrads):
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol)


def _module(cls, *args, **kwargs):
    nn.manual_seed(0)
    return cls(*args, **kwargs)


def test_scaled_dot_product_attention_masks_and_causal():
    q, k, v = randn(2, 3, 4), randn(2, 3, 4), randn(2, 3, 4)
    bool_mask = np.array([[True, False, True], [True, True, False], [False, True, True]])
    same_on_both(lambda m, a, b, c, d: F.scaled_dot_product_attention(a, b, c, attn_mask=d),
                 [q, k, v, bool_mask])
    same_on_both(lambda m, a, b, c, d: F.scaled_dot_product_attention(a, b, c, attn_mask=d),
                 [q, k, v, randn(3, 3)])
    same_on_both(lambda m, a, b, c: F.scaled_dot_product_attention(a, b[:, :2], c[:, :2],
                                                                    is_causal=True),
                 [q, k, v])


def test_transformer_layers_with_multihead_attention():
    kpm = np.array([[False, False, True], [False, True, False]])
    enc = _module(nn.TransformerEncoderLayer, 4, 2, dim_feedforward=6, dropout=0.0)
    same_on_both(lambda m, a, d: m(a, src_key_padding_mask=d), [randn(3, 2, 4), kpm],
                 module=enc)
    dec = _module(nn.TransformerDecoderLayer, 4, 2, dim_feedforward=6, dropout=0.0,
                  batch_first=True, norm_first=True)
    # the causal mask is made on the tensors' device (it was made on the CPU)
    same_on_both(lambda m, a, b: m(a, b, tgt_is_causal=True,
                                   tgt_mask=nn.Transformer.generate_square_subsequent_mask(
                                       3, device=a.device)),
                 [randn(2, 3, 4), randn(2, 2, 4)], module=dec)


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_recurrent_layers_and_cells(cls):
    layer = _module(getattr(nn, cls), 2, 3, batch_first=True, bidirectional=cls == "GRU")
    same_on_both(lambda m, x: m(x), [randn(2, 2, 2)], module=layer)
    cell = _module(getattr(nn, cls + "Cell"), 2, 3)
    if cls == "LSTM":
        same_on_both(lambda m, x, h, c: m(x, (h, c)), [randn(2, 2), randn(2, 3), randn(2, 3)],
                     module=cell)
    else:
        same_on_both(lambda m, x, h: m(x, h), [randn(2, 2), randn(2, 3)], module=cell)


def test_rms_norm_and_transposed_convolutions():
    same_on_both(lambda m, x: m(x), [randn(2, 3, 4)], module=_module(nn.RMSNorm, 4))
    same_on_both(lambda m, x: m(x), [randn(2, 2, 3, 3)],
                 module=_module(nn.ConvTranspose2d, 2, 3, 2, stride=2, padding=1,
                                output_padding=1))
    same_on_both(lambda m, x: m(x), [randn(2, 2, 4)],
                 module=_module(nn.ConvTranspose1d, 2, 4, 3, stride=2, groups=2))


def test_einsum_and_batched_products():
    same_on_both(lambda m, a, b: nn.einsum("bij,bjk->bik", a, b), [randn(2, 3, 4), randn(2, 4, 2)])
    same_on_both(lambda m, i, a, b: (nn.baddbmm(i, a, b, beta=0.5, alpha=2.0),
                                     nn.addbmm(i[0], a, b)),
                 [randn(2, 3, 2), randn(2, 3, 4), randn(2, 4, 2)])


def test_sorting_median_and_repeat_interleave():
    x = randn(2, 5)
    same_on_both(lambda m, a: (nn.sort(a, dim=1, descending=True), a.argsort(dim=0),
                               nn.topk(a, 2, dim=1), a.median(), nn.median(a, dim=1),
                               a.repeat_interleave(2, dim=1),
                               nn.repeat_interleave(a, nn.tensor([1, 2]).to(a.device), dim=0)),
                 [x])


def test_vision_functions_and_shrinks():
    same_on_both(lambda m, a, b: (F.interpolate(a, scale_factor=2, mode="nearest"),
                                  F.interpolate(a, size=(3, 4), mode="bilinear"),
                                  F.pixel_shuffle(b, 2)), [randn(2, 1, 2, 3), randn(2, 4, 1, 2)])
    y, z = randn(2, 5), randn(1, 5)
    same_on_both(lambda m, a, b: (F.normalize(a, dim=1), F.cosine_similarity(a, b, dim=-1),
                                  F.hardshrink(a, 0.3), F.softshrink(a, 0.3), F.tanhshrink(a),
                                  nn.Hardshrink()(b), nn.Softshrink()(b), nn.Tanhshrink()(b)),
                 [y, z])


def test_clip_grad_norm_and_schedulers_on_gpu_parameters():
    from nn.optim import lr_scheduler as sched
    init = randn(2, 3)
    runs = []
    for where in ("cpu", "cuda"):
        p = nn.tensor(init).to(where).requires_grad_()
        opt = nn.optim.SGD([p], lr=0.1, momentum=0.9)
        s = sched.SequentialLR(opt, [sched.LinearLR(opt, 0.5, total_iters=2),
                                     sched.OneCycleLR(opt, max_lr=1.0, total_steps=4)],
                               milestones=[2])
        norms, lrs = [], []
        for _ in range(4):
            opt.zero_grad()
            (p * p * 3.0).sum().backward()
            total = nn.utils.clip_grad_norm_([p], 0.5)
            assert total.device.type == where and p.grad.device.type == where
            norms.append(total.item())
            opt.step()
            s.step()
            lrs.append(opt.param_groups[0]["lr"])
        assert p.device.type == where
        runs.append((norms, lrs, p.detach().cpu().numpy()))
    (n0, l0, p0), (n1, l1, p1) = runs
    np.testing.assert_allclose(n1, n0, rtol=1e-5)
    np.testing.assert_allclose(l1, l0)
    np.testing.assert_allclose(p1, p0, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [
    lambda: nn.RMSNorm(4, device="cuda"), lambda: nn.LayerNorm(4, device="cuda"),
    lambda: nn.GRU(2, 3, device="cuda"), lambda: nn.LSTMCell(2, 3, device="cuda"),
    lambda: nn.ConvTranspose2d(2, 3, 2, device="cuda"),
    lambda: nn.MultiheadAttention(4, 2, device="cuda"),
    lambda: nn.Transformer(4, 2, 1, 1, 6, device="cuda")])
def test_device_argument_places_parameters_on_the_gpu(make):
    m = make()
    assert all(p.device.type == "cuda" for p in m.parameters())


@pytest.mark.slow
def test_composed_functions_and_losses():
    """unfold/fold, embedding bags with offsets, distances and margin losses: the index and
    mask tensors they build from host metadata are made on the input's device."""
    same_on_both(lambda m, x: F.fold(F.unfold(x, 2, padding=1, stride=2), (3, 3), 2,
                                     padding=1, stride=2), [randn(2, 1, 3, 3)])
    bag = _module(nn.EmbeddingBag, 5, 2, mode="max")
    same_on_both(lambda m, i, o: (m(i, o), F.embedding_bag(i, m.weight, o, mode="mean",
                                                           padding_idx=3)),
                 [np.array([1, 3, 4, 0, 3]), np.array([0, 2, 2])], module=bag)
    a, b, c = randn(2, 3), randn(2, 3), randn(2, 3)
    same_on_both(lambda m, x, y, z, t, lab: (
        F.triplet_margin_loss(x, y, z, swap=True), F.cosine_embedding_loss(x, y, t),
        F.multilabel_margin_loss(x, lab), F.hinge_embedding_loss(x, t.unsqueeze(1)),
        F.margin_ranking_loss(x[:, 0], y[:, 0], t), nn.RReLU().eval()(z)),
        [a, b, c, np.array([1.0, -1.0], "float32"), np.array([[2, -1, 0], [0, 1, 2]])])
