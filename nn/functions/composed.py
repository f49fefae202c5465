"""Distances, sliding-window blocks, bags of embeddings, margin losses and RReLU, as
torch.nn.functional has them, composed from differentiable operators (so their gradients are
those operators' gradients): ``pairwise_distance``, ``unfold`` / ``fold``, ``embedding_bag``,
``margin_ranking_loss``, ``hinge_embedding_loss``, ``cosine_embedding_loss``,
``triplet_margin_loss``, ``multilabel_margin_loss``, ``rrelu``.

Integer metadata (bag offsets, multilabel targets) is read on the host to build index and mask
tensors, which are then made on the input's device; the values never leave it.
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import device as devices
from ..tensor import Tensor, rand, tensor, zeros
from .activation import leaky_relu
from .elementwise import clamp_min, minimum, where
from .loss import _reduce, _reduction
from .reduce import norm
from .conv import pad
from .shape import cat, stack
from .sparse import embedding

__all__ = ["pairwise_distance", "unfold", "fold", "embedding_bag", "margin_ranking_loss",
           "hinge_embedding_loss", "cosine_embedding_loss", "triplet_margin_loss",
           "multilabel_margin_loss", "rrelu"]


def _check_tensor(fn, name, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(x).__name__}")


# ----------------------------------------------------------------------------- distances

def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of ``x1 - x2 + eps`` over the last dimension (inputs broadcast)."""
    _check_tensor("pairwise_distance", "x1", x1)
    _check_tensor("pairwise_distance", "x2", x2)
    if x1.ndim == 0 or x2.ndim == 0:
        raise RuntimeError("pairwise_distance: expected x1 and x2 with at least one dimension "
                           f"(the vectors' dimension), got shapes {list(x1.shape)} and "
                           f"{list(x2.shape)}")
    return norm(x1 - x2 + eps, p, -1, keepdim=keepdim)


# ----------------------------------------------------------------------------- unfold / fold

def _pair(v, fn, name):
    t = tuple(v) if isinstance(v, (tuple, list)) else (v, v)
    if len(t) != 2 or not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool)
                              for a in t):
        raise TypeError(f"{fn}(): argument '{name}' must be an int or a pair of ints, got {v!r}")
    return tuple(builtins.int(a) for a in t)


def _window(fn, kernel_size, dilation, padding, stride):
    k = _pair(kernel_size, fn, "kernel_size")
    d = _pair(dilation, fn, "dilation")
    p = _pair(padding, fn, "padding")
    s = _pair(stride, fn, "stride")
    for name, v, least in (("kernel_size", k, 1), ("dilation", d, 1), ("padding", p, 0),
                           ("stride", s, 1)):
        if min(v) < least:
            raise RuntimeError(f"{fn}(): {name} must be {'positive' if least else 'non-negative'}"
                               f", got {v}")
    return k, d, p, s


def _blocks(fn, size, k, d, p, s):
    """The number of sliding blocks along each of the two spatial dimensions."""
    out = tuple((size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2))
    if min(out) < 1:
        raise RuntimeError(f"{fn}(): the padded input {tuple(size)} (padding {p}) is smaller "
                           f"than the dilated kernel (kernel_size {k}, dilation {d}): no "
                           "sliding block fits; use a larger input or a smaller kernel")
    return out


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks of a (N, C, H, W) or (C, H, W) input as columns: (N, C * kh * kw, L),
    L the number of blocks, each column the block's values channel-major."""
    _check_tensor("unfold", "input", input)
    if input.ndim not in (3, 4):
        raise NotImplementedError(f"unfold(): expected a 3-D (C, H, W) or 4-D (N, C, H, W) "
                                  f"input, got {input.ndim}-D of shape {list(input.shape)}")
    if input.ndim == 3:
        return unfold(input.unsqueeze(0), kernel_size, dilation, padding, stride).squeeze(0)
    k, d, p, s = _window("unfold", kernel_size, dilation, padding, stride)
    N, C, H, W = input.shape
    oh, ow = _blocks("unfold", (H, W), k, d, p, s)
    x = pad(input, (p[1], p[1], p[0], p[0])) if p[0] or p[1] else input
    cols = [x[:, :, i * d[0]: i * d[0] + s[0] * (oh - 1) + 1: s[0],
              j * d[1]: j * d[1] + s[1] * (ow - 1) + 1: s[1]]
            for i in range(k[0]) for j in range(k[1])]
    return stack(cols, 2).reshape(N, C * k[0] * k[1], oh * ow)


def _spread(x, step, dim):
    """``x`` with ``step - 1`` zeros after each entry along ``dim`` (the last ones dropped)."""
    if step == 1:
        return x
    n = x.shape[dim]
    z = zeros(*x.shape[:dim + 1], step - 1, *x.shape[dim + 1:], dtype=x.dtype, device=x.device)
    y = cat([x.unsqueeze(dim + 1), z], dim + 1)
    y = y.reshape(*x.shape[:dim], n * step, *x.shape[dim + 1:])
    return y.narrow(dim, 0, (n - 1) * step + 1)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """The inverse layout of ``unfold``: columns (N, C * kh * kw, L) or (C * kh * kw, L) summed
    into an (N, C, H, W) image, overlapping values added."""
    _check_tensor("fold", "input", input)
    if input.ndim not in (2, 3):
        raise NotImplementedError(f"fold(): expected a 2-D (C * kh * kw, L) or 3-D "
                                  f"(N, C * kh * kw, L) input, got {input.ndim}-D of shape "
                                  f"{list(input.shape)}")
    if input.ndim == 2:
        return fold(input.unsqueeze(0), output_size, kernel_size, dilation, padding,
                    stride).squeeze(0)
    H, W = _pair(output_size, "fold", "output_size")
    k, d, p, s = _window("fold", kernel_size, dilation, padding, stride)
    N, CK, L = input.shape
    if CK % (k[0] * k[1]):
        raise RuntimeError(f"fold(): expected size of input's dimension 1 ({CK}) to be "
                           f"divisible by the product of kernel_size {k}")
    oh, ow = _blocks("fold", (H, W), k, d, p, s)
    if oh * ow != L:
        raise RuntimeError(f"fold(): expected input's dimension 2 ({L}) to match the number "
                           f"of sliding blocks {oh} * {ow} = {oh * ow} for output_size "
                           f"{(H, W)}, kernel_size {k}, dilation {d}, padding {p}, stride {s}")
    C = CK // (k[0] * k[1])
    Hp, Wp = H + 2 * p[0], W + 2 * p[1]
    cols = input.reshape(N, C, k[0] * k[1], oh, ow)
    out = None
    for i in range(k[0]):
        for j in range(k[1]):
            block = _spread(_spread(cols[:, :, i * k[1] + j], s[0], 2), s[1], 3)
            top, left = i * d[0], j * d[1]
            block = pad(block, (left, Wp - left - block.shape[3], top, Hp - top - block.shape[2]))
            out = block if out is None else out + block
    return out[:, :, p[0]:p[0] + H, p[1]:p[1] + W] if p[0] or p[1] else out


# ----------------------------------------------------------------------------- embedding bags

def _host_ints(t, fn, name):
    if not isinstance(t, Tensor) or t.dtype not in ("int64", "int32"):
        raise TypeError(f"{fn}(): argument '{name}' must be an integer (Long or Int) tensor, "
                        f"got {getattr(t, 'dtype', type(t).__name__)}")
    return np.asarray(devices.host(t._data)).astype(np.int64)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sums, means or maxima of bags of embeddings: ``input`` (B, N) is B bags of N indices
    (``offsets`` None), or 1-D with ``offsets`` the start of each bag; empty bags give zeros;
    ``per_sample_weights`` scale each index's row (mode 'sum' only); entries equal to
    ``padding_idx`` are left out of their bag."""
    _check_tensor("embedding_bag", "input", input)
    _check_tensor("embedding_bag", "weight", weight)
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag(): mode has to be one of sum, mean or max, got {mode!r}")
    if scale_grad_by_freq:
        raise NotImplementedError("embedding_bag(): scale_grad_by_freq=True is not supported; "
                                  "use F.embedding and reduce the bags yourself")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError("embedding_bag(): per_sample_weights was not None. "
                                      "per_sample_weights is only supported for mode='sum' "
                                      f"(got mode='{mode}'). Please open a feature request")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(f"embedding_bag(): per_sample_weights has shape "
                             f"{list(per_sample_weights.shape)}; it must have the shape of "
                             f"input, {list(input.shape)}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag(): if input is 2-D, then offsets has to be None, as "
                             "input is treated as a mini-batch of fixed length sequences; pass "
                             "a 1-D input with offsets, or no offsets")
        B, n = input.shape
        idx, psw, valid = input, per_sample_weights, None
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("embedding_bag(): offsets has to be a 1-D tensor (the start of "
                             "each bag) when input is 1-D")
        if offsets.ndim != 1:
            raise ValueError(f"embedding_bag(): offsets has to be a 1-D tensor, got "
                             f"{offsets.ndim}-D")
        starts = _host_ints(offsets, "embedding_bag", "offsets")
        total = input.shape[0]
        if include_last_offset:
            if len(starts) < 1:
                raise ValueError("embedding_bag(): include_last_offset=True needs at least one "
                                 "offset")
            ends, starts = starts[1:], starts[:-1]
        else:
            ends = np.append(starts[1:], total)
        if len(starts) and (starts[0] != 0 or np.any(np.diff(starts) < 0) or ends[-1] > total):
            raise ValueError(f"embedding_bag(): offsets must start at 0, never decrease and "
                             f"stay within the input's length {total}, got {starts.tolist()}")
        B = len(starts)
        lengths = ends - starts
        n = builtins.max(builtins.int(lengths.max()) if B else 0, 1)
        pos = starts[:, None] + np.arange(n)[None, :]
        ok = np.arange(n)[None, :] < lengths[:, None]
        pos = np.where(ok, pos, 0)
        if total == 0:
            out = zeros(B, weight.shape[1], dtype=weight.dtype, device=weight.device)
            return out + weight.sum() * 0.0
        pos_t = tensor(pos, device=input.device)
        idx = input[pos_t]
        psw = None if per_sample_weights is None else per_sample_weights[pos_t]
        valid = tensor(ok, device=input.device)
    else:
        raise ValueError(f"embedding_bag(): input has to be 1-D or 2-D, got {input.ndim}-D")
    if padding_idx is not None:
        keep = idx != padding_idx
        valid = keep if valid is None else valid.logical_and(keep)
    rows = embedding(idx, weight, max_norm=max_norm, norm_type=norm_type)  # (B, n, D)
    if mode == "max":
        if valid is None:
            return rows.max(1)[0]
        picked = rows.masked_fill(valid.logical_not().unsqueeze(-1), float("-inf")).max(1)[0]
        return where(valid.any(1, keepdim=True), picked, zeros((), dtype=rows.dtype,
                                                              device=rows.device))
    if psw is not None:
        rows = rows * psw.unsqueeze(-1)
    if valid is None:
        return rows.sum(1) if mode == "sum" else rows.mean(1)
    w = valid.to(rows.dtype)
    summed = (rows * w.unsqueeze(-1)).sum(1)
    if mode == "sum":
        return summed
    return summed / clamp_min(w.sum(1, keepdim=True), 1.0)


# ----------------------------------------------------------------------------- margin losses

def _same_shape(fn, **tensors):
    shapes = {name: tuple(t.shape) for name, t in tensors.items()}
    if len(set(shapes.values())) > 1:
        described = ", ".join(f"{name} {list(s)}" for name, s in shapes.items())
        raise ValueError(f"{fn}(): expected inputs of the same shape, got {described}")


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``; target holds 1 or -1."""
    reduction = _reduction(reduction, size_average, reduce)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"margin_ranking_loss(): all input tensors should have the same "
                           f"number of dimensions, got input1 {list(input1.shape)}, input2 "
                           f"{list(input2.shape)}, target {list(target.shape)}")
    return _reduce(clamp_min(-target * (input1 - input2) + margin, 0.0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """``input`` where target is 1, ``max(0, margin - input)`` where target is -1."""
    reduction = _reduction(reduction, size_average, reduce)
    zero = zeros((), dtype=input.dtype, device=input.device)
    loss = (where(target != 1, clamp_min(margin - input, 0.0), zero)
            + where(target != -1, input, zero))
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """``1 - cos(x1, x2)`` where target is 1, ``max(0, cos(x1, x2) - margin)`` where it is -1;
    inputs (N, D) with target (N,), or (D,) with a 0-d target."""
    reduction = _reduction(reduction, size_average, reduce)
    if input1.ndim not in (1, 2) or tuple(input1.shape) != tuple(input2.shape):
        raise RuntimeError(f"cosine_embedding_loss(): expected input1 and input2 of the same "
                           f"1-D (D) or 2-D (N, D) shape, got {list(input1.shape)} and "
                           f"{list(input2.shape)}")
    if target.ndim != input1.ndim - 1:
        raise RuntimeError(f"cosine_embedding_loss(): {input1.ndim}-D inputs need a "
                           f"{input1.ndim - 1}-D target, got {list(target.shape)}")
    eps = 1e-12
    prod = (input1 * input2).sum(-1)
    mag = ((input1 * input1).sum(-1) + eps) * ((input2 * input2).sum(-1) + eps)
    cos = prod / mag.sqrt()
    zero = zeros((), dtype=cos.dtype, device=cos.device)
    loss = where(target == 1, 1.0 - cos, zero) + where(target == -1,
                                                        clamp_min(cos - margin, 0.0), zero)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))``, ``d`` the pairwise
    p-norm distance; ``swap`` uses ``min(d(a, n), d(p, n))`` as the negative distance."""
    reduction = _reduction(reduction, size_average, reduce)
    if not (anchor.ndim == positive.ndim == negative.ndim) or anchor.ndim not in (1, 2):
        raise RuntimeError(f"triplet_margin_loss(): expected anchor, positive and negative of "
                           f"the same 1-D (D) or 2-D (N, D) shape, got {list(anchor.shape)}, "
                           f"{list(positive.shape)} and {list(negative.shape)}")
    if margin <= 0:
        raise ValueError(f"triplet_margin_loss(): margin must be greater than 0, got {margin}")
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = minimum(d_an, pairwise_distance(positive, negative, p, eps))
    return _reduce(clamp_min(margin + d_ap - d_an, 0.0), reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """For each sample, ``sum_{j in targets, i not in targets} max(0, 1 - (x[j] - x[i])) / C``;
    ``target`` (N, C) or (C,) lists class indices, ended by the first -1."""
    reduction = _reduction(reduction, size_average, reduce)
    if input.ndim not in (1, 2) or tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"multilabel_margin_loss(): expected input (C) or (N, C) and target "
                           f"of the same shape, got input {list(input.shape)} and target "
                           f"{list(target.shape)}")
    if input.ndim == 1:
        loss = multilabel_margin_loss(input.unsqueeze(0), target.unsqueeze(0), reduction="none")
        return loss.reshape(())
    N, C = input.shape
    tgt = _host_ints(target, "multilabel_margin_loss", "target")
    is_target = np.zeros((N, C), np.float32)
    for n in range(N):
        for c in tgt[n]:
            if c < 0:
                break
            if c >= C:
                raise IndexError(f"multilabel_margin_loss(): target {c} is out of bounds for "
                                 f"{C} classes")
            is_target[n, c] = 1.0
    pairs = is_target[:, :, None] * (1.0 - is_target)[:, None, :]   # (N, j target, i other)
    pairs_t = tensor(pairs.astype(np.dtype(input.dtype)), device=input.device)
    hinge = clamp_min(1.0 - (input.unsqueeze(2) - input.unsqueeze(1)), 0.0)
    return _reduce((hinge * pairs_t).sum((1, 2)) / C, reduction)


# ----------------------------------------------------------------------------- RReLU

def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: in training, negative inputs times a slope drawn uniformly from
    [lower, upper] per element (nn's random generator); otherwise the fixed slope
    ``(lower + upper) / 2``."""
    if lower > upper:
        raise ValueError(f"rrelu(): lower bound ({lower}) must be less than or equal to the "
                         f"upper bound ({upper})")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace=inplace)
    slope = rand(*input.shape, dtype=input.dtype, device=input.device) * (upper - lower) + lower
    out = where(input >= 0, input, input * slope)
    if inplace:
        input.copy_(out)
        return input
    return out
