"""nn tensors on the GPU (numba's CUDA simulator in the test suite): the same programs give
the same values and gradients as on the CPU, and results stay on the GPU."""
import numpy as np
import pytest

import nn

RNG = np.random.default_rng(0)


def same_on_both(fn, *arrays, rtol=1e-5):
    """Run ``fn`` on CPU tensors and on GPU tensors; compare the results and the gradients."""
    results = []
    for where in ("cpu", "cuda"):
        xs = [nn.tensor(a).to(where).requires_grad_() for a in arrays]
        out = fn(*xs)
        assert out.device == where
        out.backward()
        for x in xs:
            assert x.grad.device == where
        results.append((out.item(), [x.grad.cpu().numpy() for x in xs]))
    (a, ga), (b, gb) = results
    np.testing.assert_allclose(b, a, rtol=rtol)
    for g, h in zip(ga, gb):
        np.testing.assert_allclose(h, g, rtol=rtol, atol=1e-6)


def test_device_moves_and_factories():
    x = nn.tensor([1.0, 2.0]).cuda()
    assert x.is_cuda and x.device == nn.device("cuda:0") and str(x.device) == "cuda:0"
    assert repr(x) == "tensor([1., 2.], device='cuda:0')"
    assert x.cpu().tolist() == [1.0, 2.0] and not x.cpu().is_cuda
    assert x.to("cpu", "float64").dtype == "float64"
    z = nn.zeros(2, 3, device="cuda")
    assert z.is_cuda and nn.ones_like(z).is_cuda and z.sum().item() == 0
    assert nn.cuda.is_available() and nn.cuda.device_count() == 1


def test_mlp_forward_and_backward():
    def loss(x, w1, w2):
        return ((x @ w1).relu() @ w2).tanh().pow(2).mean()
    same_on_both(loss, RNG.standard_normal((3, 4)).astype("float32"),
                 RNG.standard_normal((4, 5)).astype("float32"),
                 RNG.standard_normal((5, 2)).astype("float32"))


def test_views_slices_and_joins():
    def loss(x):
        y = x.T[1:3] * 2.0
        z = nn.cat([y, x[0:1, :3]], 0)
        return (z.reshape(-1) ** 2).mean() + x.sum(1).max() + nn.stack([x, x]).sum()
    same_on_both(loss, RNG.standard_normal((3, 4)).astype("float32"))


def test_linear_with_a_batch_of_one():
    def loss(x, w, b):
        return nn.functional.linear(x, w, b).sum()
    same_on_both(loss, RNG.standard_normal((1, 5)).astype("float32"),
                 RNG.standard_normal((2, 5)).astype("float32"),
                 RNG.standard_normal((2,)).astype("float32"))


def test_module_to_cuda_and_back():
    nn.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    x = nn.tensor(RNG.standard_normal((2, 4)).astype("float32"))
    want = model(x)
    model.to("cuda")
    assert all(p.is_cuda for p in model.parameters())
    got = model(x.cuda())
    assert got.is_cuda
    np.testing.assert_allclose(got.cpu().detach().numpy(), want.detach().numpy(), rtol=1e-5)


def test_kernels_of_gpu_tensors_are_cuda_builds(monkeypatch):
    from nn.ops import cpu

    def no_cpu_kernels(*args, **kwargs):
        raise AssertionError("a CPU kernel ran for GPU tensors")
    monkeypatch.setattr(cpu, "build", no_cpu_kernels)
    x = nn.tensor([1.0, 2.0, 3.0], device="cuda", requires_grad=True)
    y = (x.exp() * 3.0).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 3 * np.exp([1.0, 2.0, 3.0]), rtol=1e-6)


def test_mixing_devices_is_an_error():
    with pytest.raises(RuntimeError, match="same device"):
        nn.ones(3) @ nn.ones(3, 2).cuda()


def test_norm_and_loss_kernels():
    target = np.array([2, 0, 1])

    def loss(x, w, b):
        h = nn.functional.batch_norm(x, None, None, w, b, training=True)
        t = nn.tensor(target).to(x.device)
        return nn.functional.cross_entropy(h, t) + nn.functional.mse_loss(h, h * 0.5)
    same_on_both(loss, RNG.standard_normal((3, 4)).astype("float32"),
                 RNG.uniform(0.5, 1.5, 4).astype("float32"),
                 RNG.standard_normal(4).astype("float32"), rtol=1e-4)


def test_dropout_masks_on_the_gpu():
    nn.manual_seed(0)
    x = nn.ones(64, device="cuda")
    y = nn.functional.dropout(x, 0.5)
    assert y.is_cuda
    values = set(np.round(y.cpu().numpy(), 6).tolist())
    assert values <= {0.0, 2.0} and len(values) == 2


@pytest.mark.parametrize("shapes", [((9, 13), (13, 6)), ((2, 5, 7), (2, 7, 10))])
def test_matrix_products_on_tiles(shapes):
    """Products on cuda tensors run as shared-memory tiles (zero-padded operands): values and
    gradients at sizes that are no multiple of the tile agree with the CPU."""
    def loss(a, b):
        return ((a @ b) * (a @ b)).sum()
    same_on_both(loss, *(RNG.standard_normal(s).astype("float32") for s in shapes), rtol=1e-4)


def test_linear_kernel_is_the_tiled_product():
    from nn.ops import cpu_matmul, gpu
    f = gpu.build(cpu_matmul.dense, [(10, 7), (5, 7), (5,)])
    src = f.module.get_source()
    assert "cuda.shared.array" in src and "cuda.local.array" in src
    x, w, b = (RNG.standard_normal(s).astype("float32") for s in ((10, 7), (5, 7), (5,)))
    from numba import cuda
    out = f(*(cuda.to_device(a) for a in (x, w, b))).copy_to_host()
    np.testing.assert_allclose(out, x @ w.T + b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("geometry", [dict(padding=1), dict(stride=2, padding=(2, 0),
                                                             dilation=(1, 2))])
def test_convolution_as_implicit_gemm(geometry):
    """Dense convolutions on cuda tensors run as one tiled product per image (the input's
    patches gathered into the shared tiles): the forward value, the input gradient (itself a
    convolution) and the kernel and bias gradients agree with the CPU."""
    def loss(x, w, b):
        y = nn.functional.conv2d(x, w, b, **geometry)
        return (y * y).sum()
    same_on_both(loss, RNG.standard_normal((2, 3, 7, 6)).astype("float32"),
                 RNG.standard_normal((5, 3, 3, 2)).astype("float32"),
                 RNG.standard_normal((5,)).astype("float32"), rtol=1e-4)


def test_convolution_kernel_is_the_tiled_product():
    from nn.ops import conv, gpu
    f = gpu.build(conv.conv2d, [(2, 3, 6, 5), (4, 3, 3, 3), (4,)], padding=(1, 1, 1, 1))
    src = f.module.get_source()
    assert "patch_tiles = cuda.shared.array" in src and "weight_tiles = cuda.shared.array" in src
    x, w, b = (RNG.standard_normal(s).astype("float32") for s in ((2, 3, 6, 5), (4, 3, 3, 3),
                                                                  (4,)))
    from numba import cuda
    from te.testing import conv2d_nchw_python
    out = f(*(cuda.to_device(a) for a in (x, w, b))).copy_to_host()
    ref = conv2d_nchw_python(x, w, 1, 1) + b[:, None, None]
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_kernel_gradient_split_over_positions(monkeypatch):
    """The kernel gradient's product is split over the output positions (split-K: a batch of
    products, then their sum) when its outputs are few; at any split it agrees with numpy."""
    from numba import cuda
    from nn.ops import conv, gpu
    monkeypatch.setattr(gpu, "SPLIT_K_MIN_STEPS", 1)       # split even this small product
    x = RNG.standard_normal((2, 3, 10, 9)).astype("float32")
    g = RNG.standard_normal((2, 4, 9, 7)).astype("float32")
    gpu._build.cache_clear()
    f = gpu.build(conv.conv2d_grad_weight, [x.shape, g.shape], kernel_size=(2, 3),
                  padding=(0, 0, 0, 0))
    gpu._build.cache_clear()
    assert "for part in range(" in f.module.get_source("ir")      # the parts' sum
    out = f(cuda.to_device(x), cuda.to_device(g)).copy_to_host()
    ref = np.zeros((4, 3, 2, 3))
    for ry in range(2):
        for rx in range(3):
            ref[:, :, ry, rx] = np.einsum("nfyx,ncyx->fc", g, x[:, :, ry:ry + 9, rx:rx + 7])
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("declare,shapes,ref", [
    ("dense", [(5, 70), (6, 70), (6,)], lambda x, w, b: x @ w.T + b),
    ("matmul", [(5, 70), (70, 6)], lambda a, b: a @ b),
    ("batch_matmul", [(2, 5, 70), (1, 70, 6)], lambda a, b: a @ b)])
def test_products_split_along_k(monkeypatch, declare, shapes, ref):
    """A product of few tiles and a long reduction is split along k (a batch of partial
    products, then their sum, then the bias): values agree with numpy."""
    from numba import cuda
    from nn.ops import cpu_matmul, gpu
    monkeypatch.setattr(gpu, "SPLIT_K_MIN_STEPS", 1)       # split even this small product
    gpu._build.cache_clear()
    f = gpu.build(getattr(cpu_matmul, declare), shapes)
    gpu._build.cache_clear()
    assert "for part in range(" in f.module.get_source("ir")
    arrays = [RNG.standard_normal(s).astype("float32") for s in shapes]
    out = f(*(cuda.to_device(a) for a in arrays)).copy_to_host()
    np.testing.assert_allclose(out, ref(*arrays), rtol=1e-4, atol=1e-4)
