"""scaled_dot_product_attention and MultiheadAttention against PyTorch: forward values and
the gradients of inputs and parameters, given the same weights."""
import numpy as np
import pytest
import torch

import nn
from torch_compare import close, close_grads, copy_params, pair

rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape).astype("float32")


@pytest.mark.parametrize("mask", [None, "bool", "float", "causal"])
def test_sdpa_matches_torch(mask):
    (q, tq), (k, tk), (v, tv) = pair(randn(2, 3, 4, 8)), pair(randn(2, 3, 5, 8)), \
        pair(randn(2, 3, 5, 6))
    kwargs, tkwargs = {}, {}
    if mask == "bool":
        m = rng.random((4, 5)) > 0.3
        m[:, 0] = True                              # no fully masked row
        kwargs["attn_mask"], tkwargs["attn_mask"] = nn.tensor(m), torch.tensor(m)
    elif mask == "float":
        m = randn(3, 4, 5)
        kwargs["attn_mask"], tkwargs["attn_mask"] = nn.tensor(m), torch.tensor(m)
    elif mask == "causal":
        kwargs["is_causal"] = tkwargs["is_causal"] = True
    ours = nn.functional.scaled_dot_product_attention(q, k, v, scale=0.3, **kwargs)
    theirs = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, scale=0.3, **tkwargs)
    close(ours, theirs)
    g = randn(*ours.shape)
    ours.backward(nn.tensor(g))
    theirs.backward(torch.tensor(g))
    for a, b in ((q, tq), (k, tk), (v, tv)):
        close(a.grad, b.grad)


def _mha_pair(embed, heads, **kwargs):
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(embed, heads, **kwargs)
    with torch.no_grad():           # nonzero biases, so that their gradients are tested too
        for name, p in theirs.named_parameters():
            if "bias" in name:
                p.copy_(torch.randn(p.shape))
    ours = nn.MultiheadAttention(embed, heads, **kwargs)
    copy_params(ours, theirs)
    return ours, theirs


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("average", [True, False])
def test_mha_self_attention_matches_torch(batch_first, average):
    ours, theirs = _mha_pair(8, 2, batch_first=batch_first)
    shape = (3, 4, 8) if batch_first else (4, 3, 8)
    x, tx = pair(randn(*shape))
    out, w = ours(x, x, x, average_attn_weights=average)
    tout, tw = theirs(tx, tx, tx, average_attn_weights=average)
    close(out, tout)
    close(w, tw)
    g = randn(*out.shape)
    (out * nn.tensor(g)).sum().backward()
    (tout * torch.tensor(g)).sum().backward()
    close(x.grad, tx.grad)
    close_grads(ours, theirs)


def test_mha_masks_kdim_vdim_and_no_weights():
    ours, theirs = _mha_pair(8, 4, kdim=5, vdim=3)
    assert ours.in_proj_weight is None and ours.q_proj_weight.shape == (8, 8)
    (q, tq), (k, tk), (v, tv) = pair(randn(4, 2, 8)), pair(randn(6, 2, 5)), pair(randn(6, 2, 3))
    kpm = np.zeros((2, 6), dtype=bool)
    kpm[0, 4:] = True
    am = randn(4, 6)
    for need in (True, False):
        out, w = ours(q, k, v, key_padding_mask=nn.tensor(kpm), attn_mask=nn.tensor(am),
                      need_weights=need)
        tout, tw = theirs(tq, tk, tv, key_padding_mask=torch.tensor(kpm),
                          attn_mask=torch.tensor(am), need_weights=need)
        close(out, tout)
        close(w, tw)
        out.sum().backward()
        tout.sum().backward()
        for a, b in ((q, tq), (k, tk), (v, tv)):
            close(a.grad, b.grad)
        close_grads(ours, theirs)


def test_mha_bool_causal_mask_unbatched_and_state_dict():
    ours, theirs = _mha_pair(6, 3, bias=False)
    assert ours.in_proj_bias is None
    x, tx = pair(randn(5, 6))
    mask = np.triu(np.ones((5, 5), dtype=bool), 1)
    out, w = ours(x, x, x, attn_mask=nn.tensor(mask))
    tout, tw = theirs(tx, tx, tx, attn_mask=torch.tensor(mask))
    close(out, tout)
    close(w, tw)
    assert set(ours.state_dict()) == set(theirs.state_dict())


def test_mha_eval_dropout_is_identity():
    ours, theirs = _mha_pair(8, 2, dropout=0.5)
    ours.eval(), theirs.eval()
    x, tx = pair(randn(4, 3, 8))
    close(ours(x, x, x)[0], theirs(tx, tx, tx)[0])
    ours.train()
    out, w = ours(x, x, x)
    assert out.shape == (4, 3, 8) and w.shape == (3, 4, 4)
