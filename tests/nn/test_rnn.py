"""RNN, LSTM, GRU and their cells against PyTorch given the same weights: outputs, final
states and the gradients of inputs, initial states and parameters."""
import numpy as np
import pytest
import torch

import nn
from torch_compare import close, close_grads, copy_params, pair

rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape).astype("float32")


def _pair(cls, *args, **kwargs):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, cls)(*args, **kwargs)
    ours = getattr(nn, cls)(*args, **kwargs)
    copy_params(ours, theirs)
    return ours, theirs


CASES = [
    ("RNN", dict(num_layers=1)),
    ("RNN", dict(num_layers=2, nonlinearity="relu", batch_first=True)),
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(num_layers=1, bias=False, batch_first=True)),
    ("GRU", dict(num_layers=2, bidirectional=True, batch_first=True)),
    ("GRU", dict(num_layers=1)),
]


@pytest.mark.parametrize("cls, kwargs", CASES)
@pytest.mark.parametrize("initial", [False, True])
def test_recurrent_layers_match_torch(cls, kwargs, initial):
    ours, theirs = _pair(cls, 3, 4, **kwargs)
    T, N = 5, 2
    x, tx = pair(randn(N, T, 3) if kwargs.get("batch_first") else randn(T, N, 3))
    states = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    args, targs, leaves = [], [], []
    if initial:
        h, th = pair(randn(states, N, 4))
        leaves.append((h, th))
        if cls == "LSTM":
            c, tc = pair(randn(states, N, 4))
            leaves.append((c, tc))
            args, targs = [(h, c)], [(th, tc)]
        else:
            args, targs = [h], [th]
    out, hn = ours(x, *args)
    tout, thn = theirs(tx, *targs)
    close(out, tout)
    if cls == "LSTM":
        close(hn[0], thn[0])
        close(hn[1], thn[1])
        loss, tloss = out.sum() + (hn[0] * hn[1]).sum(), tout.sum() + (thn[0] * thn[1]).sum()
    else:
        close(hn, thn)
        loss, tloss = out.sum() + (hn * hn).sum(), tout.sum() + (thn * thn).sum()
    g = randn(*out.shape)
    loss = loss + (out * nn.tensor(g)).sum()
    tloss = tloss + (tout * torch.tensor(g)).sum()
    loss.backward()
    tloss.backward()
    close(x.grad, tx.grad)
    for a, b in leaves:
        close(a.grad, b.grad)
    close_grads(ours, theirs)


def test_unbatched_and_state_dict_names():
    ours, theirs = _pair("GRU", 3, 4, num_layers=2, bidirectional=True)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x, tx = pair(randn(6, 3))
    h, th = pair(randn(4, 4))
    out, hn = ours(x, h)
    tout, thn = theirs(tx, th)
    assert out.shape == (6, 8) and hn.shape == (4, 4)
    close(out, tout)
    close(hn, thn)


def test_dropout_between_layers_only_in_training():
    ours, theirs = _pair("LSTM", 3, 4, num_layers=2, dropout=0.5)
    x, tx = pair(randn(5, 2, 3))
    ours.eval(), theirs.eval()
    close(ours(x)[0], theirs(tx)[0])
    ours.train()
    a, b = ours(x)[0], ours(x)[0]
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_torch(cls):
    ours, theirs = _pair(cls, 3, 4)
    x, tx = pair(randn(2, 3))
    h, th = pair(randn(2, 4))
    if cls == "LSTMCell":
        c, tc = pair(randn(2, 4))
        (h1, c1), (th1, tc1) = ours(x, (h, c)), theirs(tx, (th, tc))
        close(c1, tc1)
        (h1 * c1).sum().backward()
        (th1 * tc1).sum().backward()
        close(c.grad, tc.grad)
    else:
        h1, th1 = ours(x, h), theirs(tx, th)
        (h1 * h1).sum().backward()
        (th1 * th1).sum().backward()
    close(h1, th1)
    close(x.grad, tx.grad)
    close(h.grad, th.grad)
    close_grads(ours, theirs)
    # no state, unbatched
    x1, tx1 = pair(randn(3))
    out, tout = ours(x1), theirs(tx1)
    close(out[0] if cls == "LSTMCell" else out, tout[0] if cls == "LSTMCell" else tout)
