"""spconv's pooling and container layers: ``SparseMaxPool2d/3d`` (the maximum over each
output's active input sites; an ``indice_key`` keeps its rulebook for an inverse
convolution), ``SparseGlobalMaxPool`` / ``SparseGlobalAvgPool`` ((B, C) over each batch
item's sites), ``SparseSequential`` (dense modules act on ``.features``) and ``ToDense``."""
from __future__ import annotations

import collections

import numpy as np

from ..device import is_gpu
from ..modules.module import Module
from ..tensor import Tensor
from . import functions as F
from .conv import SparseModule, expand
from .rulebook import _slot_table, build_rulebook
from .rulebook_gpu import build_rulebook_gpu
from .tensor import IndiceData, SparseConvTensor

__all__ = ["SparseMaxPool", "SparseMaxPool2d", "SparseMaxPool3d", "SparseGlobalMaxPool",
           "SparseGlobalAvgPool", "SparseSequential", "ToDense"]


class SparseMaxPool(SparseModule):
    """Max pooling over active sites; the output sites are a regular convolution's. (spconv
    2.3.8's CPU build starts its maxima from 0, so it gives 0 where all inputs are negative;
    here the maximum is taken over the active inputs only, as on a dense grid padded with
    -inf. After a ReLU both agree.) The gradient goes to every input equal to the maximum."""

    def __init__(self, ndim, kernel_size=3, stride=None, padding=0, dilation=1,
                 indice_key=None, algo=None, name=None):
        super().__init__()
        self.ndim = ndim
        self.kernel_size = expand(ndim, kernel_size)
        self.stride = list(self.kernel_size) if stride is None else expand(ndim, stride,
                                                                           "stride")
        self.padding = expand(ndim, padding, "padding")
        self.dilation = expand(ndim, dilation, "dilation")
        self.indice_key = indice_key

    def extra_repr(self):
        return f"kernel_size={tuple(self.kernel_size)}, stride={tuple(self.stride)}"

    def forward(self, x):
        if not isinstance(x, SparseConvTensor):
            raise TypeError(f"{type(self).__name__} expects a SparseConvTensor, got "
                            f"{type(x).__name__}")
        indice_dict = dict(x.indice_dict)
        if self.indice_key is not None and self.indice_key in indice_dict:
            raise ValueError(f"{type(self).__name__}: indice_key {self.indice_key!r} already "
                             "holds a rulebook; give the pooling its own key")
        build = build_rulebook_gpu if is_gpu(x.features._data) else build_rulebook
        book, out_shape = build(x.indices, x.batch_size, x.spatial_shape, self.kernel_size,
                                self.stride, self.padding, self.dilation)
        if self.indice_key is not None:
            indice_dict[self.indice_key] = IndiceData(
                book, x.indices, x.spatial_shape, out_shape, False, self.kernel_size,
                self.stride, self.padding, self.dilation, "pool")
        out = SparseConvTensor(F.sparse_maxpool(x.features, book), book.out_indices,
                               out_shape, x.batch_size, indice_dict=indice_dict)
        out._checked = True
        return out


class SparseMaxPool2d(SparseMaxPool):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, indice_key=None,
                 algo=None, name=None):
        super().__init__(2, kernel_size, stride, padding, dilation, indice_key)


class SparseMaxPool3d(SparseMaxPool):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, indice_key=None,
                 algo=None, name=None):
        super().__init__(3, kernel_size, stride, padding, dilation, indice_key)


class _GlobalPool(SparseModule):
    mean = False

    def forward(self, x):
        x.check()
        batch = x.indices[:, 0].astype(np.int32)
        slots = _slot_table(batch, x.batch_size)
        if self.mean:
            counts = np.maximum(np.bincount(batch, minlength=x.batch_size), 1)
            total = _segment_sum(x.features, slots, batch)
            return total / Tensor(counts.astype(x.features._data.dtype)[:, None])
        return F.sparse_maxpool(x.features, _BatchBook(batch, x.batch_size))


def _segment_sum(features, slots, batch):
    """(B, C) sums of the features of each batch item (differentiable)."""
    from ..functions.base import Op

    class _Sum(Op):
        @staticmethod
        def forward(ctx, f):
            data = f._data
            if data.shape[0] == 0:
                return Tensor(np.zeros((slots.shape[0], data.shape[1]), data.dtype))
            return Tensor(F._run(F.ops.segment_sum, [data, slots], [("P", data.shape[1]),
                                                                   ("M", slots.shape[1])],
                                 (slots.shape[0], data.shape[1])))

        @staticmethod
        def backward(ctx, g):
            return F.gather_rows(g, batch, lambda: slots)
    return _Sum.apply(features)


class _BatchBook:
    """A pooling rulebook with one output per batch item (global max pooling)."""

    def __init__(self, batch, batch_size):
        self.pair_in = np.arange(batch.size, dtype=np.int32)
        self.pair_out = batch
        self.n_in, self.n_out, self.num_pairs = batch.size, batch_size, batch.size
        self.slots_out = _slot_table(batch, batch_size)
        self.slots_in = np.arange(batch.size, dtype=np.int32)[:, None]


class SparseGlobalMaxPool(_GlobalPool):
    """(B, C): the maximum of each batch item's features (0 for an item without sites)."""


class SparseGlobalAvgPool(_GlobalPool):
    """(B, C): the mean of each batch item's features (0 for an item without sites)."""
    mean = True


class SparseSequential(Module):
    """Modules in order; sparse modules get the ``SparseConvTensor``, others its features."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], collections.OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)
        for name, module in kwargs.items():
            self.add_module(name, module)

    def __getitem__(self, idx):
        return list(self._modules.values())[idx]

    def __len__(self):
        return len(self._modules)

    def add(self, module, name=None):
        self.add_module(str(len(self._modules)) if name is None else name, module)

    def forward(self, input):
        for module in self._modules.values():
            if isinstance(module, (SparseModule, SparseSequential)):
                input = module(input)
            elif isinstance(input, SparseConvTensor):
                if input.indices.shape[0] != 0:
                    input = input.replace_feature(module(input.features))
            else:
                input = module(input)
        return input


class ToDense(SparseModule):
    """``x.dense()``: (B, C, *spatial)."""

    def forward(self, x):
        return x.dense()
