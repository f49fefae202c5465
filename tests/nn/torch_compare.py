"""Helpers for tests that compare nn layers with PyTorch's given the same weights."""
import numpy as np
import torch

import nn


def copy_params(ours, theirs):
    """Copy every parameter of the torch module ``theirs`` into ``ours`` by name (via numpy);
    the two must have the same parameter names and shapes."""
    mine = dict(ours.named_parameters())
    names = [n for n, _ in theirs.named_parameters()]
    assert sorted(mine) == sorted(names), (sorted(mine), sorted(names))
    ours.load_state_dict({n: nn.tensor(p.detach().numpy().copy())
                          for n, p in theirs.state_dict().items()})


def pair(array, requires_grad=True):
    """The same float32 values as an nn tensor and a torch tensor, both leaves."""
    array = np.asarray(array, dtype="float32")
    return (nn.tensor(array.copy(), requires_grad=requires_grad),
            torch.tensor(array.copy(), requires_grad=requires_grad))


def close(ours, theirs, rtol=1e-4, atol=1e-5):
    """Assert an nn tensor (or None) matches a torch tensor (or None)."""
    if theirs is None:
        assert ours is None
        return
    assert ours is not None
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol,
                               atol=atol)


def close_grads(ours, theirs, rtol=1e-4, atol=1e-5):
    """Assert the .grad of matching parameters of two modules agree."""
    mine = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        close(mine[name].grad, p.grad, rtol, atol)


def check(ours_fn, theirs_fn, *arrays, rng, grad=True, fixed=()):
    """Run ``ours_fn`` on nn tensors and ``theirs_fn`` on torch tensors holding the same
    arrays; compare the outputs, then (with ``grad``) back-propagate the same random output
    gradient (drawn from ``rng``) through both and compare the gradient of every input that
    needs one. Float arrays become leaves needing grad, but those at the ``fixed``
    positions; other arrays (integers) are passed as plain tensors."""
    mine, theirs = [], []
    for k, a in enumerate(arrays):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            x, tx = pair(a, requires_grad=grad and k not in fixed)
        else:
            x, tx = nn.tensor(a), torch.tensor(a)
        mine.append(x)
        theirs.append(tx)
    out, tout = ours_fn(*mine), theirs_fn(*theirs)
    close(out, tout)
    if not grad:
        return
    g = rng.standard_normal(tuple(out.shape)).astype("float32")
    (out * nn.tensor(g)).sum().backward()
    (tout * torch.tensor(g)).sum().backward()
    for x, tx in zip(mine, theirs):
        if tx.requires_grad:
            close(x.grad, tx.grad)
