"""NaN through nn's reductions and relu as through PyTorch's: max / min / amax / amin give
NaN where the input has one, max(dim) / argmax give the (first) NaN's index, relu keeps NaN
and passes its gradient; softmax and log-softmax rows with a NaN are NaN. Gradients are
compared with PyTorch's on the same inputs."""
import numpy as np
import pytest
import torch

import nn

NAN = float("nan")
ROWS = [[1.0, NAN, 3.0, NAN], [1.0, 2.0, 3.0, 3.0], [-np.inf, -np.inf, -np.inf, -np.inf]]


def _both(fn, data, dtype="float32"):
    """``fn`` on nn and on torch tensors holding ``data``, with the gradient of their sum."""
    a = nn.tensor(np.array(data, dtype), requires_grad=True)
    b = torch.tensor(np.array(data, dtype), requires_grad=True)
    return (fn(nn, a), a), (fn(torch, b), b)


def _same(x, y):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


CASES = [
    ("max_all", lambda m, a: a.max()),
    ("min_all", lambda m, a: a.min()),
    ("amax_rows", lambda m, a: a.amax(1)),
    ("amin_rows", lambda m, a: a.amin(-1, keepdim=True)),
    ("amax_columns", lambda m, a: m.amax(a, 0)),
    ("max_dim", lambda m, a: a.max(1).values),
    ("min_dim", lambda m, a: a.min(1)[0]),
    ("max_columns", lambda m, a: a.max(0).values),
    ("relu", lambda m, a: m.relu(a)),
    ("relu_module", lambda m, a: (nn.ReLU() if m is nn else torch.nn.ReLU())(a)),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_propagates_with_pytorch_gradients(name, fn, dtype):
    (got, a), (want, b) = _both(fn, ROWS, dtype)
    _same(got.detach().numpy(), want.detach().numpy())
    got.sum().backward()
    want.sum().backward()
    _same(a.grad.numpy(), b.grad.numpy())


@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin"])
def test_indices_point_at_the_first_nan(op):
    x = np.array(ROWS[:2], "float32")
    if op in ("max", "min"):
        got, want = getattr(nn.tensor(x), op)(1), getattr(torch.tensor(x), op)(1)
        _same(got.indices.numpy(), want.indices.numpy())
        _same(got.values.numpy(), want.values.numpy())
    else:
        for dim in (None, 0, 1):
            got = getattr(nn.tensor(x), op)(dim)
            _same(got.numpy(), getattr(torch.tensor(x), op)(dim).numpy())


def test_the_issue_examples():
    t = nn.tensor([1.0, NAN, 3.0])
    for value in (t.max(), t.min(), t.amax(0), t.amin(0), t.max(0).values, t.min(0).values):
        assert np.isnan(value.item())
    assert t.max(0).indices.item() == 1 and t.argmax().item() == 1 and t.argmin().item() == 1
    assert np.isnan(nn.functional.relu(nn.tensor([NAN])).item())


def test_long_rows_keep_nan_in_vector_partials():
    """Rows long enough for the 64-wide vector partial results: a NaN in any lane or in the
    scalar tail reaches the result, over the last axis and over a leading one."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 203)).astype("float32")
    x[1, 0] = x[2, 64] = x[3, 202] = x[4, 130] = NAN
    for dim in (1, 0):
        for op in ("amax", "amin"):
            got = getattr(nn.tensor(x), op)(dim).numpy()
            _same(got, getattr(torch.tensor(x), op)(dim).numpy())
        _same(nn.tensor(x).argmax(dim).numpy(), torch.tensor(x).argmax(dim).numpy())
    assert np.isnan(nn.tensor(x).max().item())
    x[~np.isnan(x)] = -np.inf
    x[np.isnan(x)] = -np.inf
    assert nn.tensor(x).max().item() == -np.inf


def test_integers_are_unchanged():
    x = np.array([[3, -7, 5], [2, 2, -1]], "int64")
    for op in ("amax", "amin", "argmax", "argmin"):
        _same(getattr(nn.tensor(x), op)(1).numpy(), getattr(torch.tensor(x), op)(1).numpy())
    assert nn.tensor(x).max().item() == 5 and nn.tensor(x).min().item() == -7


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "logsumexp"])
def test_softmax_rows_with_nan_are_nan(op):
    x = np.array([[1.0, NAN, 0.5], [1.0, 2.0, 3.0]], "float32")
    got = getattr(nn.tensor(x), op)(1).numpy()
    want = getattr(torch.tensor(x), op)(1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_nan_on_the_gpu():
    x = nn.tensor(np.array(ROWS[:2], "float32")).cuda()
    assert np.isnan(x.max().item()) and np.isnan(x.amin(1).cpu().numpy()[0])
    assert x.argmax(1).cpu().tolist() == [1, 2]
    assert np.isnan(nn.relu(x).cpu().numpy()[0, 1])
