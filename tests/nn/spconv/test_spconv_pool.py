"""nn.spconv pooling, densifying and containers: SparseMaxPool2d/3d vs spconv 2.3.8 (values,
sites, feature gradients), global pools vs numpy, dense()/from_dense vs torch, a
SparseSequential with dense modules vs the same network in spconv."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import nn
import nn.spconv as sp
from spconv_compare import (check_close, port, random_sites, run_ours, run_spconv,
                            sorted_rows, spconv_ref)


@pytest.mark.parametrize("nd,kwargs", [
    (3, dict(kernel_size=2, stride=2)),
    (3, dict(kernel_size=3, stride=2, padding=1)),
    (2, dict(kernel_size=3, stride=1, padding=1)),
    (2, dict(kernel_size=2)),
])
def test_maxpool_vs_spconv(nd, kwargs):
    rng = np.random.default_rng(nd + len(kwargs))
    shape, batch_size = ([9, 8, 7] if nd == 3 else [12, 10]), 2
    idx = random_sites(rng, batch_size, shape, 110)
    # distinct values: the maximum (and where its gradient goes) is unique; positive, as
    # after a ReLU: spconv's CPU pooling starts from 0 (its maxima are never negative), ours
    # from the lowest value (the maximum over active sites; see the torch check below)
    feats = rng.permutation(idx.shape[0] * 4).reshape(-1, 4).astype("float32") + 1
    ours = getattr(sp, f"SparseMaxPool{nd}d")(**kwargs)
    theirs = getattr(spconv_ref(), f"SparseMaxPool{nd}d")(**kwargs)
    out_shape = ours(sp.SparseConvTensor(nn.tensor(feats), idx, shape, batch_size)).spatial_shape
    grad = rng.standard_normal((batch_size, 4, *out_shape)).astype("float32")
    x, y, dense = run_ours([ours], idx, feats, shape, batch_size, grad)
    f_ref, y_ref, dense_ref = run_spconv([theirs], idx, feats, shape, batch_size, grad)
    assert y.spatial_shape == list(y_ref.spatial_shape)
    np.testing.assert_array_equal(sorted_rows(y.indices), sorted_rows(y_ref.indices.numpy()))
    check_close(dense, dense_ref, "maxpool output")
    check_close(x.features.grad.numpy(), f_ref.grad.numpy(), "maxpool feature grad")

    # negative features vs torch's max pooling of the dense input with -inf at empty cells
    feats = feats - 300
    x, y, dense = run_ours([ours], idx, feats, shape, batch_size, grad)
    xd = torch.full((batch_size, *shape, 4), -float("inf"))
    xd[tuple(torch.from_numpy(idx.astype(np.int64)).T)] = torch.from_numpy(feats)
    xd = xd.movedim(-1, 1).contiguous().requires_grad_()
    pool = getattr(torch.nn.functional, f"max_pool{nd}d")
    out = pool(xd, ours.kernel_size, ours.stride, ours.padding, ours.dilation)
    active = torch.isfinite(out[:, 0])
    np.testing.assert_array_equal(sorted_rows(y.indices),
                                  sorted_rows(np.argwhere(active.numpy()).astype(np.int32)))
    out = torch.where(torch.isfinite(out), out, torch.zeros(()))
    (out * torch.from_numpy(grad)).sum().backward()
    check_close(dense, out.detach().numpy(), "maxpool output vs torch")
    gx = xd.grad.movedim(1, -1)[tuple(torch.from_numpy(idx.astype(np.int64)).T)]
    check_close(x.features.grad.numpy(), gx.numpy(), "maxpool feature grad vs torch")


def test_global_pools_vs_numpy():
    rng = np.random.default_rng(7)
    idx = random_sites(rng, 3, [6, 6, 6], 50, empty_items=(1,))
    feats = rng.standard_normal((idx.shape[0], 5)).astype("float32")
    for cls, reduce in ((sp.SparseGlobalMaxPool, np.max), (sp.SparseGlobalAvgPool, np.mean)):
        x = sp.SparseConvTensor(nn.tensor(feats, requires_grad=True), idx, [6] * 3, 3)
        out = cls()(x)
        want = np.stack([reduce(feats[idx[:, 0] == b], 0) if (idx[:, 0] == b).any()
                         else np.zeros(5, "float32") for b in range(3)])
        check_close(out.detach().numpy(), want, cls.__name__)
        g = rng.standard_normal((3, 5)).astype("float32")
        (out * nn.tensor(g)).sum().backward()
        if reduce is np.mean:
            counts = np.bincount(idx[:, 0], minlength=3)
            want_g = g[idx[:, 0]] / counts[idx[:, 0], None]
        else:
            best = want[idx[:, 0]]
            want_g = np.where(feats == best, g[idx[:, 0]], 0)
        check_close(x.features.grad.numpy(), want_g, cls.__name__ + " grad")


def test_dense_and_from_dense_vs_torch():
    rng = np.random.default_rng(8)
    dense = rng.standard_normal((2, 5, 4, 6, 3)).astype("float32")
    dense[rng.random((2, 5, 4, 6)) < 0.8] = 0
    x = sp.SparseConvTensor.from_dense(nn.tensor(dense, requires_grad=True))
    xt = torch.from_numpy(dense).to_sparse(4)
    np.testing.assert_array_equal(sorted_rows(x.indices), sorted_rows(xt.indices().T.numpy()))
    assert x.spatial_shape == [5, 4, 6] and x.batch_size == 2
    np.testing.assert_array_equal(x.dense(channels_first=False).detach().numpy(), dense)
    np.testing.assert_array_equal(x.dense().detach().numpy(), dense.transpose(0, 4, 1, 2, 3))
    # gradients go through dense() and from_dense back to the dense input's active sites
    src = nn.tensor(dense, requires_grad=True)
    g = rng.standard_normal((2, 3, 5, 4, 6)).astype("float32")
    (sp.SparseConvTensor.from_dense(src).dense() * nn.tensor(g)).sum().backward()
    want = np.where((dense != 0).any(-1, keepdims=True), g.transpose(0, 2, 3, 4, 1), 0)
    np.testing.assert_array_equal(src.grad.numpy(), want)


def test_sparse_sequential_with_dense_modules_vs_spconv():
    rng = np.random.default_rng(9)
    shape = [10, 9, 8]
    idx = random_sites(rng, 2, shape, 150)
    feats = rng.standard_normal((idx.shape[0], 4)).astype("float32")
    nn.manual_seed(2)
    ours = sp.SparseSequential(
        sp.SubMConv3d(4, 8, 3, padding=1, bias=False, indice_key="subm1"),
        nn.ReLU(),
        sp.SparseConv3d(8, 6, 3, stride=2, padding=1, bias=False, indice_key="down1"),
        nn.ReLU(),
        sp.SparseInverseConv3d(6, 4, 3, indice_key="down1", bias=False),
    )
    ref = spconv_ref()
    theirs = ref.SparseSequential(
        ref.SubMConv3d(4, 8, 3, padding=1, bias=False, indice_key="subm1"), torch.nn.ReLU(),
        ref.SparseConv3d(8, 6, 3, stride=2, padding=1, bias=False, indice_key="down1"),
        torch.nn.ReLU(), ref.SparseInverseConv3d(6, 4, 3, indice_key="down1", bias=False))
    port(ours, theirs)
    grad = rng.standard_normal((2, 4, *shape)).astype("float32")
    x, y, dense = run_ours([ours], idx, feats, shape, 2, grad)
    f_ref, y_ref, dense_ref = run_spconv([theirs], idx, feats, shape, 2, grad)
    check_close(dense, dense_ref, "network output")
    check_close(x.features.grad.numpy(), f_ref.grad.numpy(), "network feature grad")
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        check_close(p.grad.numpy(), q.grad.numpy(), f"grad of {name}")
    assert isinstance(sp.ToDense()(y), nn.Tensor)
