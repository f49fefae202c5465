"""Losses with PyTorch's names, signatures and reduction semantics: cross_entropy, nll_loss,
mse_loss, l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy(_with_logits), kl_div.

Each runs as one fused forward kernel (the elementwise or per-sample loss and its reduction)
and one fused backward kernel (nn/ops/loss.py). The class-index losses take PyTorch's weighted
mean: the sum of the weighted losses divided by the sum of the weights of the targets that
are not ``ignore_index``. With ``create_graph=True`` (and for the gradient of a probability
target) the gradient comes from the composite form instead, so that it can be differentiated
again (see nn/functions/fused.py).
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from nn.ops import loss as ops

from .. import device as devices
from .base import Tensor, broadcast_shape, torch_name
from .fused import FusedOp, run_kernel

__all__ = ["cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"]

REDUCTIONS = ("none", "mean", "sum")


def _reduction(reduction, size_average, reduce, allowed=REDUCTIONS):
    """The reduction, from the deprecated ``size_average``/``reduce`` when given."""
    if size_average is not None or reduce is not None:
        warnings.warn("size_average and reduce args will be deprecated, please use "
                      "reduction='mean' (or 'sum', 'none') instead.")
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else "mean" if size_average else "sum"
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


@functools.lru_cache(maxsize=64)
def _ones(n, dtype):
    return np.ones(n, dtype)


def _reduce(loss, reduction):
    """The composite forms' unweighted reduction."""
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


# ----------------------------------------------------------------------------- class indices

def _unbatched(fn, input, target, *args):
    """``fn`` on one sample (C,) as a batch of one; the loss is 0-d in every reduction."""
    if not target.is_floating_point():
        if target.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if target.ndim == 1 and target.shape[0] != 1:
            raise ValueError("For 1D input, 1D target must have size 1, but got target size: "
                             f"{target.shape[0]}")
    target = target.unsqueeze(0) if target.is_floating_point() else target.reshape(1)
    return fn(input.unsqueeze(0), target, *args).reshape(())


def _class_view(input, target):
    """(N, C, D), the view of (N, C, *) ``input`` that the kernels take (targets: (N, D))."""
    n, c = input.shape[:2]
    if target.shape[:1] != (n,):
        raise ValueError(f"Expected input batch_size ({n}) to match target batch_size "
                         f"({target.shape[0] if target.ndim else 0}).")
    if target.shape[1:] != input.shape[2:]:
        raise RuntimeError(f"Expected target size {[n] + list(input.shape[2:])}, got "
                           f"{list(target.shape)}")
    return n, c, input.numel() // (n * c) if n * c else 0


def _check_input(input, what):
    if input.ndim == 0:
        raise ValueError(f"{what}: expected an input of at least 1 dimension (C) or 2 (N, C), "
                         "got a 0-d tensor")
    if not input.is_floating_point():
        raise RuntimeError(f"{what}: expected a floating point input, got {input.dtype}")


def _class_targets(target, classes, ignore_index):
    """Class indices as int64, checked as PyTorch checks them (before a kernel gathers)."""
    if target.dtype not in ("int64", "uint8"):
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{torch_name(target.dtype)}")
    target = target.to("int64")
    if target.numel():
        (found, value), = [devices.host(a).tolist() for a in run_kernel(
            ops.first_bad_target, target._data.reshape(-1), classes=classes,
            ignore_index=ignore_index)]
        if found:
            raise IndexError(f"Target {value} is out of bounds.")
    return target


def _check_weight(weight, classes, dtype):
    """The class weights as an array (ones when not given)."""
    if weight is None:
        return _ones(classes, dtype)
    if weight.shape != (classes,):
        raise RuntimeError(f"weight tensor should be defined either for all {classes} classes "
                           f"or no classes but got weight tensor of shape: "
                           f"{list(weight.shape)}")
    return np.asarray(weight._data, dtype)


def _sample_weights(target, weight, view, ignore_index, smoothing):
    """(N, C, D) constant: the weight of each log-probability in a sample's loss."""
    n, c, d = view
    (w,) = run_kernel(ops.class_weights, target._data.reshape(n, d), weight, classes=c,
                      ignore_index=ignore_index, smoothing=smoothing)
    return Tensor(w)


class CrossEntropyLoss(FusedOp):
    """log_softmax over the classes and the (weighted, smoothed) loss at the targets, fused;
    ``target`` holds int64 class indices, or class probabilities when ``probs``."""

    @staticmethod
    def forward(ctx, x, target, weight, ignore_index, smoothing, reduction, probs, view):
        FusedOp.remember(ctx, (x, target, weight, ignore_index, smoothing, reduction, probs,
                               view))
        n, c, d = view
        ctx.probs = probs
        if probs:
            out = run_kernel(ops.cross_entropy_probs, x._data.reshape(view),
                             target._data.reshape(view), weight, smoothing=smoothing,
                             reduction=reduction, schedule=ops.schedule_loss)
        else:
            out = run_kernel(ops.cross_entropy, x._data.reshape(view),
                             target._data.reshape(n, d), weight, ignore_index=ignore_index,
                             smoothing=smoothing, reduction=reduction,
                             schedule=ops.schedule_loss)
        ctx.lse = out[1]
        ctx.wsum = out[2] if len(out) > 2 else _ones(1, x.dtype)
        sample_shape = (n,) + x.shape[2:]
        return Tensor(out[0].reshape(sample_shape if reduction == "none" else ()))

    @staticmethod
    def needs_composite(ctx):
        return ctx.probs and ctx.needs_input_grad[1]        # the probabilities' gradient

    @staticmethod
    def fused_backward(ctx, args, g):
        x, target, weight, ignore_index, smoothing, reduction, probs, view = args
        n, c, d = view
        (dx,) = run_kernel(ops.cross_entropy_backward, x._data.reshape(view),
                           target._data.reshape(view if probs else (n, d)), weight, ctx.lse,
                           g._data.reshape((n, d) if reduction == "none" else (1,)), ctx.wsum,
                           ignore_index=ignore_index, smoothing=smoothing, reduction=reduction,
                           probs=probs, schedule=ops.schedule_loss_grad)
        return (Tensor(dx.reshape(x.shape)),) + (None,) * 7

    @staticmethod
    def composite(x, target, weight, ignore_index, smoothing, reduction, probs, view):
        n, c, d = view
        x3 = x.reshape(view)
        top = x3.detach().max(1, keepdim=True).values
        logp = x3 - ((x3 - top).exp().sum(1, keepdim=True).log() + top)
        if probs:
            coefs = (target.reshape(view) * (1.0 - smoothing) + smoothing / c) * Tensor(
                weight.reshape(1, c, 1))
        else:
            coefs = _sample_weights(target, weight, view, ignore_index, smoothing)
        loss = -(logp * coefs).sum(1)
        if reduction == "none":
            return loss.reshape((n,) + x.shape[2:])
        if reduction == "sum" or probs:
            return _reduce(loss, reduction)
        return loss.sum() / _sample_weights(target, weight, view, ignore_index, 0.0).sum()


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy of logits (N, C, *) against class indices (N, *) or class
    probabilities (N, C, *), with class ``weight``s, ``ignore_index`` and label smoothing."""
    reduction = _reduction(reduction, size_average, reduce)
    _check_input(input, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    probs = target.is_floating_point()
    if probs and target.shape != input.shape:
        raise RuntimeError(f"cross_entropy: class-probability targets must have the input's "
                           f"shape; got input {list(input.shape)} and target "
                           f"{list(target.shape)}")
    if input.ndim == 1:
        return _unbatched(cross_entropy, input, target, weight, None, ignore_index, None,
                          reduction, label_smoothing)
    n, c = input.shape[:2]
    if probs:
        view = (n, c, input.numel() // (n * c) if n * c else 0)
        target = target.to(input.dtype)
    else:
        view = _class_view(input, target)
        target = _class_targets(target, c, ignore_index)
    w = _check_weight(weight, c, input.dtype)
    return CrossEntropyLoss.apply(input, target, w, int(ignore_index), float(label_smoothing),
                                  reduction, probs, view)


class NllLoss(FusedOp):
    """The negative log-likelihood at the targets: a gather and its scatter."""

    @staticmethod
    def forward(ctx, x, target, weight, ignore_index, reduction, view):
        FusedOp.remember(ctx, (x, target, weight, ignore_index, reduction, view))
        n, c, d = view
        out = run_kernel(ops.nll_loss, x._data.reshape(view), target._data.reshape(n, d),
                         weight, ignore_index=ignore_index, reduction=reduction,
                         schedule=ops.schedule_loss)
        ctx.wsum = out[1] if len(out) > 1 else _ones(1, x.dtype)
        return Tensor(out[0].reshape(target.shape if reduction == "none" else ()))

    @staticmethod
    def fused_backward(ctx, args, g):
        x, target, weight, ignore_index, reduction, view = args
        n, c, d = view
        (dx,) = run_kernel(ops.nll_loss_backward, x._data.reshape(view),
                           target._data.reshape(n, d), weight,
                           g._data.reshape((n, d) if reduction == "none" else (1,)), ctx.wsum,
                           ignore_index=ignore_index, reduction=reduction,
                           schedule=ops.schedule_loss_grad)
        return (Tensor(dx.reshape(x.shape)),) + (None,) * 5

    @staticmethod
    def composite(x, target, weight, ignore_index, reduction, view):
        coefs = _sample_weights(target, weight, view, ignore_index, 0.0)
        loss = -(x.reshape(view) * coefs).sum(1)
        if reduction == "none":
            return loss.reshape(target.shape)
        return loss.sum() if reduction == "sum" else loss.sum() / coefs.sum()


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log-likelihood of log-probabilities (N, C, *) at class indices (N, *)."""
    reduction = _reduction(reduction, size_average, reduce)
    _check_input(input, "nll_loss")
    if input.ndim == 1:
        return _unbatched(nll_loss, input, target, weight, None, ignore_index, None, reduction)
    view = _class_view(input, target)
    target = _class_targets(target, view[1], ignore_index)
    w = _check_weight(weight, view[1], input.dtype)
    return NllLoss.apply(input, target, w, int(ignore_index), reduction, view)


# ----------------------------------------------------------------------------- pointwise

def _sign(t):
    """The sign of ``t``'s values, a constant (no graph)."""
    d = t.detach()
    return (d > 0).to(t.dtype) - (d < 0).to(t.dtype)


def _composite_value(kind, param, a, b, weight, pos_weight):
    """The elementwise loss in differentiable operators (for double backward)."""
    if weight is not None and kind in ("mse", "l1", "smooth_l1", "huber"):
        return _composite_value(kind, param, a, b, None, None) * weight
    d = a - b
    if kind == "mse":
        return d * d
    if kind in ("l1", "smooth_l1", "huber"):
        absd = d * _sign(d)
        if kind == "l1" or param == 0:
            return absd
        near = (absd.detach() < param).to(a.dtype)
        if kind == "smooth_l1":
            return near * d * d * (0.5 / param) + (1 - near) * (absd - 0.5 * param)
        return near * d * d * 0.5 + (1 - near) * (absd - 0.5 * param) * param
    if kind == "bce":
        out = -(b * a.log() + (1 - b) * (1 - a).log())
        return out if weight is None else out * weight
    if kind == "bce_logits":
        softplus = (1 + (-(a * _sign(a))).exp()).log() + (-a).relu()
        return weight * ((1 - b) * a + (1 + (pos_weight - 1) * b) * softplus)
    if param:           # kl_div with log targets
        return b.exp() * (b - a)
    positive = (b.detach() > 0).to(a.dtype)
    return b * ((b * positive + (1 - positive)).log() - a)


class PointwiseLoss(FusedOp):
    """An elementwise loss of input and target and its reduction, fused; ``scale`` is None
    (no reduction), the factor of the sum, or "weight" (the sum over the sum of weights)."""

    @staticmethod
    def forward(ctx, a, b, weight, pos_weight, kind, param, scale):
        FusedOp.remember(ctx, (a, b, weight, pos_weight, kind, param, scale))
        extra = [t._data.reshape(-1) for t in (weight, pos_weight) if t is not None]
        by_weight = scale == "weight"
        out = run_kernel(ops.pointwise_loss, a._data.reshape(-1), b._data.reshape(-1), *extra,
                         kind=kind, param=param, scale=1.0 if by_weight else scale,
                         weighted_mean=by_weight, schedule=ops.schedule_loss)
        ctx.divisor = out[1:]
        return Tensor(out[0].reshape(a.shape if scale is None else ()))

    @staticmethod
    def fused_backward(ctx, args, g):
        a, b, weight, pos_weight, kind, param, scale = args
        extra = [t._data.reshape(-1) for t in (weight, pos_weight) if t is not None]
        by_weight = scale == "weight"
        da, db = run_kernel(ops.pointwise_loss_grad, a._data.reshape(-1), b._data.reshape(-1),
                            g._data.reshape(-1), *extra, *ctx.divisor, kind=kind, param=param,
                            scale=1.0 if by_weight else scale, weighted_mean=by_weight,
                            schedule=ops.schedule_loss_grad)
        need = ctx.needs_input_grad
        return (Tensor(da.reshape(a.shape)) if need[0] else None,
                Tensor(db.reshape(b.shape)) if need[1] else None) + (None,) * 5

    @staticmethod
    def composite(a, b, weight, pos_weight, kind, param, scale):
        loss = _composite_value(kind, param, a, b, weight, pos_weight)
        if scale is None:
            return loss
        return loss.sum() / weight.sum() if scale == "weight" else loss.sum() * scale


class MseLoss(PointwiseLoss):
    """``(a - b) ** 2``."""


class L1Loss(PointwiseLoss):
    """``|a - b|``."""


class SmoothL1Loss(PointwiseLoss):
    """``0.5 d ** 2 / beta`` below ``beta``, ``|d| - 0.5 beta`` above."""


class HuberLoss(PointwiseLoss):
    """``0.5 d ** 2`` below ``delta``, ``delta (|d| - 0.5 delta)`` above."""


class BinaryCrossEntropy(PointwiseLoss):
    """``-(b log a + (1 - b) log(1 - a))``, logs clamped at -100."""


class BinaryCrossEntropyWithLogits(PointwiseLoss):
    """``(1 - b) a + (1 + (pos_weight - 1) b) log(1 + exp(-a))``, stable."""


class KlDiv(PointwiseLoss):
    """``b (log b - a)``, or ``exp(b) (b - a)`` for log targets."""


OPS = {"mse": MseLoss, "l1": L1Loss, "smooth_l1": SmoothL1Loss, "huber": HuberLoss,
       "bce": BinaryCrossEntropy, "bce_logits": BinaryCrossEntropyWithLogits, "kl_div": KlDiv}


def _pointwise(kind, input, target, reduction, param=0.0, weight=None, pos_weight=None,
               batch=None):
    """Broadcast input and target as PyTorch's losses do, then the fused loss."""
    if not input.is_floating_point():
        raise RuntimeError(f"{kind}: expected a floating point input, got {input.dtype}")
    if weight is not None and kind in ("mse", "l1", "huber") and weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    if target.dtype != input.dtype:
        target = target.to(input.dtype)
    if target.shape != input.shape:
        shape = broadcast_shape(input.shape, target.shape)
        input, target = input.expand(shape), target.expand(shape)
    extras = []
    for t in (weight, pos_weight):
        if t is not None:
            t = Tensor(devices.move(np.ascontiguousarray(np.broadcast_to(devices.host(
                t.detach()._data).astype(input.dtype), input.shape)), input.device))
        extras.append(t)
    if kind == "bce_logits":
        ones = Tensor(devices.move(np.ones(input.shape, input.dtype), input.device))
        extras = [e if e is not None else ones for e in extras]
    count = input.numel()
    scale = {"none": None, "sum": 1.0, "mean": 1.0 / count if count else float("nan"),
             "batchmean": 1.0 / batch if batch else float("nan")}[reduction]
    if reduction == "mean" and weight is not None and kind in ("mse", "l1"):
        scale = "weight"            # PyTorch's weighted mean: divided by the weights' sum
    return OPS[kind].apply(input, target, *extras, kind, float(param), scale)


def _warn_size(input, target):
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({list(target.shape)}) that is different to the "
                      f"input size ({list(input.shape)}). This will likely lead to incorrect "
                      "results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=3)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error (squared L2)."""
    reduction = _reduction(reduction, size_average, reduce)
    _warn_size(input, target)
    return _pointwise("mse", input, target, reduction, weight=weight)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error."""
    reduction = _reduction(reduction, size_average, reduce)
    _warn_size(input, target)
    return _pointwise("l1", input, target, reduction, weight=weight)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Squared below ``beta`` (divided by ``beta``), absolute above."""
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _warn_size(input, target)
    return _pointwise("smooth_l1", input, target, reduction, beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Squared below ``delta``, ``delta``-scaled absolute above."""
    reduction = _reduction(reduction, None, None)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _warn_size(input, target)
    return _pointwise("huber", input, target, reduction, delta, weight=weight)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """Binary cross entropy of probabilities, each log clamped at -100 as PyTorch's."""
    reduction = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({list(target.shape)}) that is different to "
                         f"the input size ({list(input.shape)}) is deprecated. Please ensure "
                         "they have the same size.")
    data = devices.host(input._data)      # the range checks, on the host (NaN fails them,
    if not np.all((data >= 0) & (data <= 1)):   # as PyTorch's)
        raise RuntimeError("all elements of input should be between 0 and 1")
    data = devices.host(target._data)
    if not np.all((data >= 0) & (data <= 1)):
        raise RuntimeError("all elements of target should be between 0 and 1")
    return _pointwise("bce", input, target, reduction, weight=weight)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """Sigmoid and binary cross entropy in one numerically stable step; ``pos_weight``
    weighs the positive targets (broadcast along the class dimension, the last)."""
    reduction = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({list(target.shape)}) must be the same as input size "
                         f"({list(input.shape)})")
    return _pointwise("bce_logits", input, target, reduction, weight=weight,
                      pos_weight=pos_weight)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """The Kullback-Leibler divergence of log-probabilities ``input`` from ``target``
    (probabilities, or log-probabilities with ``log_target``); "batchmean" divides the sum
    by the batch size (the mathematically right mean)."""
    reduction = _reduction(reduction, size_average, reduce, REDUCTIONS + ("batchmean",))
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.")
    batch = input.shape[0] if input.ndim else 1
    return _pointwise("kl_div", input, target, reduction, float(bool(log_target)),
                      batch=batch)

