"""Distances, sliding-window blocks, bags of embeddings, RReLU and a few layers, as
torch.nn.functional has them, composed from differentiable operators (so their gradients are
those operators' gradients): ``pairwise_distance``, ``pdist``, ``unfold`` / ``fold``,
``embedding_bag``, ``rrelu``, ``local_response_norm``, ``lp_pool1d/2d``, ``channel_shuffle``,
``gumbel_softmax``, ``fractional_max_pool2d``. The composed losses (margin losses, the NLL
variants, ``ctc_loss``) are in ``nn.functions.composed_loss``; this module exports them too.

Integer metadata (bag offsets) is read on the host to build index and mask tensors, which are
then made on the input's device; the values never leave it.
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import device as devices
from ..tensor import Tensor, rand, tensor, zeros
from .activation import leaky_relu
from .elementwise import clamp_min, where
from .reduce import norm
from .conv import pad
from .shape import cat, stack
from .sparse import embedding

__all__ = ["pairwise_distance", "unfold", "fold", "embedding_bag", "rrelu",
           "local_response_norm", "lp_pool1d", "lp_pool2d", "channel_shuffle", "pdist",
           "gumbel_softmax", "fractional_max_pool2d"]


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


# ----------------------------------------------------------------------------- layers

def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """``input / (k + alpha * mean of input ** 2 over `size` neighbouring channels) **
    beta``, the window from ``size // 2`` channels before to ``(size - 1) // 2`` after
    (zeros past the edges), as PyTorch's."""
    dim = input.ndim
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    n, c = input.shape[:2]
    sq = (input * input).reshape(n, c, -1)
    before, after = size // 2, (size - 1) // 2
    padded = pad(sq, (0, 0, before, after))
    total = padded[:, 0:c]
    for j in range(1, size):
        total = total + padded[:, j:j + c]
    div = (total.reshape(input.shape) * (alpha / size) + k) ** beta
    return input / div


def _lp_pool(input, norm_type, kernel, stride, ceil_mode, avg):
    out = avg(input ** norm_type, kernel, stride, 0, ceil_mode)
    return ((out.sign() * out.abs().relu()) * float(np.prod(kernel))) ** (1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling: ``(sum over the window of x ** p) ** (1 / p)``."""
    from .pool import avg_pool1d
    k = kernel_size[0] if isinstance(kernel_size, (tuple, list)) else kernel_size
    return _lp_pool(input, float(norm_type), (k,), stride, ceil_mode,
                    lambda x, kk, s, pd, cm: avg_pool1d(x, kk[0], s, pd, cm))


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """2-d power-average pooling: ``(sum over the window of x ** p) ** (1 / p)``."""
    from .pool import avg_pool2d
    kernel = _pair(kernel_size, "lp_pool2d", "kernel_size")
    return _lp_pool(input, float(norm_type), kernel, stride, ceil_mode, avg_pool2d)


def channel_shuffle(input, groups):
    """Split the C channels of (N, C, *) into ``groups`` and interleave them:
    ``(N, g, C / g, *) -> (N, C / g, g, *)``."""
    if input.ndim < 3:
        raise RuntimeError("channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError("Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    n, c = input.shape[:2]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    rest = tuple(input.shape[2:])
    x = input.reshape((n, groups, c // groups) + rest).transpose(1, 2)
    return x.reshape((n, c) + rest)


def pdist(input, p=2):
    """The p-norm distances between the rows of (N, M) ``input``, for i < j in row-major
    order: N * (N - 1) / 2 values."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    if len(i) == 0:
        return input.sum(1)[0:0]
    a = input.index_select(0, tensor(i.astype("int64"), device=input.device))
    b = input.index_select(0, tensor(j.astype("int64"), device=input.device))
    return norm(a - b, p, -1)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """A sample of the Gumbel-softmax distribution: ``softmax((logits + g) / tau)`` with
    Gumbel noise ``g = -log(E)``, E exponential (nn's random generator); ``hard`` returns the
    one-hot of the argmax in the forward pass with the soft sample's gradient
    (straight-through)."""
    u = rand(*logits.shape, dtype=logits.dtype, device=logits.device)
    tiny = float(np.finfo(np.dtype(logits.dtype)).tiny)
    gumbels = -(-(clamp_min(u, tiny).log())).log()       # -log(Exp(1)), Exp(1) = -log(U)
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.detach().argmax(dim, keepdim=True)
    y_hard = (y_soft.detach() * 0).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# ----------------------------------------------------------------------------- fractional pooling

def _intervals(samples, size, out, k):
    """PyTorch's pseudo-random window starts: ``int((i + u) * alpha) - int(u * alpha)``,
    alpha = (size - k) / (out - 1) in float32, the last window ending at the edge."""
    samples = samples.astype("float32")
    alpha = np.float32(size - k) / np.float32(out - 1) if out > 1 else np.float32(0)
    i = np.arange(out - 1, dtype="float32")
    starts = ((i + samples[..., None]) * alpha).astype("int64") - \
        (samples[..., None] * alpha).astype("int64")
    last = np.full(samples.shape + (1,), size - k, "int64")
    return np.concatenate([starts, last], -1)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Max pooling over pseudo-randomly placed (N, C, H, W) windows of ``kernel_size`` that
    give ``output_size`` (or ``output_ratio`` times the input size) outputs; the placement of
    each plane comes from ``_random_samples`` (N, C, 2) in [0, 1) (width first), drawn from
    nn's random generator when not given. A gather and a max, so the gradient is autograd's."""
    if output_size is None and output_ratio is None:
        raise ValueError("fractional_max_pool2d requires specifying either an output_size or "
                         "an output_ratio")
    unbatched = input.ndim == 3
    x = input.unsqueeze(0) if unbatched else input
    if x.ndim != 4:
        raise RuntimeError(f"fractional_max_pool2d(): Expected 3D or 4D tensor, but got: "
                           f"{list(input.shape)}")
    n, c, h, w = x.shape
    kh, kw = _pair(kernel_size, "fractional_max_pool2d", "kernel_size")
    if output_size is None:
        ratio = output_ratio if isinstance(output_ratio, (tuple, list)) else \
            (output_ratio, output_ratio)
        output_size = (int(h * ratio[0]), int(w * ratio[1]))
    oh, ow = _pair(output_size, "fractional_max_pool2d", "output_size")
    if oh + kh - 1 > h:
        raise RuntimeError(f"fractional_max_pool2d(): pool height {kh} too large relative to "
                           f"input height {h}")
    if ow + kw - 1 > w:
        raise RuntimeError(f"fractional_max_pool2d(): pool width {kw} too large relative to "
                           f"input width {w}")
    if _random_samples is None:
        samples = devices.host(rand(n, c, 2)._data)
    else:
        samples = np.asarray(devices.host(_random_samples.detach()._data))
        samples = samples.reshape(n, c, 2)
    rows = _intervals(samples[..., 1], h, oh, kh)                 # (N, C, oh)
    cols = _intervals(samples[..., 0], w, ow, kw)                 # (N, C, ow)
    r = rows[:, :, :, None, None, None] + np.arange(kh)[:, None]  # (N, C, oh, 1, kh, 1)
    q = cols[:, :, None, :, None, None] + np.arange(kw)           # (N, C, 1, ow, 1, kw)
    flat = (r * w + q).reshape(n, c, oh * ow * kh * kw)
    picked = x.reshape(n, c, h * w).gather(2, tensor(flat, device=x.device))
    windows = picked.reshape(n, c, oh, ow, kh * kw)
    out, arg = windows.max(-1)
    if unbatched:
        out = out.reshape(c, oh, ow)
    if not return_indices:
        return out
    index = np.take_along_axis(flat.reshape(n, c, oh, ow, kh * kw),
                               devices.host(arg._data)[..., None], -1)[..., 0]
    index = tensor(index.reshape(out.shape), device=x.device)
    return out, index


# The composed losses use the distances and host helpers above, so they load last.
from . import composed_loss as _composed_loss  # noqa: E402
from .composed_loss import *  # noqa: F401,F403,E402

__all__ += _composed_loss.__all__
