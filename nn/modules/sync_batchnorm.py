"""SyncBatchNorm, as PyTorch's: batch normalization whose statistics are those of the batch
of every process of a group together (data-parallel training over ``nn.distributed``).

Forward: each process computes per channel its count, mean and M2 (the sum of squared
deviations from its mean) in one te kernel; an all-gather brings every process's triple, and
Chan's pairwise formula combines them in float64 into the global mean and biased variance
(numerically safe where sums of squares are not, and exact for uneven per-process batches,
empty ones included). The input is normalized with them (the batch-norm kernel with given
statistics) and the running statistics are updated with the global unbiased variance.
Backward: the two per-channel sums of the batch-norm gradient, ``sum(dy)`` and
``sum(dy * x_hat)``, are computed in one kernel and all-reduced; ``dx`` follows from the
global sums and count in a second kernel. The weight and bias gradients are the local sums,
as PyTorch's (DistributedDataParallel averages them). With no process group, a group of one
process, or in eval mode, it is plain batch normalization.
"""
from __future__ import annotations

import numpy as np

import te
from nn.ops import norm as ops
from nn.ops.norm import _producers, _vector_partials, sum2

from .. import autograd
from ..device import host
from ..functions.fused import run_kernel
from ..tensor import Tensor
from .batchnorm import _BatchNorm, _LazyBatchNorm

__all__ = ["SyncBatchNorm"]


# ----------------------------------------------------------------------------- kernels

def local_moments(x):
    """Per channel of (N, C, L) ``x`` (N * L > 0): (mean, M2), from the sums of
    ``x - x[0, c, 0]`` and its square (shifted by a sample, so exact for large means)."""
    n, c_, l_ = x.shape
    count = int(n) * int(l_)
    dt = x.dtype
    rn = te.reduce_axis((0, n), name="rn")
    rl = te.reduce_axis((0, l_), name="rl")

    def shifted(c):
        d = x[rn, c, rl] - x[0, c, 0]
        return sum2((d, d * d), axis=[rn, rl])
    s1, s2 = te.compute((c_,), shifted, name="moments", tag="norm_stats")
    inv = te.const(1.0 / count, dt)
    mean = te.compute((c_,), lambda c: x[0, c, 0] + s1[c] * inv, name="mean")
    m2 = te.compute((c_,), lambda c: te.max(s2[c] - s1[c] * s1[c] * inv, te.const(0.0, dt)),
                    name="m2")
    return mean, m2


def grad_sums(g, x, mean, var, *, eps):
    """Per channel: (sum of ``g``, sum of ``g * x_hat``), x_hat normalized by the given
    (global) statistics."""
    n, c_, l_ = x.shape
    rn = te.reduce_axis((0, n), name="rn")
    rl = te.reduce_axis((0, l_), name="rl")

    def body(c):
        invstd = te.rsqrt(var[c] + te.const(eps, x.dtype))
        return sum2((g[rn, c, rl], g[rn, c, rl] * (x[rn, c, rl] - mean[c]) * invstd),
                    axis=[rn, rl])
    return te.compute((c_,), body, name="grad_sums", tag="norm_stats")


def grad_input(g, x, mean, var, means, *weight, eps):
    """``dx`` of batch norm with global statistics: ``means`` (2, C) holds the global
    ``mean(dy)`` and ``mean(dy * x_hat)``."""
    dt = x.dtype

    def body(n, c, l_):
        invstd = te.rsqrt(var[c] + te.const(eps, dt))
        gain = invstd * weight[0][c] if weight else invstd
        xhat = (x[n, c, l_] - mean[c]) * invstd
        return (g[n, c, l_] - means[0, c] - xhat * means[1, c]) * gain
    return te.compute(x.shape, body, name="dx", tag="norm_out")


def schedule_sums(outs):
    """Per-channel sums: channels in parallel, each reduced in vector lanes of partials."""
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    s = te.create_schedule([o.op for o in outs])
    red = next(t for t in (outs[0], *_producers(outs[0])) if t.op.is_reduction)
    rf = _vector_partials(s, red)
    axis = s[red].op.axis[0]
    if rf is not None:
        s[rf].compute_at(s[red], axis)
    s[red].parallel(axis)
    return s


# ----------------------------------------------------------------------------- function

def _combine(table):
    """Global (count, mean, biased var) from rows (count, mean[C], M2[C]), in float64."""
    counts = table[:, :1]
    channels = (table.shape[1] - 1) // 2
    means, m2 = table[:, 1:1 + channels], table[:, 1 + channels:]
    total = counts.sum()
    if total == 0:
        return 0, np.full(channels, np.nan), np.full(channels, np.nan)
    mean = (counts * means).sum(0) / total
    m2_all = m2.sum(0) + (counts * (means - mean) ** 2).sum(0)
    return int(total), mean, m2_all / total


class _SyncBatchNormFunction(autograd.Function):
    """The forward and backward of SyncBatchNorm; the node is named ``SyncBatchNormBackward``."""

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, factor, group):
        from .. import distributed as dist
        x3 = x._data.reshape(x.shape[0], x.shape[1], -1) if x.numel() else \
            x._data.reshape(x.shape[0], x.shape[1], 0)
        channels = x.shape[1]
        local = np.zeros(1 + 2 * channels, np.float64)
        local[0] = x3.shape[0] * x3.shape[2]
        if local[0]:
            mean, m2 = run_kernel(local_moments, x3, schedule=schedule_sums)
            local[1:1 + channels] = host(mean)
            local[1 + channels:] = host(m2)
        size = dist.get_world_size(group)
        table = Tensor(np.empty((size, local.size), np.float64))
        dist.all_gather_into_tensor(table, Tensor(local), group=group)
        count, mean64, var64 = _combine(table._data)
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got "
                             f"{count} over the process group (input size {list(x.shape)})")
        dt = x._data.dtype
        mean, var = mean64.astype(dt), var64.astype(dt)
        affine = [a._data for a in (weight, bias) if a is not None]
        if len(affine) == 1:
            affine = [weight._data if weight is not None else np.ones(channels, dt),
                      bias._data if bias is not None else np.zeros(channels, dt)]
        if x3.size:
            (y,) = run_kernel(ops.batch_norm_eval, x3, mean, var, *affine, eps=eps,
                              schedule=ops.schedule_channels)
            y = Tensor(y.reshape(x.shape))
        else:
            y = Tensor(np.empty(x.shape, dt)).to(x.device)
        if running_mean is not None:
            new = run_kernel(ops.running_stats, running_mean._data, running_var._data,
                             mean.reshape(1, -1), var.reshape(1, -1), np.array([factor], dt),
                             count=count, schedule=ops.schedule_running)
            running_mean.copy_(Tensor(new[0]))
            running_var.copy_(Tensor(new[1]))
        ctx.save_for_backward(x, weight)
        ctx.stats = mean, var, count, eps, group
        return y

    @staticmethod
    def backward(ctx, dy):
        from .. import distributed as dist
        if autograd.is_grad_enabled():
            raise RuntimeError("SyncBatchNorm does not support double backward "
                               "(create_graph=True)")
        x, weight = ctx.saved_tensors
        mean, var, count, eps, group = ctx.stats
        channels = x.shape[1]
        g3 = dy._data.reshape(x.shape[0], channels, -1 if x.numel() else 0)
        x3 = x._data.reshape(g3.shape)
        sums = np.zeros((2, channels), x._data.dtype)
        if x3.size:
            local = run_kernel(grad_sums, g3, x3, mean, var, eps=eps, schedule=schedule_sums)
            sums[0], sums[1] = host(local[0]), host(local[1])
        dbias, dweight = sums[0].copy(), sums[1].copy()
        shared = Tensor(sums)
        dist.all_reduce(shared, group=group)
        need = ctx.needs_input_grad
        dx = None
        if need[0]:
            if x3.size:
                means = sums / sums.dtype.type(count)
                extra = [] if weight is None else [weight._data]
                (dx,) = run_kernel(grad_input, g3, x3, mean, var, means, *extra, eps=eps,
                                   schedule=ops.schedule_channels)
                dx = Tensor(dx.reshape(x.shape))
            else:
                dx = Tensor(np.zeros(x.shape, x._data.dtype)).to(x.device)
        grads = [Tensor(dweight).to(x.device) if need[1] else None,
                 Tensor(dbias).to(x.device) if need[2] else None]
        return (dx, *grads, None, None, None, None, None)


_SyncBatchNormFunction._node_cls.__name__ = "SyncBatchNormBackward"


# ----------------------------------------------------------------------------- the module

class SyncBatchNorm(_BatchNorm):
    """Batch normalization of (N, C, *) inputs with the statistics of the whole
    ``process_group`` (default: the world) in training; BatchNorm's arguments."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _synced(self):
        from .. import distributed as dist
        return (self.training and dist.is_initialized()
                and dist.get_world_size(self.process_group) > 1)

    def forward(self, input):
        if not self._synced():
            return super().forward(input)
        self._check_input_dim(input)
        if input.shape[1] != self.num_features:
            raise ValueError(f"SyncBatchNorm: expected {self.num_features} channels "
                             f"(dimension 1) of the input, got {list(input.shape)}")
        if input.dtype not in ("float32", "float64"):
            raise RuntimeError(f"SyncBatchNorm: expected a float32 or float64 input, got "
                               f"{input.dtype}")
        factor = 0.0 if self.momentum is None else self.momentum
        running = self.running_mean is not None and self.track_running_stats
        if running and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        return _SyncBatchNormFunction.apply(
            input, self.weight, self.bias, self.running_mean if running else None,
            self.running_var if running else None, float(self.eps), float(factor),
            self.process_group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm*d in it replaced by a SyncBatchNorm that shares its
        parameters and buffers (a BatchNorm given itself returns its replacement)."""
        if isinstance(module, _BatchNorm) and not isinstance(module, (SyncBatchNorm,
                                                                      _LazyBatchNorm)):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group)
            if module.affine:
                with autograd.no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            return out
        for name, child in list(module.named_children()):
            module.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return module

