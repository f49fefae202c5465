"""Tensor internals as PyTorch shows them (storage, strides, offsets, addresses), compared
with torch on the same views; as_strided / empty_strided against torch's values and
gradients."""
import numpy as np
import pytest
import torch

import nn

VIEWS = {
    "slice2d": lambda t: t[1:, 1:], "t": lambda t: t.t(), "column": lambda t: t[:, 2],
    "steps": lambda t: t[::2, 1::2], "flat_slice": lambda t: t.view(-1)[3:7],
    "transpose_row": lambda t: t.transpose(0, 1)[1], "unsqueeze": lambda t: t[1].unsqueeze(0),
    "narrow": lambda t: t.narrow(1, 1, 2), "expand": lambda t: t[:, :1].expand(3, 5),
    "permute": lambda t: t.view(3, 2, 2).permute(2, 0, 1)[1],
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_share_storage_with_torchs_offsets_and_strides(name):
    x, tx = nn.arange(12.0).view(3, 4), torch.arange(12.0).view(3, 4)
    a, b = VIEWS[name](x), VIEWS[name](tx)
    assert a.storage_offset() == b.storage_offset()
    assert a.stride() == b.stride()
    assert a.data_ptr() - x.data_ptr() == b.data_ptr() - tx.data_ptr()
    assert a.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert a.untyped_storage().nbytes() == b.untyped_storage().nbytes() == 48
    assert a.is_contiguous() == b.is_contiguous()
    assert a.tolist() == b.tolist()


def test_element_size_nbytes_storage_values():
    for dtype, tdtype in (("float32", torch.float32), ("int64", torch.int64),
                          ("uint8", torch.uint8), ("float64", torch.float64)):
        a = nn.zeros(3, 5, dtype=dtype)
        b = torch.zeros(3, 5, dtype=tdtype)
        assert a.element_size() == b.element_size() and a.nbytes == b.nbytes
        assert a.itemsize == b.itemsize
    x = nn.arange(6).view(2, 3)
    s = x[1].storage()
    assert s.size() == len(s) == 6 and s.tolist() == list(range(6)) and s[4] == 4
    assert s.dtype == "int64" and s.element_size() == 8 and s.nbytes() == 48
    raw = x.untyped_storage()
    assert len(raw) == 48 and raw[8] == 1 and raw.element_size() == 1
    assert torch.arange(6).untyped_storage()[8] == 1                  # the same bytes
    x[1, 1] = 40
    assert x.storage()[4] == 40                                        # shared, not a copy


def test_as_strided_values_writes_and_gradient():
    x, tx = nn.arange(12.0), torch.arange(12.0)
    for size, stride, offset in (((2, 2), (1, 2), 1), ((3, 3), (1, 1), None), ((2, 3), (0, 4), 2),
                                 ((4,), (3,), 0)):
        a = nn.as_strided(x, size, stride, offset)
        b = torch.as_strided(tx, size, stride, offset)
        assert a.tolist() == b.tolist() and a.stride() == b.stride()
        assert a.storage_offset() == b.storage_offset()
    y = x.as_strided((2, 2), (4, 1), 5)
    y[0, 0] = -1.0
    assert x[5].item() == -1.0
    w = nn.randn(9, requires_grad=True)
    tw = torch.tensor(w.detach().numpy(), requires_grad=True)
    weights = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    (nn.as_strided(w, (3, 4), (2, 1), 1) * nn.from_numpy(weights)).sum().backward()
    (torch.as_strided(tw, (3, 4), (2, 1), 1) * torch.from_numpy(weights)).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_empty_strided_and_errors():
    e, te = nn.empty_strided((2, 3), (1, 2)), torch.empty_strided((2, 3), (1, 2))
    assert e.stride() == te.stride() and e.shape == tuple(te.shape)
    assert e.untyped_storage().nbytes() == te.untyped_storage().nbytes()
    assert nn.empty_strided((4, 5), (10, 2), dtype="float64").untyped_storage().nbytes() == \
        torch.empty_strided((4, 5), (10, 2), dtype=torch.float64).untyped_storage().nbytes()
    with pytest.raises(RuntimeError, match="mismatch in length"):
        nn.empty_strided((2, 3), (1,))
    with pytest.raises(RuntimeError, match="setStorage"):
        nn.arange(4.0).as_strided((3,), (2,))
    with pytest.raises(RuntimeError, match="negative"):
        nn.arange(4.0).as_strided((2,), (-1,))
