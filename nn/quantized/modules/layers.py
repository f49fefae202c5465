"""``Quantize``, ``DeQuantize``, ``ReLU``, ``ReLU6``, ``MaxPool2d``, ``AdaptiveAvgPool2d``,
``BatchNorm2d`` and ``Embedding`` of ``nn.quantized`` (PyTorch's ``torch.ao.nn.quantized``
names and state-dict keys); each forward is one te kernel on the integers."""
from __future__ import annotations

import numpy as np

from ...modules.module import Module
from ...tensor import Tensor
from .. import functional_layers as qfl
from ..dtypes import as_qdtype, quint8
from ..qtensor import QTensor, check_scale, check_zero_point, quantize_per_tensor
from .utils import QuantizedModule, output_qparams

__all__ = ["Quantize", "DeQuantize", "ReLU", "ReLU6", "MaxPool2d", "AdaptiveAvgPool2d",
           "BatchNorm2d", "Embedding"]


class Quantize(Module):
    """Float32 in, quantized out with ``(scale, zero_point, dtype)``; ``scale`` and
    ``zero_point`` are buffers of one value each, as PyTorch's."""

    def __init__(self, scale, zero_point, dtype, factory_kwargs=None):
        super().__init__()
        self.dtype = as_qdtype(dtype, "Quantize")
        scale = check_scale(scale, "Quantize")
        zero_point = check_zero_point(zero_point, self.dtype, "Quantize")
        self.register_buffer("scale", Tensor(np.array([scale], "float32")))
        self.register_buffer("zero_point", Tensor(np.array([zero_point], "int64")))

    def forward(self, X):
        return quantize_per_tensor(X, float(self.scale._data[0]),
                                   int(self.zero_point._data[0]), self.dtype)

    def extra_repr(self):
        return (f"scale={self.scale._data.tolist()}, zero_point="
                f"{self.zero_point._data.tolist()}, dtype={self.dtype!r}")

    def _get_name(self):
        return "Quantize"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zp = output_qparams(mod, "Quantize")
        dtype = getattr(mod.activation_post_process, "dtype", quint8)
        return cls(scale, zp, dtype)


class DeQuantize(Module):
    """Quantized in, float32 out."""

    def forward(self, Xq):
        return Xq.dequantize()

    def _get_name(self):
        return "DeQuantize"

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        return DeQuantize()


class ReLU(Module):
    """ReLU of a quantized tensor: ``max(q, zero_point)``, the parameters kept."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return qfl.relu(input)

    def _get_name(self):
        return "QuantizedReLU"

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        return ReLU(getattr(mod, "inplace", False))


class ReLU6(ReLU):
    """``min(max(q, zp), zp + rint(6 / scale))``, the parameters kept."""

    def forward(self, input):
        return qfl.relu6(input)

    def _get_name(self):
        return "QuantizedReLU6"

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        return ReLU6(getattr(mod, "inplace", False))


class MaxPool2d(Module):
    """Max pooling of a quantized tensor (integers compared; the parameters kept)."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.return_indices = dilation, return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input):
        return qfl.max_pool2d(input, self.kernel_size, self.stride, self.padding,
                              self.dilation, self.ceil_mode, self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding="
                f"{self.padding}, dilation={self.dilation}, ceil_mode={self.ceil_mode}")

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return cls(mod.kernel_size, mod.stride, mod.padding, mod.dilation,
                   getattr(mod, "return_indices", False), mod.ceil_mode)


class AdaptiveAvgPool2d(Module):
    """Adaptive average pooling of a quantized tensor (the parameters kept)."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return qfl.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return cls(mod.output_size)


class BatchNorm2d(QuantizedModule):
    """Quantized BatchNorm2d (inference: running statistics), output ``(scale,
    zero_point)``; state dict keys as PyTorch's (weight, bias, running_mean, running_var,
    num_batches_tracked, scale, zero_point)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, device=None, dtype=None):
        super().__init__()
        c = int(num_features)
        self.num_features, self.eps, self.momentum = c, float(eps), momentum
        self.register_buffer("weight", Tensor(np.ones(c, "float32")))
        self.register_buffer("bias", Tensor(np.zeros(c, "float32")))
        self.register_buffer("running_mean", Tensor(np.zeros(c, "float32")))
        self.register_buffer("running_var", Tensor(np.ones(c, "float32")))
        self.register_buffer("num_batches_tracked", Tensor(np.array(0, "int64")))
        self.scale, self.zero_point = 1.0, 0

    def _get_name(self):
        return "QuantizedBatchNorm2d"

    def forward(self, input):
        if isinstance(input, QTensor) and input.ndim != 4:
            raise ValueError(f"Input shape must be `(N, C, H, W)`!, got {tuple(input.shape)}")
        return qfl.batch_norm(input, self.running_mean, self.running_var, self.weight,
                              self.bias, self.eps, self.scale, self.zero_point)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zp = output_qparams(mod, "BatchNorm2d")
        new = cls(mod.num_features, mod.eps)
        for name in ("running_mean", "running_var"):
            setattr(new, name, getattr(mod, name).detach().clone())
        if getattr(mod, "weight", None) is not None:
            new.weight = mod.weight.detach().clone()
            new.bias = mod.bias.detach().clone()
        new.scale, new.zero_point = scale, zp
        return new


class Embedding(Module):
    """A lookup table of quantized rows (quint8, one scale and zero point per row); the
    output is float32, ``q * scale + bias`` with ``bias = -zero_point * scale`` (PyTorch's
    byte-rowwise embedding). ``weight()`` gives the per-channel quantized table."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 dtype=quint8):
        super().__init__()
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        self.padding_idx = padding_idx
        if _weight is None:
            from ..qtensor import quantize_per_channel
            rows = self.num_embeddings
            _weight = quantize_per_channel(Tensor(np.zeros((rows, self.embedding_dim),
                                                           "float32")),
                                           Tensor(np.ones(rows)), Tensor(np.zeros(rows, "int64")),
                                           0, quint8)
        self.set_weight(_weight)

    def _get_name(self):
        return "QuantizedEmbedding"

    def extra_repr(self):
        return (f"num_embeddings={self.num_embeddings}, embedding_dim={self.embedding_dim}, "
                f"dtype={self._weight.dtype!r}, qscheme={self._weight.qscheme()!r}")

    def set_weight(self, w: QTensor):
        """The quint8 table, quantized per row (axis 0)."""
        if not isinstance(w, QTensor) or w.dtype != quint8 or \
                w.qscheme().name != "per_channel_affine" or w.q_per_channel_axis() != 0:
            raise RuntimeError("Embedding.set_weight: the weight must be a quint8 tensor "
                               "quantized per row (per channel, axis 0)")
        if tuple(w.shape) != (self.num_embeddings, self.embedding_dim):
            raise RuntimeError(f"Embedding.set_weight: expected shape "
                               f"({self.num_embeddings}, {self.embedding_dim}), got "
                               f"{tuple(w.shape)}")
        self._weight = w
        scale = w._scales.astype("float32")
        self._sb = np.stack([scale, (-w._zero_points.astype("float32")) * scale])

    def weight(self):
        return self._weight

    def forward(self, indices):
        from nn.ops import quantized_misc as misc

        from ...functions import base
        idx = indices._data if isinstance(indices, Tensor) else np.asarray(indices)
        if idx.dtype.kind not in "iu":
            raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                               f"following scalar types: Long, Int; but got {idx.dtype}")
        if idx.size and (idx.min() < 0 or idx.max() >= self.num_embeddings):
            raise IndexError("index out of range in self")
        idx = idx.astype("int64")
        return base._kernel(misc.qembedding, idx, self._weight._int._data, self._sb,
                            out_shape=idx.shape + (self.embedding_dim,))

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        destination = super().state_dict(destination, prefix, keep_vars)
        destination[prefix + "_packed_params.dtype"] = "quint8"
        destination[prefix + "_packed_params._packed_weight"] = self._weight
        return destination

    def _load_from_state_dict(self, state_dict, prefix, strict, missing_keys, unexpected_keys,
                              error_msgs, assign=False):
        key = prefix + "_packed_params._packed_weight"
        if key not in state_dict:
            missing_keys.append(key)
            return
        self.set_weight(state_dict[key])

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """Rows quantized with ``mod.qconfig.weight()`` (a per-row observer)."""
        from .utils import quantize_weight
        observer = mod.qconfig.weight()
        observer(mod.weight)
        w = quantize_weight(mod.weight, observer)
        if w.qscheme().name != "per_channel_affine":
            raise RuntimeError("Embedding.from_float: the weight observer must be per "
                               "channel (axis 0), e.g. PerChannelMinMaxObserver")
        return cls(mod.num_embeddings, mod.embedding_dim, mod.padding_idx, _weight=w)
