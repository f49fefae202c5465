"""nn.spconv on cuda tensors (numba's CUDA simulator in the test suite): a network of
submanifold, strided, inverse convolutions and max pooling gives the CPU's values and
gradients, and its results stay on the GPU (the rulebook is built on the host)."""
import numpy as np
import pytest

import nn
import nn.spconv as sp
from spconv_compare import check_close, random_sites


@pytest.mark.slow          # ~30 s on the simulator (mostly compiling the GPU kernels)
def test_network_on_cuda_matches_cpu():
    rng = np.random.default_rng(11)
    shape, batch_size = [6, 5, 4], 2
    idx = random_sites(rng, batch_size, shape, 20)
    feats = rng.standard_normal((idx.shape[0], 3)).astype("float32")
    nn.manual_seed(0)
    net = sp.SparseSequential(
        sp.SubMConv3d(3, 4, 3, padding=1, indice_key="s"), nn.ReLU(),
        sp.SparseConv3d(4, 4, 3, stride=2, padding=1, indice_key="d"),
        sp.SparseInverseConv3d(4, 2, 3, indice_key="d", bias=False),
        sp.SparseMaxPool3d(2, 2))
    results = []
    for device in ("cpu", "cuda"):
        net.to(device)
        for p in net.parameters():
            p.grad = None
        x = sp.SparseConvTensor(nn.tensor(feats, device=device, requires_grad=True), idx,
                                shape, batch_size)
        y = net(x)
        dense = y.dense()
        assert y.features.device == device and dense.device == device
        (dense * dense).sum().backward()
        assert x.features.grad.device == device
        results.append((dense.detach().cpu().numpy(), x.features.grad.cpu().numpy(),
                        [p.grad.cpu().numpy() for p in net.parameters()]))
    (d0, g0, w0), (d1, g1, w1) = results
    check_close(d1, d0, "output on cuda")
    check_close(g1, g0, "feature grad on cuda")
    for a, b in zip(w1, w0):
        check_close(a, b, "weight grad on cuda")
