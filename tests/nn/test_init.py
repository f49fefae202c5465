"""nn.init against PyTorch's: the gains and fans, the distributions (mean, std and bounds over
enough samples), the deterministic fills value for value, seeding, and in-place semantics."""
import math

import numpy as np
import pytest
import torch

import nn
from nn import init

N = 200_000         # samples for the moment checks: the std of a sample mean is ~0.002 std


def samples(*shape, dtype="float32"):
    return nn.empty(*shape, dtype=dtype)


@pytest.mark.parametrize("name, param", [
    ("linear", None), ("conv2d", None), ("conv_transpose3d", None), ("sigmoid", None),
    ("tanh", None), ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2),
    ("leaky_relu", 1), ("selu", None)])
def test_calculate_gain_matches_torch(name, param):
    assert init.calculate_gain(name, param) == pytest.approx(
        torch.nn.init.calculate_gain(name, param), rel=1e-12)


@pytest.mark.parametrize("shape", [(3, 4), (5, 3, 2), (6, 4, 3, 2), (2, 3, 1, 2, 2)])
def test_fans_match_torch(shape):
    assert init._calculate_fan_in_and_fan_out(nn.empty(shape)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))


def moments(t):
    data = t.detach().numpy().astype("float64")
    return data.mean(), data.std(), data.min(), data.max()


def test_uniform_and_normal_moments():
    mean, std, lo, hi = moments(init.uniform_(samples(N), -2.0, 3.0))
    assert abs(mean - 0.5) < 0.02 and abs(std - 5 / math.sqrt(12)) < 0.02
    assert -2.0 <= lo < -1.99 and 2.99 < hi <= 3.0
    mean, std, _, _ = moments(init.normal_(samples(N), 1.5, 0.5))
    assert abs(mean - 1.5) < 0.01 and abs(std - 0.5) < 0.01


def test_trunc_normal_stays_in_bounds():
    mean, std, lo, hi = moments(init.trunc_normal_(samples(N), 0.0, 1.0, -1.0, 2.0))
    ref = torch.nn.init.trunc_normal_(torch.empty(N, dtype=torch.float64), 0.0, 1.0, -1.0, 2.0)
    assert -1.0 <= lo and hi <= 2.0
    assert abs(mean - ref.mean().item()) < 0.02 and abs(std - ref.std().item()) < 0.02


@pytest.mark.parametrize("shape", [(400, 500), (64, 32, 3, 3)])
def test_xavier_and_kaiming_match_torch_scales(shape):
    fan_in, fan_out = init._calculate_fan_in_and_fan_out(nn.empty(shape))
    gain = init.calculate_gain("relu")
    a = gain * math.sqrt(6 / (fan_in + fan_out))
    _, std, lo, hi = moments(init.xavier_uniform_(nn.empty(shape), gain=gain))
    assert -a <= lo and hi <= a and abs(std - a / math.sqrt(3)) < 0.02 * a
    _, std, _, _ = moments(init.xavier_normal_(nn.empty(shape), gain=gain))
    assert abs(std - gain * math.sqrt(2 / (fan_in + fan_out))) < 0.02 * std
    for mode, fan in (("fan_in", fan_in), ("fan_out", fan_out)):
        bound = math.sqrt(2.0) * math.sqrt(3 / fan)
        _, std, lo, hi = moments(init.kaiming_uniform_(nn.empty(shape), mode=mode,
                                                       nonlinearity="relu"))
        assert -bound <= lo and hi <= bound and abs(std - bound / math.sqrt(3)) < 0.02 * bound
        mean, std, _, _ = moments(init.kaiming_normal_(nn.empty(shape), a=0.1, mode=mode))
        want = init.calculate_gain("leaky_relu", 0.1) / math.sqrt(fan)
        assert abs(mean) < 0.02 * want and abs(std - want) < 0.02 * want
        # torch's draws have the same spread
        ref = torch.nn.init.kaiming_normal_(torch.empty(shape), a=0.1, mode=mode)
        assert abs(ref.std().item() - want) < 0.02 * want


def test_deterministic_fills_match_torch():
    for fn, args in ((init.constant_, (0.3,)), (init.ones_, ()), (init.zeros_, ()),
                     (init.eye_, ())):
        ours, ref = fn(nn.empty(3, 5), *args), getattr(torch.nn.init, fn.__name__)(
            torch.empty(3, 5), *args)
        np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    for shape, groups in (((4, 3, 3), 1), ((6, 2, 3, 3), 2), ((4, 4, 3, 1, 2), 1)):
        np.testing.assert_array_equal(init.dirac_(nn.empty(shape), groups).numpy(),
                                      torch.nn.init.dirac_(torch.empty(shape), groups).numpy())


@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (3, 2, 2)])
def test_orthogonal(shape):
    w = init.orthogonal_(nn.empty(shape, dtype="float64"), gain=2.0).numpy()
    flat = w.reshape(shape[0], -1)
    small = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
    np.testing.assert_allclose(small, 4.0 * np.eye(len(small)), atol=1e-12)


def test_sparse_zeros_a_fraction_of_each_column():
    w = init.sparse_(nn.empty(10, 300), sparsity=0.25, std=0.5).numpy()
    assert all((w[:, c] == 0).sum() == 3 for c in range(300))      # ceil(0.25 * 10)
    nonzero = w[w != 0]
    assert abs(nonzero.std() - 0.5) < 0.03


def test_seeded_in_place_and_outside_the_graph():
    p = nn.Parameter(nn.empty(30, 20))
    version = p._version
    nn.manual_seed(7)
    assert init.kaiming_uniform_(p) is p
    first = p.detach().numpy().copy()
    nn.manual_seed(7)
    init.kaiming_uniform_(p)
    np.testing.assert_array_equal(p.detach().numpy(), first)
    assert p.is_leaf and p.requires_grad and p.grad_fn is None and p._version > version
    gen = np.random.default_rng(3)
    a = init.normal_(nn.empty(5), generator=gen).numpy().copy()
    b = init.normal_(nn.empty(5), generator=np.random.default_rng(3)).numpy()
    np.testing.assert_array_equal(a, b)
    array = np.zeros((2, 3), "float32")
    init.ones_(nn.from_numpy(array))            # the storage itself is written
    assert array.tolist() == [[1.0] * 3] * 2


def test_zero_element_tensor_is_a_no_op():
    with pytest.warns(UserWarning, match="zero-element tensors is a no-op"):
        t = init.kaiming_uniform_(nn.empty(0, 3))
    assert t.shape == (0, 3)
