"""The factories: PyTorch's signatures, default dtypes and values (against numpy and torch),
``device``, ``requires_grad``, the ``_like`` forms and the random ones' ranges and seeding."""
import numpy as np
import torch

import nn


def same(ours, ref):
    """Equal values and dtype name (torch.float32 -> float32)."""
    assert ours.dtype == str(ref.dtype).replace("torch.", "")
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-6, atol=1e-7)


def test_constant_factories_match_torch():
    same(nn.zeros(2, 3), torch.zeros(2, 3))
    same(nn.ones((2, 3), dtype="float64"), torch.ones((2, 3), dtype=torch.float64))
    same(nn.full((2, 2), 7), torch.full((2, 2), 7))
    same(nn.full((3,), 1.5), torch.full((3,), 1.5))
    same(nn.full((2,), True), torch.full((2,), True))
    same(nn.eye(3), torch.eye(3))
    same(nn.eye(2, 4, dtype="int64"), torch.eye(2, 4, dtype=torch.int64))
    same(nn.arange(5), torch.arange(5))
    same(nn.arange(1, 2, 0.25), torch.arange(1, 2, 0.25))
    same(nn.linspace(-1, 1, 7), torch.linspace(-1, 1, 7))
    same(nn.logspace(0, 2, 5, base=2.0), torch.logspace(0, 2, 5, base=2.0))
    same(nn.tensor([[1, 2]], dtype="float64"), torch.tensor([[1, 2]], dtype=torch.float64))
    e = nn.empty(2, 3, dtype="int32")
    assert e.shape == (2, 3) and e.dtype == "int32"


def test_like_factories_take_shape_and_dtype():
    x = nn.ones(2, 3, dtype="float64")
    for fn in (nn.zeros_like, nn.ones_like, nn.empty_like, nn.rand_like, nn.randn_like):
        y = fn(x)
        assert y.shape == (2, 3) and y.dtype == "float64" and not y.requires_grad
    same(nn.full_like(x, 4), torch.full_like(torch.ones(2, 3, dtype=torch.float64), 4))
    assert nn.zeros_like(x, dtype="int64").dtype == "int64"
    assert nn.ones_like(x, requires_grad=True).requires_grad
    r = nn.randint_like(nn.zeros(100, dtype="int64"), 3)
    assert r.dtype == "int64" and set(r.tolist()) == {0, 1, 2}
    r = nn.randint_like(nn.zeros(100), 5, 8)
    assert r.dtype == "float32" and set(r.tolist()) == {5.0, 6.0, 7.0}


def test_requires_grad_and_device():
    for t in (nn.zeros(2, requires_grad=True), nn.rand(2, requires_grad=True),
              nn.tensor([1.0], requires_grad=True), nn.linspace(0, 1, 3, requires_grad=True)):
        assert t.requires_grad and t.is_leaf
    for device in (None, "cpu", "cpu:0", nn.zeros(1).device):
        assert nn.zeros(1, device=device).shape == (1,)
        assert nn.randn(1, device=device).shape == (1,)


def test_random_factories():
    nn.manual_seed(5)
    a = nn.rand(1000)
    nn.manual_seed(5)
    np.testing.assert_array_equal(nn.rand(1000).numpy(), a.numpy())
    assert a.dtype == "float32" and 0 <= a.numpy().min() and a.numpy().max() < 1
    n = nn.randn(100_000, dtype="float64").numpy()
    assert n.dtype == np.float64 and abs(n.mean()) < 0.02 and abs(n.std() - 1) < 0.02
    r = nn.randint(3, 6, (1000,))
    assert r.dtype == "int64" and set(r.tolist()) == {3, 4, 5}
    assert set(nn.randint(2, (50,)).tolist()) == {0, 1}                 # randint(high, size)
    assert nn.randint(0, 4, (2, 3), dtype="int32").dtype == "int32"
    p = nn.randperm(20)
    assert p.dtype == "int64" and sorted(p.tolist()) == list(range(20))
    gen = np.random.default_rng(1)
    np.testing.assert_array_equal(nn.rand(4, generator=gen).numpy(),
                                  nn.rand(4, generator=np.random.default_rng(1)).numpy())


def test_normal_forms():
    x = nn.normal(2.0, 3.0, (200_000,)).numpy()
    assert x.dtype == np.float32 and abs(x.mean() - 2) < 0.03 and abs(x.std() - 3) < 0.03
    mean = nn.tensor([0.0, 100.0, -100.0], dtype="float64")
    y = nn.normal(mean, 0.1)
    assert y.dtype == "float64" and np.allclose(y.numpy(), mean.numpy(), atol=1)
    z = nn.normal(0.0, nn.tensor([[0.0], [1.0]]))           # std a tensor: its shape
    assert z.shape == (2, 1) and z.numpy()[0, 0] == 0.0
    w = nn.normal(nn.zeros(3, 1), nn.ones(1, 4))            # both tensors: broadcast
    assert w.shape == (3, 4)
