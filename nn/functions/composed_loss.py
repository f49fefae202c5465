"""Losses of torch.nn.functional composed from differentiable operators (so their gradients
are those operators' gradients): the margin losses (``margin_ranking_loss``,
``hinge_embedding_loss``, ``cosine_embedding_loss``, ``triplet_margin_loss``,
``multilabel_margin_loss``, ``multi_margin_loss``, ``soft_margin_loss``...),
``poisson_nll_loss``, ``gaussian_nll_loss`` and ``ctc_loss``. ``nn.functions.composed``
exports these names.

Integer metadata (multilabel targets, CTC lengths) is read on the host to build index and mask
tensors, which are then made on the input's device; the values never leave it.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from .. import device as devices
from ..tensor import Tensor, tensor, zeros
from .activation import softplus
from .composed import _host_ints, pairwise_distance
from .elementwise import clamp_min, minimum, where
from .loss import _reduce, _reduction
from .shape import cat, stack

__all__ = ["margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
           "triplet_margin_loss", "multilabel_margin_loss", "poisson_nll_loss",
           "gaussian_nll_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
           "multi_margin_loss", "triplet_margin_with_distance_loss", "ctc_loss"]


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


# ----------------------------------------------------------------------------- more losses

def _const(array, like):
    """A constant tensor of ``like``'s dtype and device from a host array."""
    return tensor(np.asarray(array, np.dtype(like.dtype)), device=like.device)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Negative log-likelihood of a Poisson target: ``exp(input) - target * input`` with
    ``log_input``, else ``input - target * log(input + eps)``; ``full`` adds Stirling's
    approximation ``target log(target) - target + log(2 pi target) / 2`` where target > 1."""
    reduction = _reduction(reduction, size_average, reduce)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:        # where target <= 1 the term (and its gradient) is 0
        big = target.detach() > 1
        safe = where(big, target, target.detach() * 0 + 2)
        stirling = safe * safe.log() - safe + 0.5 * (safe * (2 * math.pi)).log()
        loss = loss + where(big, stirling, stirling.detach() * 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Negative log-likelihood of a Gaussian: ``(log(var) + (input - target) ** 2 / var) / 2``,
    var clamped at ``eps`` outside the graph (its gradient passes through the clamp), as
    PyTorch's; ``var`` has input's shape, or one dimension less, or one broadcast dimension."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = input.detach() * 0 + float(var)
    elif bool((var.detach() < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.ndim == var.ndim and builtins.sum(
                y for x, y in zip(input.shape, var.shape) if x != y) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    held = var.detach()
    var = var + (clamp_min(held, eps) - held)       # the clamp, outside the graph
    d = input - target
    loss = 0.5 * (var.log() + d * d / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Two-class logistic loss ``log(1 + exp(-target * input))``, target 1 or -1."""
    reduction = _reduction(reduction, size_average, reduce)
    return _reduce(softplus(-target * input), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """Per sample, the mean over the classes (the last dimension) of the binary logistic
    losses ``-(t log sigmoid(x) + (1 - t) log sigmoid(-x))``, times ``weight``."""
    reduction = _reduction(reduction, size_average, reduce)
    loss = target * softplus(-input) + (1 - target) * softplus(input)
    if weight is not None:
        loss = loss * weight
    classes = input.shape[-1] if input.ndim else 1
    return _reduce(loss.sum(input.ndim - 1 if input.ndim else ()) / classes
                   if input.ndim else loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """Multi-class hinge loss: per sample ``sum_{i != y} max(0, margin - x[y] + x[i]) ** p /
    C``, each term times ``weight[y]``; input (N, C) or (C,), target (N,) or 0-d."""
    reduction = _reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if input.ndim == 0 or input.ndim > 2:
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    n, c = x.shape
    t = target.reshape(-1)
    if t.shape[0] != n or target.ndim > 1:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal "
                           f"to the number of input samples (batch size). Expected target "
                           f"size [{n}], but got {list(target.shape)}. Input has shape "
                           f"{list(input.shape)}.")
    labels = _host_ints(t, "multi_margin_loss", "target").reshape(-1)
    if len(labels) and (labels.min() < 0 or labels.max() >= c):
        raise RuntimeError("target out of range")
    others = np.ones((n, c), np.float32)
    others[np.arange(n), labels] = 0.0
    at = tensor(labels.astype("int64"), device=input.device).reshape(n, 1)
    z = clamp_min(margin - x.gather(1, at) + x, 0.0)
    if p == 2:
        z = z * z
    z = z * _const(others, x)
    if weight is not None:
        z = z * weight.index_select(0, at.reshape(-1)).reshape(n, 1)
    loss = z.sum(1) / c
    return _reduce(loss if input.ndim == 2 else loss.reshape(()), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with any distance
    function ``d`` (``pairwise_distance`` by default); ``swap`` as triplet_margin_loss's."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {a_dim}D, "
                           f"positive {p_dim}D, and negative {n_dim}D inputs")
    distance = pairwise_distance if distance_function is None else distance_function
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = minimum(d_neg, distance(positive, negative))
    return _reduce(clamp_min(margin + d_pos - d_neg, 0.0), reduction)


# ----------------------------------------------------------------------------- CTC

_NEG = -1e30        # log(0) as a finite number: logsumexp's gradient stays 0, never NaN


def _lengths(value, n, fn, name):
    lengths = np.asarray(devices.host(value._data) if isinstance(value, Tensor) else value)
    lengths = lengths.astype("int64").reshape(-1)
    if lengths.shape[0] != n:
        raise RuntimeError(f"{fn}: expected {name} to have size {n}, but got "
                           f"{lengths.shape[0]}")
    return lengths


def _ctc_one(lp, labels, blank):
    """The negative log-likelihood of ``labels`` under (T, C) log-probabilities ``lp``: the
    forward (alpha) recursion over the extended labels (blank, l1, blank, l2, ..., blank),
    in log space."""
    ext = np.full(2 * len(labels) + 1, blank, "int64")
    ext[1::2] = labels
    size = len(ext)
    emit = lp.index_select(1, tensor(ext, device=lp.device))          # (T, L)
    skip = np.zeros(size, bool)
    skip[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    skip_mask = _const(skip.astype("float32"), lp)
    neg = _const(np.full(2, _NEG, "float32"), lp)
    start = np.full(size, _NEG, "float32")
    start[:2] = 0.0
    alpha = emit[0] + _const(start[:size], lp)
    for t in range(1, emit.shape[0]):
        one = cat([neg[:1], alpha[:size - 1]])
        two = cat([neg[:min(size, 2)], alpha[:max(size - 2, 0)]]) * skip_mask \
            + (1 - skip_mask) * _NEG
        alpha = stack([alpha, one, two]).logsumexp(0) + emit[t]
    return -(alpha[-2:] if size > 1 else alpha).logsumexp(0)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """Connectionist Temporal Classification loss of (T, N, C) (or unbatched (T, C))
    log-probabilities against targets (N, S) padded, or 1-D concatenated; ``mean`` divides
    each loss by its target length, then averages over the batch. Composed from
    differentiable operators (log-space forward recursion), so autograd gives the gradient;
    an impossible alignment gives inf (0 with ``zero_infinity``)."""
    reduction = _reduction(reduction, None, None)
    if log_probs.ndim == 2:
        loss = ctc_loss(log_probs.unsqueeze(1), targets.reshape(1, -1), input_lengths,
                        target_lengths, blank, "none", zero_infinity)
        loss = loss.reshape(())
        if reduction == "mean":
            return loss / max(int(_lengths(target_lengths, 1, "ctc_loss",
                                           "target_lengths")[0]), 1)
        return loss
    if log_probs.ndim != 3:
        raise RuntimeError(f"ctc_loss: expected log_probs (T, N, C) or (T, C), got "
                           f"{list(log_probs.shape)}")
    T, n, c = log_probs.shape
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    in_len = _lengths(input_lengths, n, "ctc_loss", "input_lengths")
    tg_len = _lengths(target_lengths, n, "ctc_loss", "target_lengths")
    labels = _host_ints(targets, "ctc_loss", "targets")
    offsets = np.concatenate([[0], np.cumsum(tg_len)])
    losses = []
    for k in range(n):
        if in_len[k] > T:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got "
                               f"value {in_len[k]} (while checking arguments for ctc_loss_cpu)")
        seq = labels[k, :tg_len[k]] if labels.ndim == 2 else \
            labels[offsets[k]:offsets[k + 1]]
        losses.append(_ctc_one(log_probs[:in_len[k], k], seq, blank).reshape(1))
    loss = cat(losses)
    impossible = loss.detach() > -_NEG / 2
    if zero_infinity:
        loss = where(impossible, loss * 0, loss)
    else:
        loss = where(impossible, loss.detach() * 0 + float("inf"), loss)
    if reduction == "mean":
        return (loss / _const(np.maximum(tg_len, 1).astype("float32"), loss)).mean()
    return _reduce(loss, reduction)
