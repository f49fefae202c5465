"""nn.spconv convolutions vs a dense torch convolution on the densified input and vs spconv
2.3.8 (CPU) on the same weights: outputs at the active sites, output index sets, feature,
weight and bias gradients; submanifold, strided, dilated, transposed, inverse and 2-D cases,
several batch sizes, batch items without sites and tensors without any site."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import nn
import nn.spconv as sp
from spconv_compare import (check_close, port, random_sites, run_ours, run_spconv,
                            sorted_rows, spconv_ref)

CONV = {2: TF.conv2d, 3: TF.conv3d}
DECONV = {2: TF.conv_transpose2d, 3: TF.conv_transpose3d}


def dense_reference(layer, idx, feats, shape, batch_size, grad_dense, active):
    """torch's dense convolution of the densified input, masked to the active outputs:
    (output, feature grad at the sites, weight grad in spconv's layout, bias grad)."""
    nd = len(shape)
    xd = torch.zeros((batch_size, *shape, feats.shape[1]))
    xd[tuple(torch.from_numpy(idx.astype(np.int64)).T)] = torch.from_numpy(feats)
    xd = xd.permute(0, nd + 1, *range(1, nd + 1)).contiguous().requires_grad_()
    w = torch.tensor(layer.weight.detach().numpy(), requires_grad=True)
    b = None if layer.bias is None else torch.tensor(layer.bias.detach().numpy(),
                                                     requires_grad=True)
    if layer.transposed:
        wt = w.permute(nd + 1, 0, *range(1, nd + 1))          # (in, out, *k)
        out = DECONV[nd](xd, wt, b, stride=layer.stride, padding=layer.padding,
                         dilation=layer.dilation, output_padding=layer.output_padding)
    else:
        wt = w.permute(0, nd + 1, *range(1, nd + 1))          # (out, in, *k)
        pad = [d * (k // 2) for k, d in zip(layer.kernel_size, layer.dilation)] \
            if layer.subm else layer.padding
        out = CONV[nd](xd, wt, b, stride=1 if layer.subm else layer.stride, padding=pad,
                       dilation=layer.dilation)
    mask = torch.zeros((batch_size, 1, *out.shape[2:]))
    if active.size:
        mask[(torch.from_numpy(active[:, 0].astype(np.int64)), 0,
              *torch.from_numpy(active[:, 1:].astype(np.int64)).T)] = 1
    out = out * mask
    (out * torch.from_numpy(grad_dense)).sum().backward()
    gx = xd.grad.permute(0, *range(2, nd + 2), 1)[tuple(torch.from_numpy(
        idx.astype(np.int64)).T)]
    return (out.detach().numpy(), gx.numpy(), w.grad.numpy(),
            None if b is None else b.grad.numpy())


CASES = [
    # (name, layer class, ndim, kwargs)
    ("subm3d", "SubMConv3d", 3, dict(kernel_size=3, padding=1)),
    ("subm3d_dilated", "SubMConv3d", 3, dict(kernel_size=3, dilation=2)),
    ("subm3d_k5", "SubMConv3d", 3, dict(kernel_size=[3, 5, 1])),
    ("conv3d_s2", "SparseConv3d", 3, dict(kernel_size=3, stride=2, padding=1)),
    ("conv3d_dilated", "SparseConv3d", 3, dict(kernel_size=3, dilation=2, padding=1)),
    ("conv3d_s2_k2", "SparseConv3d", 3, dict(kernel_size=2, stride=2)),
    ("deconv3d", "SparseConvTranspose3d", 3, dict(kernel_size=3, stride=2, padding=1)),
    ("subm2d", "SubMConv2d", 2, dict(kernel_size=3, padding=1)),
    ("conv2d_s2", "SparseConv2d", 2, dict(kernel_size=3, stride=2, padding=1)),
    ("conv2d_s1_d2", "SparseConv2d", 2, dict(kernel_size=3, dilation=2)),
    ("deconv2d", "SparseConvTranspose2d", 2, dict(kernel_size=3, stride=2, padding=1)),
]
SHAPES = {2: [13, 11], 3: [9, 8, 7]}


@pytest.mark.parametrize("batch_size,empty_items", [(1, ()), (3, (1,))])
@pytest.mark.parametrize("name,cls,nd,kwargs", CASES, ids=[c[0] for c in CASES])
def test_conv_vs_dense_and_spconv(name, cls, nd, kwargs, batch_size, empty_items):
    rng = np.random.default_rng(zlib.crc32(f"{name}{batch_size}".encode()))
    shape = SHAPES[nd]
    idx = random_sites(rng, batch_size, shape, 60 * batch_size, empty_items)
    cin, cout = 3, 5
    feats = rng.standard_normal((idx.shape[0], cin)).astype("float32")
    nn.manual_seed(0)
    ours = getattr(sp, cls)(cin, cout, bias=True, **kwargs)
    theirs = port(ours, getattr(spconv_ref(), cls)(cin, cout, bias=True, **kwargs))
    out_shape = ours(sp.SparseConvTensor(nn.tensor(feats), idx, shape, batch_size)).spatial_shape
    grad = rng.standard_normal((batch_size, cout, *out_shape)).astype("float32")

    x, y, dense = run_ours([ours], idx, feats, shape, batch_size, grad)
    f_ref, y_ref, dense_ref = run_spconv([theirs], idx, feats, shape, batch_size, grad)
    # the same output sites (in another order) and the same values there
    assert y.spatial_shape == list(y_ref.spatial_shape)
    np.testing.assert_array_equal(sorted_rows(y.indices), sorted_rows(y_ref.indices.numpy()))
    check_close(dense, dense_ref, f"{name}: dense output vs spconv")
    check_close(x.features.grad.numpy(), f_ref.grad.numpy(), f"{name}: feature grad vs spconv")
    check_close(ours.weight.grad.numpy(), theirs.weight.grad.numpy(),
                f"{name}: weight grad vs spconv")
    check_close(ours.bias.grad.numpy(), theirs.bias.grad.numpy(), f"{name}: bias grad vs spconv")

    out, gx, gw, gb = dense_reference(ours, idx, feats, shape, batch_size, grad, y.indices)
    check_close(dense, out, f"{name}: dense output vs torch")
    check_close(x.features.grad.numpy(), gx, f"{name}: feature grad vs torch")
    check_close(ours.weight.grad.numpy(), gw, f"{name}: weight grad vs torch")
    check_close(ours.bias.grad.numpy(), gb, f"{name}: bias grad vs torch")
    # every site that the dense convolution reaches is an output site (regular convolutions)
    if not ours.subm:
        reach = TF.conv3d if nd == 3 else TF.conv2d
        occ = torch.zeros((batch_size, 1, *shape))
        occ[(torch.from_numpy(idx[:, 0].astype(np.int64)), 0,
             *torch.from_numpy(idx[:, 1:].astype(np.int64)).T)] = 1
        ones = torch.ones((1, 1, *ours.kernel_size))
        if ours.transposed:
            hit = DECONV[nd](occ, ones, stride=ours.stride, padding=ours.padding,
                             dilation=ours.dilation)
        else:
            hit = reach(occ, ones, stride=ours.stride, padding=ours.padding,
                        dilation=ours.dilation)
        want = np.argwhere(hit[:, 0].numpy() > 0).astype(np.int32)
        np.testing.assert_array_equal(sorted_rows(y.indices), sorted_rows(want))


@pytest.mark.parametrize("nd", [2, 3])
def test_inverse_conv_vs_dense_and_spconv(nd):
    rng = np.random.default_rng(nd)
    shape, batch_size = SHAPES[nd], 2
    idx = random_sites(rng, batch_size, shape, 90)
    feats = rng.standard_normal((idx.shape[0], 4)).astype("float32")
    nn.manual_seed(1)
    down = getattr(sp, f"SparseConv{nd}d")(4, 6, 3, stride=2, padding=1, bias=False,
                                           indice_key="down")
    up = getattr(sp, f"SparseInverseConv{nd}d")(6, 3, 3, indice_key="down", bias=True)
    ref = spconv_ref()
    down_r = port(down, getattr(ref, f"SparseConv{nd}d")(4, 6, 3, stride=2, padding=1,
                                                         bias=False, indice_key="down"))
    up_r = port(up, getattr(ref, f"SparseInverseConv{nd}d")(6, 3, 3, indice_key="down",
                                                            bias=True))
    grad = rng.standard_normal((batch_size, 3, *shape)).astype("float32")
    x, y, dense = run_ours([down, up], idx, feats, shape, batch_size, grad)
    f_ref, y_ref, dense_ref = run_spconv([down_r, up_r], idx, feats, shape, batch_size, grad)
    # the inverse lands on the input sites, in the input's order
    np.testing.assert_array_equal(y.indices, idx)
    assert y.spatial_shape == shape
    check_close(dense, dense_ref, "inverse: output vs spconv")
    check_close(x.features.grad.numpy(), f_ref.grad.numpy(), "inverse: feature grad vs spconv")
    for a, b in ((down, down_r), (up, up_r)):
        check_close(a.weight.grad.numpy(), b.weight.grad.numpy(), "inverse: weight grads")
    check_close(up.bias.grad.numpy(), up_r.bias.grad.numpy(), "inverse: bias grad")

    # dense: the strided convolution, then a transposed convolution masked to the input sites
    xd = torch.zeros((batch_size, *shape, 4))
    xd[tuple(torch.from_numpy(idx.astype(np.int64)).T)] = torch.from_numpy(feats)
    xd = xd.movedim(-1, 1).contiguous().requires_grad_()
    w1 = torch.tensor(down.weight.detach().numpy()).movedim(-1, 1)
    w2 = torch.tensor(up.weight.detach().numpy()).movedim(-1, 0)        # (in, out, *k)
    mid = CONV[nd](xd, w1, stride=2, padding=1)
    outpad = [n - ((m - 1) * 2 - 2 + 3) for n, m in zip(shape, mid.shape[2:])]
    out = DECONV[nd](mid, w2, torch.from_numpy(up.bias.detach().numpy()), stride=2, padding=1,
                     output_padding=outpad)
    mask = torch.zeros((batch_size, 1, *shape))
    mask[(torch.from_numpy(idx[:, 0].astype(np.int64)), 0,
          *torch.from_numpy(idx[:, 1:].astype(np.int64)).T)] = 1
    (out * mask * torch.from_numpy(grad)).sum().backward()
    check_close(dense, (out * mask).detach().numpy(), "inverse: output vs torch")
    gx = xd.grad.movedim(1, -1)[tuple(torch.from_numpy(idx.astype(np.int64)).T)]
    check_close(x.features.grad.numpy(), gx.numpy(), "inverse: feature grad vs torch")


def test_subm_reuses_rulebook_by_indice_key():
    rng = np.random.default_rng(5)
    idx = random_sites(rng, 2, [8, 8, 8], 120)
    feats = rng.standard_normal((idx.shape[0], 4)).astype("float32")
    net = sp.SparseSequential(sp.SubMConv3d(4, 8, 3, padding=1, indice_key="s1", bias=False),
                              nn.BatchNorm1d(8), nn.ReLU(),
                              sp.SubMConv3d(8, 8, 3, padding=1, indice_key="s1", bias=False))
    x = sp.SparseConvTensor(nn.tensor(feats), idx, [8, 8, 8], 2)
    calls = []
    import nn.spconv.conv as conv_module
    real = conv_module.build_rulebook

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    conv_module.build_rulebook = counting
    try:
        y = net(x)
    finally:
        conv_module.build_rulebook = real
    assert len(calls) == 1
    assert set(y.indice_dict) == {"s1"} and x.indice_dict == {}
    book = y.indice_dict["s1"].book
    assert book.seconds > 0 and book.num_pairs >= idx.shape[0]
    np.testing.assert_array_equal(y.indices, idx)


def test_no_sites_and_deterministic():
    rng = np.random.default_rng(3)
    empty = np.zeros((0, 4), np.int32)
    for layer in (sp.SubMConv3d(2, 3, 3), sp.SparseConv3d(2, 3, 3, stride=2)):
        x = sp.SparseConvTensor(nn.tensor(np.zeros((0, 2), "float32"), requires_grad=True),
                                empty, [5, 5, 5], 2)
        y = layer(x)
        assert tuple(y.features.shape) == (0, 3) and y.indices.shape == (0, 4)
        y.dense().sum().backward()
        assert tuple(x.features.grad.shape) == (0, 2)
        np.testing.assert_array_equal(y.dense().detach().numpy(),
                                      np.zeros((2, 3, *y.spatial_shape), "float32"))
    # the same result bit for bit on every run (no atomics in the scatter)
    idx = random_sites(rng, 1, [16, 16, 16], 800)
    feats = nn.tensor(rng.standard_normal((idx.shape[0], 16)).astype("float32"))
    layer = sp.SparseConv3d(16, 16, 3, padding=1)
    runs = [layer(sp.SparseConvTensor(feats, idx, [16] * 3, 1)).features.detach().numpy()
            for _ in range(3)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r, runs[0])


def test_state_dict_ports_from_spconv():
    ref = spconv_ref()
    theirs = ref.SparseConv3d(4, 6, 3, stride=2, bias=True)
    ours = sp.SparseConv3d(4, 6, 3, stride=2, bias=True)
    assert set(ours.state_dict()) == set(theirs.state_dict()) == {"weight", "bias"}
    assert tuple(ours.weight.shape) == tuple(theirs.weight.shape) == (6, 3, 3, 3, 4)
    ours.load_state_dict({k: nn.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    np.testing.assert_array_equal(ours.weight.detach().numpy(), theirs.weight.detach().numpy())


def test_rulebook_needs_no_dense_grid():
    """A grid of 2 x 41 x 1600 x 1408 cells (a dense int32 map of it: 740 MB) with 3000
    active sites: the rulebooks of a submanifold and a strided layer take a few MB."""
    import tracemalloc
    rng = np.random.default_rng(4)
    shape = [41, 1600, 1408]
    idx = random_sites(rng, 2, shape, 3000)
    tracemalloc.start()
    for subm, stride in ((True, 1), (False, 2)):
        book, _ = sp.build_rulebook(idx, 2, shape, [3] * 3, [stride] * 3, [1] * 3, [1] * 3,
                                    subm=subm)
        assert book.num_pairs >= (idx.shape[0] if subm else 0) and book.seconds > 0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 << 20, f"rulebook construction peaked at {peak / 2**20:.0f} MB"
