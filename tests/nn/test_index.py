"""Indexing, gather and scatter: results and gradients against PyTorch on the same inputs,
gradients against finite differences, views of basic indexing share storage, repeated
indices accumulate, scatters run as kernels."""
import numpy as np
import pytest
import torch

import nn
from nn.autograd import gradcheck

RNG = np.random.default_rng(11)
A = RNG.standard_normal((4, 5, 6)).astype("float32")
W = RNG.standard_normal((3, 4))


def same(t, ref):
    ref = ref.detach().numpy() if isinstance(ref, torch.Tensor) else ref
    assert t.shape == ref.shape, (t.shape, ref.shape)
    np.testing.assert_allclose(t.detach().numpy(), ref, rtol=1e-6, atol=1e-6)


def both(index):
    """The same index for nn and for torch (tensors and lists become each one's tensors)."""
    def convert(item, make):
        if isinstance(item, np.ndarray):
            return make(item)
        return item
    items = index if isinstance(index, tuple) else (index,)
    ours = tuple(convert(i, nn.tensor) for i in items)
    theirs = tuple(convert(i, torch.tensor) for i in items)
    return ours, theirs


MASK = A[..., 0] > 0
INDICES = [
    1, -1, slice(1, None, 2), slice(None, -1, 3), (None, 1), (Ellipsis, 2), (0, slice(None), -2),
    (slice(None, None, 3), None, Ellipsis, 1), (slice(4, 9),), (True,), (False,),
    np.array([0, 2, 3, 2]), np.array([[0, 1], [-1, 2]]),
    (np.array([0, 2]), slice(None), np.array([1, 5])),
    (0, slice(None), np.array([1, 2])),                      # ints select first (PyTorch)
    (slice(None), np.array([1, -2]), np.array([0, 3])),
    (np.array([[1], [2]]), Ellipsis, None, np.array([0, 5, 1])),
    (slice(1, 3), np.array([[0, 4]]), slice(None, None, 2)),
    MASK, (slice(None), A[0] > 0), (A[:, 0, 0] > 0, 1), np.array(2), np.array(True),
]


@pytest.mark.parametrize("index", INDICES, ids=range(len(INDICES)))
def test_getitem_matches_torch(index):
    ours, theirs = both(index)
    same(nn.tensor(A)[ours], torch.tensor(A)[theirs])


def test_getitem_list_index_is_a_tensor_index():
    same(nn.tensor(A)[[0, 3, 3]], A[[0, 3, 3]])
    same(nn.tensor(A)[[True, False, True, True]], A[[True, False, True, True]])
    same(nn.tensor(A)[:, []], A[:, np.array([], "int64")])


def test_basic_indexing_shares_storage_advanced_copies():
    x = nn.tensor(A.copy())
    view = x[1:3, ::2, None, -1]
    view[0, 1] = 100.0
    assert x[1, 2, 5].item() == 100.0
    x[1, 2, 5] = -3.0
    assert view[0, 1].item() == -3.0
    gathered = x[[1, 2]]
    assert not np.shares_memory(gathered.numpy(), x.numpy())


SETS = [
    ((1,), 7.0), ((slice(None), 2), RNG.standard_normal(6)), ((Ellipsis, slice(1, 5, 2)), 1),
    ((np.array([0, 0, 2]), slice(1, 3)), 5.0),
    ((np.array([0, 2]), slice(None), np.array([1, 3])), np.array([[1.0], [2.0]])),
    ((A > 0.7,), -1.0), ((slice(None), np.array([4, 1])), RNG.standard_normal((1, 2, 6))),
]


@pytest.mark.parametrize("index, value", SETS, ids=range(len(SETS)))
def test_setitem_matches_torch(index, value):
    ours, theirs = both(index)
    x, tx = nn.tensor(A.copy()), torch.tensor(A.copy())
    is_array = isinstance(value, np.ndarray)
    x[ours] = nn.tensor(value, dtype="float32") if is_array else value
    tx[theirs] = torch.tensor(value, dtype=torch.float32) if is_array else value
    same(x, tx)


def test_setitem_on_a_transposed_view_and_int_tensors():
    x = nn.tensor(A.copy())
    x.transpose(0, 2)[[1, 4]] = 0.0
    ref = A.copy()
    ref.transpose(2, 1, 0)[[1, 4]] = 0
    same(x, ref)
    ints = nn.arange(6)
    ints[nn.tensor([1, -1])] = nn.tensor([9.7, -2.2])
    assert ints.tolist() == [0, 9, 2, 3, 4, -2]


def test_getitem_backward_accumulates_repeated_indices():
    w = nn.tensor(W, requires_grad=True)
    tw = torch.tensor(W, requires_grad=True)
    index = [2, 0, 2, 2]
    (w[index][:, 1:] * 3).sum().backward()
    (tw[index][:, 1:] * 3).sum().backward()
    same(w.grad, tw.grad)


INT = nn.tensor
GRADS = [
    lambda w: w[1], lambda w: w[:, 1::2], lambda w: w[None, ..., -1], lambda w: w[[0, 0, 2]],
    lambda w: w[INT([0, 2, 0]), INT([1, 1, 3])], lambda w: w[1:, INT([[3, 0], [0, 0]])],
    lambda w: w[INT(W > 0)],
    lambda w: w.gather(1, INT([[0, 0], [1, 3], [2, 2]])),
    lambda w: w.gather(0, INT([[2, 0, 1, 1]])),
    lambda w: w.take(INT([0, 5, 5, -1])),
    lambda w: w.index_select(1, INT([3, 0, 3])),
    lambda w: w.index_select(-2, INT([1])),
    lambda w: w.masked_select(INT([True, False, True, False])),
    lambda w: w.index_fill(1, INT([0, -2]), -1.0),
    lambda w: w.index_fill(0, INT([1, 1]), w[0, 0]),
    lambda w: nn.zeros(3, 4, dtype="float64").scatter_add(0, INT([[0, 1, 2, 0], [0, 0, 0, 0]]),
                                                          w * 1),
    lambda w: w.scatter_add(1, INT([[3], [3], [0]]), w[:, 1:] * 2),
    lambda w: w.scatter(0, INT([[0, 1, 2, 0]]), w[1:] * 2),
    lambda w: w.scatter(1, INT([[0], [1], [3]]), 2.0),
    lambda w: w.index_add(0, INT([2, 2]), w[:2] * 3),
    lambda w: w.index_add(1, INT([0, 3]), w[:, :2], alpha=-2),
]


@pytest.mark.parametrize("fn", GRADS, ids=range(len(GRADS)))
def test_gradients_match_finite_differences(fn):
    assert gradcheck(fn, (nn.tensor(W, requires_grad=True),))


def test_double_backward_of_gather():
    w = nn.tensor(W, requires_grad=True)
    index = INT([[0, 0], [1, 3], [2, 2]])
    y = (w.gather(1, index) ** 2).sum()
    (g,) = nn.autograd.grad(y, w, create_graph=True)
    (gg,) = nn.autograd.grad((g * g).sum(), w)
    tw = torch.tensor(W, requires_grad=True)
    ty = (tw.gather(1, torch.tensor(index.numpy())) ** 2).sum()
    (tg,) = torch.autograd.grad(ty, tw, create_graph=True)
    (tgg,) = torch.autograd.grad((tg * tg).sum(), tw)
    same(gg, tgg)


def _pair(values, grad=True):
    return (nn.tensor(values, requires_grad=grad),
            torch.tensor(values, requires_grad=grad))


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
def test_gather_scatter_family_matches_torch():
    index = np.array([[0, 2, 2, 1], [1, 1, 0, 0]])
    source = RNG.standard_normal((2, 4))
    cases = [
        lambda m, x, s, i: m.gather(x, 0, i),
        lambda m, x, s, i: x.scatter(0, i, s),
        lambda m, x, s, i: m.scatter(x, 0, i, value=1.5),
        lambda m, x, s, i: x.scatter_add(0, i, s),
        lambda m, x, s, i: x.scatter(0, i, s, reduce="add"),
        lambda m, x, s, i: x.scatter(0, i, s, reduce="multiply"),
        lambda m, x, s, i: x.index_select(1, i[1]),
        lambda m, x, s, i: x.index_add(0, i[1, :2], s),
        lambda m, x, s, i: x.index_fill(1, i[0], -4.0),
        lambda m, x, s, i: x.take(i),
        lambda m, x, s, i: x.masked_select(x > 0),
    ]
    for case in cases:
        x, tx = _pair(RNG.standard_normal((3, 4)))
        s, ts = _pair(source)
        ours = case(nn, x, s, nn.tensor(index))
        theirs = case(torch, tx, ts, torch.tensor(index))
        same(ours, theirs)
        if theirs.requires_grad and "NotImplemented" not in theirs.grad_fn.name():
            seed = RNG.standard_normal(theirs.shape)
            ours.backward(nn.tensor(seed))
            theirs.backward(torch.tensor(seed))
            same(x.grad, tx.grad)
            if ts.grad is not None:
                same(s.grad, ts.grad)


def test_scatter_add_with_long_skewed_segments():
    targets = RNG.integers(0, 3, 5000)
    targets[:2000] = 7                       # one position gets 2000 sources: folded in levels
    src = RNG.standard_normal(5000)
    out = nn.zeros(100, dtype="float64").scatter_add(0, nn.tensor(targets), nn.tensor(src))
    ref = np.zeros(100)
    np.add.at(ref, targets, src)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)
    product = nn.ones(10, dtype="float64").scatter(0, nn.tensor(targets[:40] % 2),
                                                   nn.tensor(1 + src[:40] * 0.01),
                                                   reduce="multiply")
    ref = np.ones(10)
    np.multiply.at(ref, targets[:40] % 2, 1 + src[:40] * 0.01)
    np.testing.assert_allclose(product.numpy(), ref, rtol=1e-10)


def test_nonzero():
    x = nn.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    assert x.nonzero().tolist() == [[0, 1], [1, 0], [1, 2]]
    rows, cols = nn.nonzero(x, as_tuple=True)
    assert rows.tolist() == [0, 1, 1] and cols.tolist() == [1, 0, 2]
    assert nn.tensor([True, False, True]).nonzero().tolist() == [[0], [2]]
    assert nn.tensor(3.0).nonzero().shape == (1, 0)


def test_indexing_and_scatters_run_as_kernels():
    calls = nn.functions.kernel_calls
    names = ("index_select", "take", "scatter_segments", "gather")
    before = {k: calls[k] for k in names}
    w = nn.tensor(W, requires_grad=True)
    w[[0, 2]].sum().backward()                       # one index tensor: rows
    w[[0, 2], [1, 1]].sum().backward()               # several: flat positions
    w.gather(1, INT([[0], [1], [2]]))
    assert {k: calls[k] - before[k] for k in names} == {
        "index_select": 1, "take": 1, "scatter_segments": 2, "gather": 1}


def test_node_names_follow_pytorch():
    w = nn.tensor(W, requires_grad=True)
    i = INT([0, 1])
    names = {
        "SelectBackward0": w[1], "SliceBackward0": w[1:], "UnsqueezeBackward0": w[None],
        "IndexBackward0": w[i], "GatherBackward0": w.gather(0, INT([[0]])),
        "ScatterBackward0": w.scatter(0, INT([[0]]), 1.0),
        "ScatterAddBackward0": w.scatter_add(0, INT([[0]]), w),
        "IndexSelectBackward0": w.index_select(0, i), "TakeBackward0": w.take(i),
        "MaskedSelectBackward0": w.masked_select(w > 0),
        "IndexAddBackward0": w.index_add(0, i, w[:2]),
        "IndexFillBackward0": w.index_fill(0, i, 0.0),
    }
    for name, y in names.items():
        assert y.grad_fn.name() == name
