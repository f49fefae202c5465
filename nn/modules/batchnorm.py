"""BatchNorm1d/2d/3d, as PyTorch's: batch statistics in training (updating the running
ones), running statistics in eval, PyTorch's buffers, state_dict keys and repr."""
from __future__ import annotations

import numpy as np

from .. import functional as F
from ..tensor import Tensor, get_default_dtype, ones, zeros
from .module import (LazyModuleMixin, Module, Parameter, UninitializedBuffer,
                     UninitializedParameter, _UninitializedTensor)

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d"]


class _NormBase(Module):
    """Parameters and buffers shared by the batch and instance norms: ``weight`` (ones) and
    ``bias`` (zeros) when ``affine`` (and ``bias``); ``running_mean``, ``running_var`` and the int64
    ``num_batches_tracked`` when ``track_running_stats``."""
    _version = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        dtype = np.dtype(dtype or get_default_dtype()).name
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        self.register_parameter("weight", Parameter(np.empty((num_features,), dtype))
                                if affine else None)
        self.register_parameter("bias", Parameter(np.empty((num_features,), dtype))
                                if affine and bias else None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", Tensor(np.array(0, "int64")))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()
        if device is not None:
            self.to(device=device)

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            self.weight.detach().fill_(1)
            if self.bias is not None:
                self.bias.detach().zero_()

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:           # a cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        training = self.training or (self.running_mean is None and self.running_var is None)
        use_running = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_running else None,
                            self.running_var if use_running else None, self.weight,
                            self.bias, training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) or (N, C, L) inputs over C features."""

    def _check_input_dim(self, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalization of (N, C, H, W) inputs over C channels."""

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalization of (N, C, D, H, W) inputs over C channels."""

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class _LazyBatchNorm(LazyModuleMixin):
    """A batch norm whose ``num_features`` is the channel count (``shape[1]``) of its first
    input, as PyTorch's ``_LazyNormBase``: until then the parameters are
    ``UninitializedParameter``s and the running statistics ``UninitializedBuffer``s; then
    they are materialized and initialized as the batch norm's, and the module becomes that
    batch norm (``cls_to_become``); ``load_state_dict`` materializes them too."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None):
        # built without parameters or statistics (nothing drawn or filled), then made lazy
        self.cls_to_become.__init__(self, 0, eps, momentum, False, False, None, dtype)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            tracked = Tensor(np.array(0, "int64"))
            self.num_batches_tracked = tracked if device is None else tracked.to(device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        """Materialize the parameters and statistics still uninitialized for
        ``input.shape[1]`` features and give them the batch norm's initial values (those a
        ``load_state_dict`` gave keep theirs)."""
        self._check_input_dim(input)
        if self.num_features == 0:
            loaded = [t for t in (self.weight, self.running_mean)
                      if t is not None and not isinstance(t, _UninitializedTensor)]
            self.num_features = loaded[0].shape[0] if loaded else input.shape[1]
        for name, value in _INITIAL.items():
            tensor = getattr(self, name)
            if isinstance(tensor, _UninitializedTensor):
                tensor.materialize((self.num_features,))
                tensor.detach().fill_(value)


# the values a lazy batch norm's parameters and running statistics start from
_INITIAL = {"weight": 1, "bias": 0, "running_mean": 0, "running_var": 1}


class LazyBatchNorm1d(_LazyBatchNorm, BatchNorm1d):
    """BatchNorm1d with ``num_features`` from the first input."""
    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyBatchNorm, BatchNorm2d):
    """BatchNorm2d with ``num_features`` from the first input."""
    cls_to_become = BatchNorm2d
