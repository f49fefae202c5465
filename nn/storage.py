"""Tensor internals as PyTorch shows them: a tensor is a view (shape, strides in elements, an
offset) of a storage, a flat buffer that its views share. Here the storage of a CPU tensor is
the root numpy array its ``_data`` views (numpy's ``.base`` chain); of a GPU view (a copy that
remembers its place, see ``Tensor._view_of``), the GPU tensor it views.

``Tensor.untyped_storage()`` (the bytes), ``storage()`` (typed elements), ``storage_offset()``,
``data_ptr()``, ``element_size()``, ``nbytes``, ``itemsize``, ``as_strided`` and
``nn.empty_strided`` are defined here and attached to ``nn.Tensor``.
"""
from __future__ import annotations

import builtins
import importlib

import numpy as np

from .autograd import Function
from .tensor import Tensor, empty, tensor, zeros

devices = importlib.import_module("nn.device")   # the module (nn.device is the class)

__all__ = ["UntypedStorage", "TypedStorage", "as_strided", "empty_strided"]


def _root(array):
    """The array that owns the memory ``array`` views (itself when it owns it)."""
    while isinstance(getattr(array, "base", None), np.ndarray):
        array = array.base
    return array


def _address(array) -> int:
    if devices.is_gpu(array):
        return int(array.__cuda_array_interface__["data"][0])
    return int(array.__array_interface__["data"][0])


def _storage_of(t: Tensor):
    """``(root array, byte offset of t's first element in it)``."""
    if t.is_cuda and t._view_of is not None:
        parent, offset, _ = t._view_of
        root, base_offset = _storage_of(parent)
        return root, base_offset + offset
    if t.is_cuda:
        return t._data, 0
    root = _root(t._data)
    return root, _address(t._data) - _address(root)


class UntypedStorage:
    """A tensor's storage as bytes (``torch.UntypedStorage``): ``nbytes()``, ``data_ptr()``,
    indexing gives a byte; views of one tensor share one storage (equal ``data_ptr()``)."""

    def __init__(self, root):
        self._root = root

    @property
    def device(self):
        return devices.of(self._root)

    def nbytes(self) -> int:
        return int(self._root.nbytes)

    size = nbytes
    __len__ = nbytes

    def element_size(self) -> int:
        return 1

    def data_ptr(self) -> int:
        return _address(self._root)

    def _bytes(self) -> np.ndarray:
        host = devices.host(self._root)
        return np.ascontiguousarray(host).reshape(-1).view(np.uint8)

    def __getitem__(self, index):
        return self._bytes()[index].tolist()

    def tolist(self):
        return self._bytes().tolist()

    def cpu(self):
        return self if not devices.is_gpu(self._root) else UntypedStorage(self._bytes().copy())

    def __eq__(self, other):      # the same memory (PyTorch compares storages by identity)
        return isinstance(other, UntypedStorage) and other.data_ptr() == self.data_ptr() \
            and other.nbytes() == self.nbytes()

    __hash__ = object.__hash__

    def __repr__(self):
        values = "\n".join(f" {v}" for v in self.tolist()[:20])
        more = "\n ..." if self.nbytes() > 20 else ""
        return (f"{values}{more}\n[nn.storage.UntypedStorage(device={self.device}) of size "
                f"{self.nbytes()}]")


class TypedStorage:
    """A tensor's storage as elements of its dtype (``Tensor.storage()``)."""

    def __init__(self, root, dtype):
        self._untyped = UntypedStorage(root)
        self.dtype = dtype

    @property
    def device(self):
        return self._untyped.device

    def element_size(self) -> int:
        return np.dtype(str(self.dtype)).itemsize

    def size(self) -> int:
        return self._untyped.nbytes() // self.element_size()

    __len__ = size

    def nbytes(self) -> int:
        return self._untyped.nbytes()

    def data_ptr(self) -> int:
        return self._untyped.data_ptr()

    def untyped(self) -> UntypedStorage:
        return self._untyped

    def _values(self):
        raw = self._untyped._bytes()
        return raw[:self.size() * self.element_size()].view(np.dtype(str(self.dtype)))

    def __getitem__(self, index):
        return self._values()[index].tolist()

    def tolist(self):
        return self._values().tolist()

    def __repr__(self):
        values = "\n".join(f" {v}" for v in self.tolist()[:20])
        return (f"{values}\n[nn.storage.TypedStorage(dtype={self.dtype}, device={self.device}) "
                f"of size {self.size()}]")


def _untyped_storage(self) -> UntypedStorage:
    return UntypedStorage(_storage_of(self)[0])


def _typed_storage(self) -> TypedStorage:
    return TypedStorage(_storage_of(self)[0], self.dtype)


def _storage_offset(self) -> int:
    """Where the first element lies in the storage, in elements."""
    return _storage_of(self)[1] // self.element_size()


def _data_ptr(self) -> int:
    """The address of the first element."""
    root, offset = _storage_of(self)
    return _address(root) + offset


def _element_size(self) -> int:
    return int(np.dtype(str(self.dtype)).itemsize)


class AsStrided(Function):
    """A view of ``x``'s storage with the given sizes, strides (elements) and offset. Its
    gradient adds each view element's gradient at its storage position, then reads the
    positions ``x``'s own elements occupy (PyTorch's rule for non-overlapping inputs)."""

    @staticmethod
    def forward(ctx, x, size, stride, offset):
        root, _ = _storage_of(x)
        item = x.element_size()
        span = 1 + builtins.sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
        if offset + span > root.nbytes // item:
            raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, "
                               f"storage offset {offset} require {offset + span} elements, "
                               f"but the storage has {root.nbytes // item}")
        if x.is_cuda:
            raise NotImplementedError("as_strided of a GPU tensor: move it to the CPU first")
        view = np.ndarray(tuple(size), x._data.dtype, buffer=root, offset=offset * item,
                          strides=tuple(s * item for s in stride))
        ctx.meta = (tuple(size), tuple(stride), offset, x.shape, x.stride(),
                    x.storage_offset(), root.nbytes // item)
        return Tensor(view)

    @staticmethod
    def backward(ctx, g):
        size, stride, offset, in_shape, in_stride, in_offset, n = ctx.meta
        where = tensor(_positions(size, stride, offset).reshape(-1))
        flat = zeros(n, dtype=g.dtype).index_add(0, where, g.reshape(-1))
        return flat[tensor(_positions(in_shape, in_stride, in_offset))], None, None, None


def _positions(size, stride, offset) -> np.ndarray:
    """The storage position of each element of a ``size`` / ``stride`` / ``offset`` view."""
    where = np.full(size, offset, np.int64)
    for d, (k, s) in enumerate(zip(size, stride)):
        where += (np.arange(k, dtype=np.int64) * s).reshape((-1,) + (1,) * (len(size) - 1 - d))
    return where


def as_strided(input, size, stride, storage_offset=None) -> Tensor:
    """A view of ``input``'s storage: ``size``, ``stride`` (in elements), ``storage_offset``
    (``input.storage_offset()`` when None), as ``torch.as_strided``."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: size {list(size)}, "
                           f"stride {list(stride)}")
    if any(s < 0 for s in stride) or any(n < 0 for n in size):
        raise RuntimeError(f"as_strided: negative sizes or strides are not supported, got "
                           f"size {list(size)}, stride {list(stride)}")
    offset = input.storage_offset() if storage_offset is None else int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"as_strided: storage_offset must be >= 0, got {offset}")
    return AsStrided.apply(input, size, stride, offset)


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialized tensor with the given sizes and strides (elements), on a storage just
    large enough, as ``torch.empty_strided``."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: size {list(size)}, "
                           f"stride {list(stride)}")
    span = 1 + builtins.sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    if device is not None and str(device).startswith("cuda"):
        raise NotImplementedError("empty_strided on the GPU: nn's GPU storage is C-contiguous")
    out = as_strided(empty(span, dtype=dtype), size, stride, 0)
    return out.requires_grad_(True) if requires_grad else out


Tensor.untyped_storage = _untyped_storage
Tensor.storage = _typed_storage
Tensor.storage_offset = _storage_offset
Tensor.data_ptr = _data_ptr
Tensor.element_size = _element_size
Tensor.nbytes = property(lambda self: self.numel() * self.element_size())
Tensor.itemsize = property(_element_size)
Tensor.as_strided = as_strided
