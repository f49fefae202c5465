"""``SparseConvTensor``, spconv 2.x's sparse tensor: features (N, C) of the active sites,
their indices (N, 1 + ndim) int32 (batch, then spatial coordinates), the spatial shape, the
batch size, and ``indice_dict``, the rulebooks of the layers that named an ``indice_key``
(shared by the tensors that a network derives from it, so later layers reuse them)."""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from . import functions as F
from .rulebook import _keys, check_indices

__all__ = ["SparseConvTensor", "IndiceData"]


class IndiceData:
    """A rulebook kept under an ``indice_key``, with what it was built for."""

    def __init__(self, book, indices, spatial_shape, out_spatial_shape, is_subm, ksize,
                 stride, padding, dilation, kind="conv"):
        self.book, self.indices = book, indices
        self.out_indices = book.out_indices
        self.spatial_shape, self.out_spatial_shape = list(spatial_shape), list(out_spatial_shape)
        self.is_subm, self.kind = is_subm, kind
        self.ksize, self.stride = list(ksize), list(stride)
        self.padding, self.dilation = list(padding), list(dilation)


def _as_indices(indices):
    data = indices._data if isinstance(indices, Tensor) else indices
    if hasattr(data, "numpy") and not isinstance(data, np.ndarray):    # a torch tensor
        data = data.detach().cpu().numpy()
    return np.asarray(data)


class SparseConvTensor:
    """Active sites and their features; ``dense()`` is the (B, C, *spatial) tensor."""

    def __init__(self, features, indices, spatial_shape, batch_size, grid=None,
                 voxel_num=None, indice_dict=None, benchmark=False):
        if not isinstance(features, Tensor):
            raise TypeError(f"features must be an nn.Tensor, got {type(features).__name__}")
        idx = _as_indices(indices)
        shape = [int(n) for n in spatial_shape]
        if features.ndim != 2:
            raise ValueError(f"features must have shape (N, C), got {tuple(features.shape)}")
        if idx.ndim != 2 or idx.shape[1] != len(shape) + 1:
            raise ValueError(f"indices must have shape (N, {len(shape) + 1}) for a spatial "
                             f"shape of {len(shape)} dimensions {shape}, got {idx.shape}")
        if idx.dtype.kind not in "iu":
            raise ValueError(f"indices must be int32, got {idx.dtype}")
        if idx.shape[0] != features.shape[0]:
            raise ValueError(f"features have {features.shape[0]} rows but indices "
                             f"{idx.shape[0]}; each active site needs one row of each")
        if int(batch_size) <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self._features = features
        self.indices = np.ascontiguousarray(idx, dtype=np.int32)
        self.spatial_shape = shape
        self.batch_size = int(batch_size)
        self.indice_dict = {} if indice_dict is None else indice_dict
        self.benchmark = benchmark
        self._checked = False

    def __repr__(self):
        return (f"SparseConvTensor[shape={tuple(self._features.shape)}, spatial_shape="
                f"{self.spatial_shape}, batch_size={self.batch_size}]")

    @property
    def features(self):
        return self._features

    @features.setter
    def features(self, value):
        raise ValueError("you can't set features directly; use x = x.replace_feature(f)")

    @property
    def spatial_size(self):
        return int(np.prod(self.spatial_shape))

    def check(self):
        """Raise ValueError for indices outside the shape or batch, or repeated sites."""
        if not self._checked:
            check_indices(self.indices, self.spatial_shape, self.batch_size)
            self._checked = True

    def replace_feature(self, feature):
        """The same sites (and rulebooks) with new features (as many rows)."""
        if feature.ndim != 2 or feature.shape[0] != self.indices.shape[0]:
            raise ValueError(f"replace_feature: expected ({self.indices.shape[0]}, C) "
                             f"features, got {tuple(feature.shape)}")
        new = SparseConvTensor.__new__(SparseConvTensor)
        new.__dict__.update(self.__dict__)
        new._features = feature
        return new

    def shadow_copy(self):
        return self.replace_feature(self._features)

    def find_indice_pair(self, key):
        return None if key is None else self.indice_dict.get(key)

    @classmethod
    def from_dense(cls, x):
        """The sites of a channels-last dense (B, *spatial, C) tensor where some channel is
        not zero."""
        from ..device import host
        nz = np.any(host(x._data) != 0, axis=-1)
        sites = np.argwhere(nz).astype(np.int32)
        flat = x.reshape(-1, x.shape[-1])
        rows = np.flatnonzero(nz.reshape(-1)).astype(np.int32)
        from .rulebook import _slot_table
        feats = F.gather_rows(flat, rows, lambda: _slot_table(rows, flat.shape[0]))
        return cls(feats, sites, x.shape[1:-1], x.shape[0])

    def dense(self, channels_first=True):
        """(B, C, *spatial) with the features at the sites, zeros elsewhere (channels last:
        (B, *spatial, C))."""
        self.check()
        idx = self.indices.astype(np.int64)
        cells = _keys(idx[:, 1:], idx[:, 0], self.spatial_shape)
        return F.to_dense(self._features, cells, idx.shape[0], self.batch_size,
                          self.spatial_shape, channels_first)
