"""nn.Tensor: factories, dtypes, conversion, repr, views, in-place rules, comparisons."""
import numpy as np
import pytest

import nn


def test_tensor_dtypes_follow_pytorch():
    assert nn.tensor([1.0, 2]).dtype == "float32"
    assert nn.tensor([1, 2]).dtype == "int64"
    assert nn.tensor([True]).dtype == "bool"
    assert nn.tensor(np.zeros(2)).dtype == "float64"          # an array keeps its dtype
    assert nn.tensor([1, 2], dtype="float64").dtype == "float64"
    assert nn.full((2,), 3).dtype == "int64" and nn.full((2,), 3.0).dtype == "float32"
    assert nn.arange(3).dtype == "int64" and nn.arange(0, 1, 0.25).dtype == "float32"
    assert nn.zeros(2, 3).shape == (2, 3) and nn.ones((2, 3)).dtype == "float32"


def test_factories_and_accessors():
    x = nn.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert x.shape == (2, 3) and x.size() == (2, 3) and x.size(-1) == 3 and x.dim() == 2
    assert x.numel() == 6 and len(x) == 2
    assert x.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert nn.tensor([2.5]).item() == 2.5
    with pytest.raises(RuntimeError, match="6 elements cannot be converted to Scalar"):
        x.item()
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.size(2)
    np.testing.assert_array_equal(nn.arange(1, 7, 2).numpy(), [1, 3, 5])
    assert nn.zeros_like(x).tolist() == [[0] * 3] * 2
    assert nn.ones_like(x, dtype="float64").dtype == "float64"
    assert nn.full((2, 2), 7.0).tolist() == [[7, 7], [7, 7]]


def test_manual_seed_repeats_random_tensors():
    nn.manual_seed(3)
    a, b = nn.rand(4), nn.randn(2, 2, dtype="float64")
    nn.manual_seed(3)
    assert nn.rand(4).tolist() == a.tolist() and nn.randn(2, 2, dtype="float64").tolist() == \
        b.tolist()
    assert 0 <= a.numpy().min() and a.numpy().max() < 1 and b.dtype == "float64"


def test_tensor_copies_and_from_numpy_shares():
    arr = np.zeros(3, "float32")
    copied, shared = nn.tensor(arr), nn.from_numpy(arr)
    arr[0] = 5
    assert copied.tolist() == [0, 0, 0] and shared.tolist() == [5, 0, 0]
    shared.numpy()[1] = 7
    assert arr[1] == 7


def test_repr_like_pytorch():
    assert repr(nn.tensor([5.0], requires_grad=True)) == "tensor([5.], requires_grad=True)"
    assert repr(nn.tensor([1.5, 2.0])) == "tensor([1.5000, 2.0000])"
    assert repr(nn.tensor(3.0)) == "tensor(3.)"
    assert repr(nn.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(nn.tensor([1.0], dtype="float64")) == "tensor([1.], dtype=float64)"
    w = nn.tensor([1.0], requires_grad=True)
    assert repr(w * 2) == "tensor([2.], grad_fn=<MulBackward0>)"
    assert repr(nn.tensor([[1.0, 2.0], [3.0, 4.0]])) == "tensor([[1., 2.],\n        [3., 4.]])"


def test_numpy_of_a_tensor_that_requires_grad_says_detach():
    w = nn.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Use tensor.detach\(\).numpy\(\) instead"):
        w.numpy()
    assert w.detach().numpy().tolist() == [1.0]


def test_only_floating_tensors_require_grad():
    with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
        nn.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
        nn.arange(3).requires_grad_()


def test_views_share_storage():
    x = nn.arange(6).reshape(2, 3)
    v = x.view(3, 2)
    t = x.t()
    x.numpy()[0, 0] = 100
    assert v.tolist()[0][0] == 100 and t.tolist()[0][0] == 100
    assert x.unsqueeze(0).shape == (1, 2, 3) and x.unsqueeze(-1).shape == (2, 3, 1)
    assert nn.zeros(1, 3, 1).squeeze().shape == (3,)
    assert nn.zeros(1, 3, 1).squeeze(0).shape == (3, 1)
    assert nn.zeros(1, 3, 1).squeeze(1).shape == (1, 3, 1)
    assert nn.zeros(2, 3, 4).transpose(0, 2).shape == (4, 3, 2)
    assert nn.zeros(2, 3, 4).permute(2, 0, 1).shape == (4, 2, 3)
    assert x.reshape(-1).shape == (6,)


def test_view_of_a_non_contiguous_tensor_says_use_reshape():
    x = nn.zeros(2, 3).t()
    with pytest.raises(RuntimeError, match=r"Use .reshape\(...\) instead"):
        x.view(6)
    assert x.reshape(6).shape == (6,)
    with pytest.raises(RuntimeError, match="is invalid for input of size 6"):
        x.reshape(4)


def test_comparisons_are_bool_tensors_without_grad():
    a = nn.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = nn.tensor([[2.0], [1.0]])
    for got, want in [(a < b, [[1, 0, 0], [0, 0, 0]]), (a <= 2, [1, 1, 0]),
                      (a > 1.5, [0, 1, 1]), (a >= b, [[0, 1, 1], [1, 1, 1]]),
                      (a == 2.0, [0, 1, 0]), (a != b, [[1, 0, 1], [0, 1, 1]])]:
        assert got.dtype == "bool" and not got.requires_grad and got.grad_fn is None
        np.testing.assert_array_equal(got.numpy(), np.array(want, bool))
    assert nn.arange(4).eq(2).tolist() == [False, False, True, False]
    assert bool(nn.tensor([3.0]) > 2)
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(a > 0)


def test_dtype_promotion_and_casts():
    i, f, d = nn.tensor([1, 2]), nn.tensor([1.0, 2.0]), nn.tensor([1.0], dtype="float64")
    assert (i + 1).dtype == "int64" and (i + 1.5).dtype == "float32"
    assert (i + f).dtype == "float32" and (f + d).dtype == "float64"
    assert (i / 2).dtype == "float32" and (i / 2).tolist() == [0.5, 1.0]
    assert i.float().dtype == "float32" and f.double().dtype == "float64"
    assert nn.tensor([True, False]).sum().item() == 1


def test_in_place_ops_and_leaf_error():
    w = nn.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                           "an in-place operation."):
        w.add_(1.0)
    with nn.no_grad():
        w -= nn.tensor([0.5, 0.5])
        w.mul_(2)
    assert w.tolist() == [1.0, 3.0] and w.is_leaf and w.requires_grad
    x = nn.zeros(2, 3)
    x.add_(nn.tensor([1.0, 2.0, 3.0]), alpha=2)
    assert x.tolist() == [[2, 4, 6], [2, 4, 6]]
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        nn.zeros(3).add_(nn.zeros(2, 3))
    with pytest.raises(RuntimeError, match="can't be cast"):
        nn.zeros(3, dtype="int64").add_(1.5)
    assert x.zero_().tolist() == [[0] * 3] * 2


def test_in_place_ops_inside_the_graph():
    w = nn.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = w * 2
    y.mul_(y)                       # y = (2w)^2: Mul saved y itself, so it keeps the old values
    assert y.grad_fn.name() == "MulBackward0" and not y.is_leaf
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 8 * np.array([1.0, 2.0, 3.0]))
    w.grad = None
    z = w * 1
    z.relu_().sigmoid_()
    z.sum().backward()
    s = 1 / (1 + np.exp(-np.array([1.0, 2.0, 3.0])))
    np.testing.assert_allclose(w.grad.numpy(), s * (1 - s), rtol=1e-6)
    w.grad = None
    a = w.exp()
    b = a * w                       # saves a
    a.add_(1)                       # a's storage changes after it was saved
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*version 1; "
                                           "expected version 0"):
        b.sum().backward()
    w.grad = None
    y = w * 1
    y[:2].add_(1)                   # a view of a non-leaf: rebased as PyTorch's CopySlices
    (y * y).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * y.detach().numpy())


def test_ops_run_as_compiled_kernels():
    counts = nn.functional.kernel_calls
    before = dict(counts)
    x = nn.tensor([[1.0, -2.0]], requires_grad=True)
    (x.relu() * x).sum().backward()
    assert counts["relu"] > before.get("relu", 0) and counts["multiply"] > \
        before.get("multiply", 0)
    assert counts["sum"] > before.get("sum", 0)
