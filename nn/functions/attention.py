"""Attention, as torch.nn.functional has it: ``scaled_dot_product_attention`` and
``multi_head_attention_forward``, composed from differentiable operators (batched products,
masked fills, softmax, dropout), so that their gradients are those operators' gradients.

The math is PyTorch's reference implementation: scores ``q @ k^T * scale`` plus a bias (a
float mask added, a bool mask's False positions and the causal triangle set to -inf),
softmax over the keys, dropout, then the product with ``v``.
"""
from __future__ import annotations

import math

import numpy as np

from ..tensor import tensor, zeros
from . import linalg
from .dropout import dropout as _dropout
from .reduce import softmax

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _causal_mask(L, S, device):
    """(L, S) bool: True where query i may look at key j (j <= i), torch.ones(L, S).tril()."""
    return tensor(np.tril(np.ones((L, S), dtype=bool)), device=device)


def _bias_scores(scores, attn_mask):
    """Scores with a mask applied: a bool mask keeps its True positions (the rest -inf), a
    float mask is added."""
    if attn_mask is None:
        return scores
    if attn_mask.dtype == "bool":
        return scores.masked_fill(attn_mask.logical_not(), float("-inf"))
    return scores + attn_mask


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """``softmax(q @ k^T * scale + mask) @ v`` over (..., L, E), (..., S, E), (..., S, Ev);
    ``scale`` defaults to ``1 / sqrt(E)``; ``is_causal`` masks keys after the query's
    position (the top-left aligned triangle, as PyTorch); ``dropout_p`` drops weights."""
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                           "set when is_causal=True")
    if enable_gqa and query.shape[-3] != key.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key = _repeat_heads(key, rep)
        value = _repeat_heads(value, rep)
    L, S = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = linalg.matmul(query, key.transpose(-2, -1)) * scale
    if is_causal:
        scores = _bias_scores(scores, _causal_mask(L, S, scores.device))
    scores = _bias_scores(scores, attn_mask)
    weights = softmax(scores, dim=-1)
    if dropout_p > 0.0:
        weights = _dropout(weights, dropout_p, training=True)
    return linalg.matmul(weights, value)


def _repeat_heads(x, rep):
    """(..., Hk, S, E) -> (..., Hk * rep, S, E), each head repeated ``rep`` times in place."""
    *lead, H, S, E = x.shape
    x = x.unsqueeze(-3).expand(*lead, H, rep, S, E)
    return x.reshape(*lead, H * rep, S, E)


def _float_mask(mask, dtype, name):
    """A bool mask (True: not allowed) as a float one (-inf where True), as PyTorch's
    ``_canonical_mask``; float masks pass through."""
    if mask is None:
        return None
    if mask.dtype == "bool":
        return zeros(*mask.shape, dtype=dtype, device=mask.device).masked_fill(
            mask, float("-inf"))
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def multi_head_attention_forward(query, key, value, num_heads, in_proj_weight, in_proj_bias,
                                 out_proj_weight, out_proj_bias, dropout_p=0.0, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 q_proj_weight=None, k_proj_weight=None, v_proj_weight=None,
                                 average_attn_weights=True, is_causal=False):
    """PyTorch's multi-head attention over sequence-first inputs (L, N, E), (S, N, kdim),
    (S, N, vdim) or unbatched (L, E)...: returns ``(output (L, N, E), weights)``, the weights
    (N, L, S) averaged over heads (``average_attn_weights``) or (N, H, L, S), or None when
    ``need_weights`` is False. ``in_proj_weight`` None means separate q/k/v projections."""
    unbatched = query.ndim == 2
    if unbatched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    L, N, E = query.shape
    S = key.shape[0]
    H = num_heads
    if E % H:
        raise AssertionError(f"embed_dim {E} not divisible by num_heads {H}")
    hd = E // H
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint.")
    if in_proj_weight is not None:
        ws = (in_proj_weight[0:E], in_proj_weight[E:2 * E], in_proj_weight[2 * E:])
    else:
        ws = (q_proj_weight, k_proj_weight, v_proj_weight)
    bs = ((None,) * 3 if in_proj_bias is None else
          (in_proj_bias[0:E], in_proj_bias[E:2 * E], in_proj_bias[2 * E:]))
    q = linalg.linear(query, ws[0], bs[0])
    k = linalg.linear(key, ws[1], bs[1])
    v = linalg.linear(value, ws[2], bs[2])
    dtype = q.dtype
    attn_mask = _float_mask(attn_mask, dtype, "attn_mask")
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (L, S):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)},"
                                   f" but should be {(L, S)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif tuple(attn_mask.shape) != (N * H, L, S):
            raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, "
                               f"but should be {(N * H, L, S)}.")
    key_padding_mask = _float_mask(key_padding_mask, dtype, "key_padding_mask")
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (N, S):
            raise AssertionError(f"expecting key_padding_mask shape of {(N, S)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        kpm = key_padding_mask.reshape(N, 1, 1, S).expand(N, H, 1, S).reshape(N * H, 1, S)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    # (L, N, E) -> (N * H, L, hd)
    q = q.reshape(L, N * H, hd).transpose(0, 1)
    k = k.reshape(S, N * H, hd).transpose(0, 1)
    v = v.reshape(S, N * H, hd).transpose(0, 1)
    if not training:
        dropout_p = 0.0
    if need_weights:
        scores = linalg.matmul(q * (1.0 / math.sqrt(hd)), k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = softmax(scores, dim=-1)
        dropped = (_dropout(weights, dropout_p, training=True) if dropout_p > 0.0
                   else weights)
        out = linalg.matmul(dropped, v)
    else:
        out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p)
        weights = None
    out = out.transpose(0, 1).reshape(L * N, E)
    out = linalg.linear(out, out_proj_weight, out_proj_bias).reshape(L, N, E)
    if weights is not None:
        weights = weights.reshape(N, H, L, S)
        if average_attn_weights:
            weights = weights.mean(1)
    if unbatched:
        out = out.squeeze(1)
        if weights is not None:
            weights = weights.squeeze(0)
    return out, weights
