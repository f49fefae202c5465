"""spconv 2.x's convolution layers: ``SubMConv2d/3d``, ``SparseConv2d/3d``,
``SparseInverseConv2d/3d``, ``SparseConvTranspose2d/3d``. Weights have spconv's layout
(out_channels, *kernel_size, in_channels) and names (``weight``, ``bias``), so state dicts
port both ways.

A layer with an ``indice_key`` keeps its rulebook in the output's ``indice_dict``: a later
submanifold layer with the same key (and the same sites) reuses it, and an inverse
convolution with the key of a regular one runs that rulebook reversed, back onto the regular
layer's input sites.
"""
from __future__ import annotations

import math

import numpy as np

from .. import init
from ..device import is_gpu
from ..modules.module import Module, Parameter
from ..tensor import empty
from . import functions as F
from .rulebook import build_rulebook
from .rulebook_gpu import build_rulebook_gpu
from .tensor import IndiceData, SparseConvTensor

__all__ = ["SparseModule", "SparseConvolution", "SubMConv2d", "SubMConv3d", "SparseConv2d",
           "SparseConv3d", "SparseInverseConv2d", "SparseInverseConv3d",
           "SparseConvTranspose2d", "SparseConvTranspose3d"]


class SparseModule(Module):
    """A module that takes and returns ``SparseConvTensor`` (``SparseSequential`` passes dense
    modules the features only)."""


def expand(ndim, value, what="kernel_size"):
    if isinstance(value, (int, np.integer)):
        return [int(value)] * ndim
    values = [int(v) for v in value]
    if len(values) != ndim:
        raise ValueError(f"{what} must be an int or {ndim} ints, got {value}")
    return values


class SparseConvolution(SparseModule):
    """A sparse convolution of ``ndim`` spatial dimensions (spconv's arguments)."""

    def __init__(self, ndim, in_channels, out_channels, kernel_size=3, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, subm=False, output_padding=0,
                 transposed=False, inverse=False, indice_key=None, algo=None,
                 fp32_accum=None, name=None, device=None, dtype=None):
        super().__init__()
        if groups != 1:
            raise ValueError("spconv convolutions support groups=1 only")
        self.ndim, self.in_channels, self.out_channels = ndim, int(in_channels), int(out_channels)
        self.kernel_size = expand(ndim, kernel_size)
        self.stride = expand(ndim, stride, "stride")
        self.padding = expand(ndim, padding, "padding")
        self.dilation = expand(ndim, dilation, "dilation")
        self.output_padding = expand(ndim, output_padding, "output_padding")
        if min(self.kernel_size + self.stride + self.dilation) < 1 or min(self.padding) < 0:
            raise ValueError("kernel_size, stride and dilation must be positive and padding "
                             "non-negative")
        if subm and any(k % 2 == 0 for k in self.kernel_size):
            raise ValueError(f"submanifold convolutions need odd kernel sizes, got "
                             f"{self.kernel_size}")
        if inverse and indice_key is None:
            raise ValueError("an inverse convolution needs the indice_key of the convolution "
                             "it inverts")
        self.subm, self.transposed, self.inverse = subm, transposed, inverse
        self.indice_key, self.groups = indice_key, 1
        shape = (self.out_channels, *self.kernel_size, self.in_channels)
        self.weight = Parameter(empty(*shape, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(self.out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """spconv's initialization: kaiming-uniform (a = sqrt(5)) with fan_in = in_channels
        times the kernel volume."""
        fan_in = self.in_channels * math.prod(self.kernel_size)
        gain = math.sqrt(2.0 / (1 + 5))
        bound = gain * math.sqrt(3.0 / fan_in)
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={tuple(self.kernel_size)}"
             f", stride={tuple(self.stride)}")
        if any(self.padding):
            s += f", padding={tuple(self.padding)}"
        if any(d != 1 for d in self.dilation):
            s += f", dilation={tuple(self.dilation)}"
        if self.indice_key is not None:
            s += f", indice_key={self.indice_key!r}"
        return s + ("" if self.bias is not None else ", bias=False")

    def _rulebook(self, x):
        """(rulebook, out indices, out spatial shape, indice_dict of the output)."""
        kind = "subm" if self.subm else "inverse" if self.inverse else \
            "transposed" if self.transposed else "conv"
        indice_dict = dict(x.indice_dict)
        datas = x.find_indice_pair(self.indice_key)
        if self.inverse:
            if datas is None:
                raise ValueError(f"inverse convolution: indice_key {self.indice_key!r} is not "
                                 f"in the input's indice_dict (keys: {sorted(indice_dict)}); "
                                 "it must name an earlier regular convolution of this network")
            if datas.is_subm:
                raise ValueError(f"inverse convolution: indice_key {self.indice_key!r} names a "
                                 "submanifold convolution; inverse convolutions invert regular "
                                 "convolutions and poolings")
            if datas.ksize != self.kernel_size:
                raise ValueError(f"inverse convolution with indice_key {self.indice_key!r} "
                                 f"must have its convolution's kernel_size {datas.ksize}, got "
                                 f"{self.kernel_size}")
            if x.spatial_shape != datas.out_spatial_shape or \
                    x.indices.shape[0] != datas.book.n_out:
                raise ValueError(f"inverse convolution with indice_key {self.indice_key!r}: "
                                 f"the input (spatial shape {x.spatial_shape}, "
                                 f"{x.indices.shape[0]} sites) is not the output of that "
                                 f"convolution (spatial shape {datas.out_spatial_shape}, "
                                 f"{datas.book.n_out} sites)")
            return datas.book.reversed(), datas.indices, datas.spatial_shape, indice_dict
        if datas is not None:
            if not (self.subm and datas.is_subm):
                raise ValueError(f"indice_key {self.indice_key!r} already holds the rulebook "
                                 f"of a {datas.kind} layer; only submanifold convolutions "
                                 "share a key (give this layer its own indice_key)")
            if datas.ksize != self.kernel_size or datas.dilation != self.dilation:
                raise ValueError(f"submanifold convolutions with indice_key "
                                 f"{self.indice_key!r} must have the same kernel_size and "
                                 f"dilation: the key has {datas.ksize} / {datas.dilation}, this "
                                 f"layer {self.kernel_size} / {self.dilation}")
            if x.spatial_shape != datas.spatial_shape or \
                    x.indices.shape[0] != datas.indices.shape[0]:
                raise ValueError(f"submanifold convolutions with indice_key "
                                 f"{self.indice_key!r} must see the same sites: the key has "
                                 f"{datas.indices.shape[0]} sites in {datas.spatial_shape}, "
                                 f"the input {x.indices.shape[0]} in {x.spatial_shape}")
            return datas.book, datas.out_indices, datas.spatial_shape, indice_dict
        # cuda features: the rulebook is built on the device, its tables stay there
        build = build_rulebook_gpu if is_gpu(x.features._data) else build_rulebook
        book, out_shape = build(x.indices, x.batch_size, x.spatial_shape, self.kernel_size,
                                self.stride, self.padding, self.dilation, subm=self.subm,
                                transposed=self.transposed,
                                output_padding=self.output_padding)
        x._checked = True
        if self.indice_key is not None:
            indice_dict[self.indice_key] = IndiceData(
                book, x.indices, x.spatial_shape, out_shape, self.subm, self.kernel_size,
                self.stride, self.padding, self.dilation, kind)
        return book, book.out_indices, out_shape, indice_dict

    def forward(self, x):
        if not isinstance(x, SparseConvTensor):
            raise TypeError(f"{type(self).__name__} expects a SparseConvTensor, got "
                            f"{type(x).__name__}")
        if x.features.shape[1] != self.in_channels:
            raise ValueError(f"{type(self).__name__}: the input has {x.features.shape[1]} "
                             f"feature channels, the layer expects in_channels="
                             f"{self.in_channels}")
        if len(x.spatial_shape) != self.ndim:
            raise ValueError(f"{type(self).__name__}: expected {self.ndim} spatial "
                             f"dimensions, got the spatial shape {x.spatial_shape}")
        if x.features.dtype != self.weight.dtype:
            raise TypeError(f"{type(self).__name__}: features are {x.features.dtype}, the "
                            f"weight {self.weight.dtype}")
        book, out_indices, out_shape, indice_dict = self._rulebook(x)
        features = F.sparse_conv(x.features, self.weight, self.bias, book)
        out = SparseConvTensor(features, out_indices, out_shape, x.batch_size,
                               indice_dict=indice_dict, benchmark=x.benchmark)
        out._checked = True
        return out


def _layer(name, ndim, doc, **fixed):
    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, indice_key=None, algo=None, fp32_accum=None,
                 output_padding=0, name=None, device=None, dtype=None):
        SparseConvolution.__init__(self, ndim, in_channels, out_channels, kernel_size, stride,
                                   padding, dilation, groups, bias,
                                   output_padding=output_padding, indice_key=indice_key,
                                   algo=algo, fp32_accum=fp32_accum, dtype=dtype, **fixed)
    return type(name, (SparseConvolution,), {"__init__": __init__, "__doc__": doc})


def _inverse(name, ndim):
    def __init__(self, in_channels, out_channels, kernel_size, indice_key, dilation=1,
                 bias=True, algo=None, fp32_accum=None, name=None, device=None, dtype=None):
        SparseConvolution.__init__(self, ndim, in_channels, out_channels, kernel_size,
                                   dilation=dilation, bias=bias, inverse=True,
                                   indice_key=indice_key, dtype=dtype)
    return type(name, (SparseConvolution,), {
        "__init__": __init__,
        "__doc__": f"The inverse of the {ndim}-d regular convolution named by indice_key: "
                   "its rulebook reversed, back onto that convolution's input sites."})


SubMConv2d = _layer("SubMConv2d", 2, "Submanifold 2-d convolution: the outputs are the "
                    "input sites.", subm=True)
SubMConv3d = _layer("SubMConv3d", 3, "Submanifold 3-d convolution: the outputs are the "
                    "input sites.", subm=True)
SparseConv2d = _layer("SparseConv2d", 2, "Regular sparse 2-d convolution: every output site "
                      "that an active input reaches.")
SparseConv3d = _layer("SparseConv3d", 3, "Regular sparse 3-d convolution: every output site "
                      "that an active input reaches.")
SparseConvTranspose2d = _layer("SparseConvTranspose2d", 2, "Sparse transposed 2-d "
                               "convolution.", transposed=True)
SparseConvTranspose3d = _layer("SparseConvTranspose3d", 3, "Sparse transposed 3-d "
                               "convolution.", transposed=True)
SparseInverseConv2d = _inverse("SparseInverseConv2d", 2)
SparseInverseConv3d = _inverse("SparseInverseConv3d", 3)
for _cls in (SubMConv2d, SubMConv3d, SparseConv2d, SparseConv3d, SparseConvTranspose2d,
             SparseConvTranspose3d, SparseInverseConv2d, SparseInverseConv3d):
    _cls.__module__ = __name__
