"""Attention, as torch.nn.functional has it: ``scaled_dot_product_attention`` and
``multi_head_attention_forward``, composed from differentiable operators (batched products,
masked fills, softmax, dropout), so that their gradients are those operators' gradients.

The math is PyTorch's reference implementation: scores ``q @ k^T * scale`` plus a bias (a
float mask added, a bool mask's False positions and the causal triangle set to -inf),
softmax over the keys, dropout, then the product with ``v``.

Float32 attention without dropout runs fused instead: one te kernel
(``nn.ops.attention.flash_attention``, FlashAttention's online softmax, the L x S scores
never in memory) and one for the backward, which recomputes the scores tile by tile
(``FlashAttention``); on GPU tensors the kernels of nn/ops/attention_gpu.py. The composed
path stays for what the kernels do not cover (``_fused_unsupported`` names each case):
dropout, dtypes other than float32, tensors on different devices, a mask that needs a
gradient or whose shape the kernel cannot index, batch axes that broadcast between q, k and
v, empty sizes. A fully masked row gives 0 on the fused path (as PyTorch's SDPA on the CPU).
"""
from __future__ import annotations

import math

import numpy as np

from nn.ops import attention as fused_ops

from .. import autograd
from ..device import is_gpu
from ..tensor import Tensor, tensor, zeros
from . import linalg
from .base import Op, kernel_calls
from .dropout import dropout as _dropout
from .reduce import softmax
from .shape import contiguous_data

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
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if _fused_unsupported(query, key, value, attn_mask, dropout_p) is None:
        return _fused_attention(query, key, value, attn_mask, is_causal, scale)
    return _composed_attention(query, key, value, attn_mask, dropout_p, is_causal, scale)


def _composed_attention(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """The unfused path: scores, mask, softmax, dropout and the product, each an operator."""
    L, S = query.shape[-2], key.shape[-2]
    scores = linalg.matmul(query, key.transpose(-2, -1)) * scale
    if is_causal:
        scores = _bias_scores(scores, _causal_mask(L, S, scores.device))
    scores = _bias_scores(scores, attn_mask)
    weights = softmax(scores, dim=-1)
    if dropout_p > 0.0:
        weights = _dropout(weights, dropout_p, training=True)
    return linalg.matmul(weights, value)


def _fused_unsupported(query, key, value, attn_mask, dropout_p):
    """Why the fused kernel does not run these arguments (None: it does)."""
    if dropout_p > 0.0:
        return "dropout"
    if any(t.dtype != "float32" for t in (query, key, value)):
        return "dtype"
    if attn_mask is not None and attn_mask.dtype not in ("bool", "float32"):
        return "mask dtype"
    on_gpu = [is_gpu(t._data) for t in (query, key, value)] + \
        ([] if attn_mask is None else [is_gpu(attn_mask._data)])
    if any(on_gpu) and not all(on_gpu):
        return "devices"
    if query.ndim < 3 or not (query.shape[:-2] == key.shape[:-2] == value.shape[:-2]):
        return "batch shapes"
    if 0 in tuple(query.shape) + tuple(key.shape) + tuple(value.shape):
        return "empty"
    if attn_mask is not None:
        if attn_mask.requires_grad and autograd.is_grad_enabled():
            return "mask gradient"
        if _mask_layout(attn_mask, query.shape, key.shape[-2]) is None:
            return "mask shape"
    return None


def _lead(shape):
    """(B, H): the batch axes of q as the kernel indexes them."""
    lead = tuple(shape[:-2])
    if len(lead) == 1:
        return lead[0], 1
    return int(np.prod(lead[:-1])), lead[-1]


def _mask_layout(mask, qshape, S):
    """(Bm, Hm, Lm, Sm) of ``mask`` broadcast against (B, H, L, S), each 1 or the full size,
    or None when its batch axes do not map onto (B, H)."""
    B, H = _lead(qshape)
    L = qshape[-2]
    shape = tuple(mask.shape)
    if len(shape) > len(qshape):
        return None
    shape = (1,) * (len(qshape) - len(shape)) + shape
    *mlead, Lm, Sm = shape
    if Lm not in (1, L) or Sm not in (1, S):
        return None
    if len(mlead) == 1:
        Bm, Hm = mlead[0], 1
    elif all(n == 1 for n in mlead[:-1]):
        Bm, Hm = 1, mlead[-1]
    elif all(m == q for m, q in zip(mlead[:-1], qshape[:-3])):
        Bm, Hm = B, mlead[-1]
    else:
        return None
    if Bm not in (1, B) or Hm not in (1, H):
        return None
    return Bm, Hm, Lm, Sm


def _additive_mask(mask, qshape, S):
    """The mask as the kernel reads it: float32 (0 / -inf for a bool mask), transposed to
    (Bm, Hm, S, Lm), contiguous."""
    Bm, Hm, Lm, Sm = _mask_layout(mask, qshape, S)
    if mask.dtype == "bool":
        mask = zeros(*mask.shape, dtype="float32", device=mask.device).masked_fill(
            mask.logical_not(), float("-inf"))
    m = mask.detach().reshape(Bm, Hm, Lm, Sm)
    if Sm != S:
        m = m.expand(Bm, Hm, Lm, S)
    return m.transpose(-1, -2).contiguous()._data


def _layout(query, key, value):
    """"blhe" when q, k and v (B, H, L, E) are views of (B, L, H, E) arrays (the heads of a
    projection, transposed), which the kernel then reads in place; "bhle" otherwise (and on
    the GPU)."""
    if query.ndim == 4 and not is_gpu(query._data) and \
            all(np.swapaxes(t._data, 1, 2).flags.c_contiguous for t in (query, key, value)):
        return "blhe"
    return "bhle"


def _to_kernel(t, layout, B, H):
    """The array of (..., n, w) tensor ``t`` that the kernel reads in ``layout``."""
    n, w = t.shape[-2:]
    if layout == "blhe":
        return contiguous_data(np.swapaxes(t._data, 1, 2)).reshape(B, n, H * w)
    return t.detach().contiguous()._data.reshape(B * H, n, w)


def _from_kernel(a, layout, shape):
    """A tensor of ``shape`` (..., n, w) viewing the kernel's array ``a``."""
    if layout == "blhe":
        B, H, n, w = shape
        return Tensor(a.reshape(B, n, H, w).swapaxes(1, 2))
    return Tensor(a.reshape(shape))


def _build(declare, arrays, **params):
    """The compiled ``declare`` for these arrays: the CPU kernel, or on GPU arrays its twin
    of nn/ops/attention_gpu.py."""
    shapes = [tuple(a.shape) for a in arrays]
    if is_gpu(arrays[0]):
        from nn.ops import attention_gpu
        return attention_gpu.build(attention_gpu.TWINS[declare], shapes, **params)
    return fused_ops.build(declare, shapes, **params)


class FlashAttention(Op):
    """Fused attention: the forward and backward te kernels of nn/ops/attention.py over
    (..., L, E) tensors, read in place where their layout allows. With ``create_graph``
    the backward is composed of differentiable operators instead (same values), so that it
    can be differentiated again."""

    @staticmethod
    def forward(ctx, query, key, value, maskT, causal, scale):
        B, H = _lead(query.shape)
        layout = _layout(query, key, value)
        q, k, v = (_to_kernel(t, layout, B, H) for t in (query, key, value))
        extra = [] if maskT is None else [maskT]
        params = dict(heads=H, causal=causal, scale=scale, layout=layout)
        f = _build(fused_ops.flash_attention, [q, k, v] + extra, **params)
        out, lse = f(q, k, v, *extra)
        kernel_calls["flash_attention"] += 1
        ctx.arrays = (q, k, v, maskT, out, lse)
        ctx.params = params
        ctx.shapes = (tuple(query.shape), tuple(key.shape), tuple(value.shape))
        ctx.save_for_backward(query, key, value)
        return _from_kernel(out, layout, tuple(query.shape[:-1]) + (value.shape[-1],))

    @staticmethod
    def backward(ctx, g):
        if autograd.is_grad_enabled():
            return FlashAttention._composed_backward(ctx, g) + (None,) * 3
        q, k, v, maskT, out, lse = ctx.arrays
        p = ctx.params
        B, H = _lead(ctx.shapes[0])
        do = _to_kernel(g, p["layout"], B, H)
        extra = [] if maskT is None else [maskT]
        args = [q, k, v] + extra + [do, out, lse]
        f = _build(fused_ops.flash_attention_backward, args, masked=maskT is not None, **p)
        grads = f(*args)[:3]
        kernel_calls["flash_attention_backward"] += 1
        need = ctx.needs_input_grad
        return tuple(_from_kernel(a, p["layout"], shape) if n else None
                     for a, shape, n in zip(grads, ctx.shapes, need)) + (None,) * 3

    @staticmethod
    def _composed_backward(ctx, g):
        """dq, dk, dv from differentiable operators (for ``create_graph``)."""
        q, k, v = ctx.saved_tensors
        maskT, p = ctx.arrays[3], ctx.params
        L, S = q.shape[-2], k.shape[-2]
        scores = linalg.matmul(q, k.transpose(-2, -1)) * p["scale"]
        if maskT is not None:
            B, H = _lead(q.shape)
            m = Tensor(maskT).transpose(-1, -2)
            scores = (scores.reshape(B, H, L, S) + m).reshape(scores.shape)
        if p["causal"]:
            scores = _bias_scores(scores, _causal_mask(L, S, scores.device))
        w = softmax(scores, dim=-1)
        dv = linalg.matmul(w.transpose(-2, -1), g)
        dw = linalg.matmul(g, v.transpose(-2, -1))
        ds = w * (dw - (dw * w).sum(-1, keepdim=True))
        dq = linalg.matmul(ds, k) * p["scale"]
        dk = linalg.matmul(ds.transpose(-2, -1), q) * p["scale"]
        return dq, dk, dv


def _fused_attention(query, key, value, attn_mask, is_causal, scale):
    """softmax(q k^T * scale + mask) v through the fused kernel, over (..., L, E)."""
    maskT = None if attn_mask is None else _additive_mask(attn_mask, query.shape,
                                                           key.shape[-2])
    return FlashAttention.apply(query, key, value, maskT, bool(is_causal), float(scale))


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
