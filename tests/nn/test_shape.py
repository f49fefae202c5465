"""Shape operators: forward against numpy (odd shapes, negative dims, 0-d and empty tensors),
storage shared by views, gradients against finite differences, copies run as kernels."""
import numpy as np
import pytest

import nn
from nn.autograd import gradcheck

RNG = np.random.default_rng(7)
A = RNG.standard_normal((3, 4, 5)).astype("float32")


def same(t, ref):
    assert t.shape == ref.shape, (t.shape, ref.shape)
    np.testing.assert_array_equal(t.numpy(), ref)


def leaf(shape=(3, 4, 5)):
    return nn.tensor(RNG.standard_normal(shape), dtype="float64", requires_grad=True)


# ----------------------------------------------------------------------------- views

@pytest.mark.parametrize("make, ref", [
    (lambda x: x.view(5, -1, 3), lambda a: a.reshape(5, -1, 3)),
    (lambda x: x.reshape(-1), lambda a: a.reshape(-1)),
    (lambda x: x.flatten(), lambda a: a.reshape(-1)),
    (lambda x: x.flatten(-2), lambda a: a.reshape(3, 20)),
    (lambda x: x.flatten(0, 1), lambda a: a.reshape(12, 5)),
    (lambda x: x.unflatten(-1, (1, 5)), lambda a: a.reshape(3, 4, 1, 5)),
    (lambda x: x.unflatten(1, (2, -1)), lambda a: a.reshape(3, 2, 2, 5)),
    (lambda x: x.unsqueeze(-1).unsqueeze(1), lambda a: a[:, None, :, :, None]),
    (lambda x: x[:, :1, None].squeeze((1, 2)), lambda a: a[:, 0]),
    (lambda x: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    (lambda x: x.transpose(-1, 0), lambda a: a.swapaxes(-1, 0)),
    (lambda x: nn.swapaxes(x, 0, 1), lambda a: a.swapaxes(0, 1)),
    (lambda x: nn.swapdims(x, 1, 2), lambda a: a.swapaxes(1, 2)),
    (lambda x: x.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1)),
    (lambda x: nn.moveaxis(x, (0, 1), (2, 0)), lambda a: np.moveaxis(a, (0, 1), (2, 0))),
    (lambda x: x.narrow(-1, -3, 2), lambda a: a[..., 2:4]),
    (lambda x: x.diagonal(), lambda a: np.diagonal(a)),
    (lambda x: x.diagonal(2, -1, 1), lambda a: np.diagonal(a, 2, -1, 1)),
    (lambda x: x.diagonal(-1, 2, 0), lambda a: np.diagonal(a, -1, 2, 0)),
    (lambda x: x[0].t(), lambda a: a[0].T),
])
def test_views_match_numpy_and_share_storage(make, ref):
    x = nn.tensor(A.copy())
    y = make(x)
    same(y, ref(A))
    assert np.shares_memory(y.numpy(), x.numpy())
    y.numpy()[(0,) * y.ndim] = 42.0                  # a write through the view ...
    assert (x.numpy() == 42.0).sum() == 1            # ... shows in the base


def test_expand_is_a_view_and_minus_one_keeps_a_size():
    x = nn.tensor(A[:, :1].copy())                    # (3, 1, 5)
    y = x.expand(2, -1, 4, -1)
    same(y, np.broadcast_to(A[:, :1], (2, 3, 4, 5)))
    assert np.shares_memory(y.numpy(), x.numpy())
    x.numpy()[0, 0, 0] = 7.0
    assert (y.numpy()[:, 0, :, 0] == 7.0).all()
    assert x.expand_as(nn.zeros(3, 2, 5)).shape == (3, 2, 5)


def test_split_chunk_unbind_are_views():
    x = nn.tensor(A.copy())
    pieces = x.split(2, 1)
    for got, ref in zip(pieces, np.split(A, [2], 1)):
        same(got, ref)
    for got, ref in zip(nn.split(x, [1, 3, 1], -1), np.split(A, [1, 4], -1)):
        same(got, ref)
    assert [p.shape[2] for p in x.chunk(3, 2)] == [2, 2, 1]
    assert [p.shape[0] for p in x.chunk(5)] == [1, 1, 1]
    rows = x.unbind(1)
    assert len(rows) == 4
    same(rows[3], A[:, 3])
    assert all(np.shares_memory(p.numpy(), x.numpy()) for p in pieces + rows)
    assert [t.shape for t in x] == [(4, 5)] * 3


def test_zero_dim_and_empty_tensors():
    s = nn.tensor(2.5)
    assert s.flatten().shape == (1,) and s.unsqueeze(0).shape == (1,)
    assert s.reshape(1, 1).squeeze().shape == () and s.squeeze(0).shape == ()
    assert s.expand(2, 3).tolist() == [[2.5] * 3] * 2
    e = nn.zeros(0, 3)
    assert nn.cat([e, nn.ones(2, 3)]).shape == (2, 3)
    assert nn.cat([nn.zeros(0), nn.ones(2, 3)]).shape == (2, 3)    # legacy empty 1-D skipped
    assert nn.stack([e, e], 1).shape == (0, 2, 3)
    assert e.repeat(2, 2).shape == (0, 6) and e.flip(0).shape == (0, 3)
    assert [p.shape for p in e.split(2)] == [(0, 3)]
    assert e.transpose(0, 1).contiguous().shape == (3, 0)


# ----------------------------------------------------------------------------- copies

@pytest.mark.parametrize("make, ref", [
    (lambda x: nn.cat([x, x[:1], x[:0]], 0), lambda a: np.concatenate([a, a[:1]], 0)),
    (lambda x: nn.cat([x[..., :2], x, x[..., 3:]], -1),
     lambda a: np.concatenate([a[..., :2], a, a[..., 3:]], -1)),
    (lambda x: nn.concat([x, x], dim=1), lambda a: np.concatenate([a, a], 1)),
    (lambda x: nn.concatenate([x, x], axis=2), lambda a: np.concatenate([a, a], 2)),
    (lambda x: nn.stack([x, x * 2], -1), lambda a: np.stack([a, a * 2], -1)),
    (lambda x: nn.hstack([x, x]), lambda a: np.hstack([a, a])),
    (lambda x: nn.hstack([x[0, 0], x[1, 1]]), lambda a: np.hstack([a[0, 0], a[1, 1]])),
    (lambda x: nn.vstack([x[0, 0], x[0]]), lambda a: np.vstack([a[0, 0], a[0]])),
    (lambda x: x.repeat(2, 1, 1, 3), lambda a: np.tile(a, (2, 1, 1, 3))),
    (lambda x: x.tile((2,)), lambda a: np.tile(a, 2)),
    (lambda x: x.flip(0, -1), lambda a: a[::-1, :, ::-1]),
    (lambda x: nn.flip(x, [1]), lambda a: a[:, ::-1]),
    (lambda x: x.roll((1, -7), (0, 2)), lambda a: np.roll(a, (1, -7), (0, 2))),
    (lambda x: x.roll(4), lambda a: np.roll(a, 4)),
    (lambda x: x.tril(), lambda a: np.tril(a)),
    (lambda x: x.tril(-1), lambda a: np.tril(a, -1)),
    (lambda x: x.triu(2), lambda a: np.triu(a, 2)),
    (lambda x: x.permute(2, 0, 1).contiguous(), lambda a: a.transpose(2, 0, 1).copy()),
    (lambda x: x[:, 1:, ::2].contiguous(), lambda a: a[:, 1:, ::2].copy()),
    (lambda x: x[:, :1].expand(3, 4, 5).contiguous(), lambda a: np.repeat(a[:, :1], 4, 1)),
    (lambda x: x.transpose(0, 2).reshape(-1), lambda a: a.transpose(2, 1, 0).reshape(-1)),
])
def test_copies_match_numpy(make, ref):
    x = nn.tensor(A)
    y = make(x)
    same(y, ref(A))
    assert y.numpy().flags.c_contiguous and not np.shares_memory(y.numpy(), x.numpy())


def test_cat_promotes_dtypes_and_many_inputs():
    ints = nn.arange(6).reshape(2, 3)
    mixed = nn.cat([ints, nn.ones(1, 3)])
    assert mixed.dtype == "float32" and mixed.tolist()[1] == [3.0, 4.0, 5.0]
    assert nn.cat([nn.tensor([True]), nn.tensor([2])]).tolist() == [1, 2]
    parts = [nn.full((1, 2), float(k)) for k in range(70)]     # past one kernel's group
    same(nn.cat(parts), np.repeat(np.arange(70, dtype="float32"), 2).reshape(70, 2))


def test_contiguous_is_self_when_contiguous_else_a_kernel_copy():
    x = nn.tensor(A)
    assert x.contiguous() is x
    before = nn.functions.kernel_calls["strided_copy"]
    y = x.transpose(0, 1).contiguous()
    assert nn.functions.kernel_calls["strided_copy"] == before + 1
    same(y, A.transpose(1, 0, 2).copy())


def test_contiguous_reads_reversed_numpy_storage():
    view = A[::-1, 1:, ::-2]
    same(nn.from_numpy(view).contiguous(), view.copy())
    same(nn.from_numpy(view).flip(0), view[::-1].copy())


def test_copies_run_as_kernels():
    x = nn.tensor(A)
    calls = nn.functions.kernel_calls
    counts = {k: calls[k] for k in ("concat", "repeat", "flip", "roll", "triangle")}
    nn.cat([x, x]), x.repeat(1, 2, 1), x.flip(1), x.roll(1, 1), x.triu()
    assert all(calls[k] == counts[k] + 1 for k in counts)


# ----------------------------------------------------------------------------- gradients

@pytest.mark.parametrize("fn", [
    lambda w: w.view(5, 12)[1:4] * 2,
    lambda w: w.transpose(0, 2).reshape(-1)[::7],
    lambda w: w.flatten(1).unflatten(1, (2, 10)),
    lambda w: w[:, :1].squeeze(1).unsqueeze(0),
    lambda w: w.permute(1, 2, 0).movedim(0, 2),
    lambda w: w.narrow(1, 1, 2),
    lambda w: w[:, :1].expand(2, 3, 4, 5),
    lambda w: w.diagonal(1, 2, 1),
    lambda w: w.diagonal(-1),
    lambda w: nn.cat([w, w[:1] * 3, w[:0]], 0),
    lambda w: nn.stack([w, w], 2),
    lambda w: nn.hstack([w, w[:, :2]]),
    lambda w: w.split([1, 3], 1)[1] * 2,
    lambda w: w.chunk(2, -1)[1],
    lambda w: w.unbind(2)[3],
    lambda w: w.repeat(2, 1, 1, 2),
    lambda w: w.tile((2, 1)),
    lambda w: w.flip(0, 2),
    lambda w: w.roll((2, -1), (1, 2)),
    lambda w: w.tril(1),
    lambda w: w.triu(-1),
    lambda w: w.transpose(0, 1).contiguous(),
])
def test_gradients_match_finite_differences(fn):
    assert gradcheck(fn, (leaf(),))


def test_split_gradient_fills_unused_pieces_with_zeros():
    w = leaf()
    a, b = w.split([3, 1], 1)
    (b * 2).sum().backward()
    expected = np.zeros((3, 4, 5))
    expected[:, 3] = 2
    np.testing.assert_array_equal(w.grad.numpy(), expected)


def test_double_backward_through_cat_and_slices():
    w = leaf((4,))
    y = (nn.cat([w, w[1:]]) ** 3).sum()
    (g,) = nn.autograd.grad(y, w, create_graph=True)
    (gg,) = nn.autograd.grad(g.sum(), w)
    x = w.detach().numpy()
    np.testing.assert_allclose(gg.numpy(), 6 * x * np.array([1, 2, 2, 2]))


def test_node_names_follow_pytorch():
    w = leaf()
    names = {
        "ExpandBackward0": w.expand(2, 3, 4, 5), "CloneBackward0": w.mT.contiguous(),
        "SliceBackward0": w.narrow(0, 1, 1), "CatBackward0": nn.cat([w, w]),
        "StackBackward0": nn.stack([w, w]), "SplitBackward0": w.split(2)[0],
        "SplitWithSizesBackward0": w.split([1, 2])[0], "UnbindBackward0": w.unbind()[0],
        "FlipBackward0": w.flip(0), "RollBackward0": w.roll(1, 0),
        "DiagonalBackward0": w.diagonal(), "TrilBackward0": w.tril(),
        "TriuBackward0": w.triu(), "RepeatBackward0": w.repeat(1, 1, 2),
        "PermuteBackward0": w.movedim(0, 1), "ViewBackward0": w.flatten(),
    }
    for name, y in names.items():
        assert y.grad_fn.name() == name
