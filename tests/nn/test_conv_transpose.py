"""ConvTranspose2d / conv_transpose2d (and the 1-d forms) against PyTorch given the same
weights: values and the gradients of input, weight and bias."""
import numpy as np
import pytest
import torch

import nn
from torch_compare import close, close_grads, pair

rng = np.random.default_rng(0)


def _layers(cls, *args, **kwargs):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, cls)(*args, **kwargs)
    ours = getattr(nn, cls)(*args, **kwargs)
    ours.load_state_dict({n: nn.tensor(p.detach().numpy().copy())
                          for n, p in theirs.state_dict().items()})
    return ours, theirs


CASES = [
    dict(),
    dict(stride=2),
    dict(stride=2, padding=1, output_padding=1),
    dict(stride=(2, 3), padding=(1, 0), output_padding=(0, 2)),
    dict(dilation=2, padding=1),
    dict(groups=2, stride=2, bias=False),
    dict(stride=3, padding=2, dilation=2, output_padding=1),
]


@pytest.mark.parametrize("kwargs", CASES)
def test_conv_transpose2d_matches_torch(kwargs):
    ours, theirs = _layers("ConvTranspose2d", 4, 6, 3, **kwargs)
    x, tx = pair(rng.standard_normal((2, 4, 5, 6)))
    y, ty = ours(x), theirs(tx)
    assert y.shape == tuple(ty.shape)
    close(y, ty)
    g = rng.standard_normal(y.shape).astype("float32")
    y.backward(nn.tensor(g))
    ty.backward(torch.tensor(g))
    close(x.grad, tx.grad)
    close_grads(ours, theirs)


def test_output_size_and_unbatched():
    ours, theirs = _layers("ConvTranspose2d", 3, 2, 3, stride=2, padding=1)
    x, tx = pair(rng.standard_normal((3, 4, 4)))
    y, ty = ours(x, output_size=(8, 8)), theirs(tx, output_size=(8, 8))
    assert y.shape == (2, 8, 8)
    close(y, ty)


def test_functional_and_1d():
    (x, tx), (w, tw), (b, tb) = (pair(rng.standard_normal(s)) for s in
                                 ((1, 4, 3, 3), (4, 2, 2, 2), (2,)))
    y = nn.functional.conv_transpose2d(x, w, b, stride=2)
    ty = torch.nn.functional.conv_transpose2d(tx, tw, tb, stride=2)
    close(y, ty)
    y.sum().backward()
    ty.sum().backward()
    for a, c in ((x, tx), (w, tw), (b, tb)):
        close(a.grad, c.grad)
    ours, theirs = _layers("ConvTranspose1d", 3, 5, 4, stride=2, padding=1)
    x, tx = pair(rng.standard_normal((2, 3, 7)))
    y, ty = ours(x), theirs(tx)
    close(y, ty)
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    close(x.grad, tx.grad)
    close_grads(ours, theirs)
