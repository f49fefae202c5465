"""Collation: turning a list of samples into a batch, as torch.utils.data's ``default_collate``.

Tensors are stacked along a new first dimension; numpy arrays become tensors and are stacked;
Python floats give float64 tensors, ints int64 and bools bool (PyTorch's dtypes); numpy scalars
a tensor of their dtype; strings and bytes stay a list; dicts, namedtuples, lists and tuples are
collated field by field (a batch of tuples gives a list, as in PyTorch). Host tensors that do not
require grad are stacked with numpy: data preparation is not the compiled hot path, and this
spares a kernel build per batch shape in every worker. Tensors on the GPU or requiring grad go
through ``nn.stack``, which keeps the device and the graph.
"""
from __future__ import annotations

import collections.abc
import copy

import numpy as np

from ..functions import stack
from ..tensor import Tensor, from_numpy

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map"]

_ERROR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
          "found {}")


def _is_text_array(array) -> bool:
    """Whether a numpy array holds strings, bytes or objects, which make no tensor."""
    return array.dtype.kind in "SaUO"


def collate_tensor_fn(batch, *, collate_fn_map=None):
    """Tensors stacked along a new first dimension."""
    if any(t.requires_grad or t.is_cuda for t in batch):
        return stack(batch, 0)
    first = batch[0].shape
    for k, t in enumerate(batch):
        if t.shape != first:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(first)} at entry 0 and {list(t.shape)} at entry {k}")
    return from_numpy(np.stack([t.numpy() for t in batch]))


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    if _is_text_array(batch[0]):
        raise TypeError(_ERROR.format(batch[0].dtype))
    return collate([from_numpy(np.asarray(b)) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return from_numpy(np.array(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    return from_numpy(np.array(batch, dtype=np.float64))


def collate_int_fn(batch, *, collate_fn_map=None):
    array = np.array(batch)
    return from_numpy(array if array.dtype == np.bool_ else array.astype(np.int64))


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def _rebuild(template, values):
    """A container like ``template`` (a mapping or a sequence) holding ``values``, or a plain
    dict/list when its type cannot be built that way."""
    try:
        if isinstance(template, collections.abc.MutableMapping):
            clone = copy.copy(template)
            clone.update(values)
            return clone
        if isinstance(template, collections.abc.Mapping):
            return type(template)(values)
        if isinstance(template, collections.abc.MutableSequence):
            clone = copy.copy(template)
            clone[:] = values
            return clone
        return type(template)(values)
    except TypeError:
        return dict(values) if isinstance(template, collections.abc.Mapping) else list(values)


def _check_keys(batch):
    """Every mapping in ``batch`` must have the keys of the first (PyTorch's KeyError names
    only the key; this names the samples)."""
    keys = set(batch[0])
    for k, sample in enumerate(batch):
        if not isinstance(sample, collections.abc.Mapping) or set(sample) != keys:
            found = f"keys {list(sample)}" if isinstance(sample, collections.abc.Mapping) \
                else f"a {type(sample).__name__}"
            raise RuntimeError("each dict in the batch should have the same keys (sample 0 has "
                               f"keys {list(batch[0])}, sample {k} has {found})")


def collate(batch, *, collate_fn_map=None):
    """Collate ``batch`` (a list of samples of one structure), looking up each leaf's type in
    ``collate_fn_map`` (exact type first, then ``isinstance`` in the map's order) and recursing
    into mappings, namedtuples and sequences."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for kind, fn in collate_fn_map.items():
            if isinstance(elem, kind):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        _check_keys(batch)
        return _rebuild(elem, {key: collate([d[key] for d in batch],
                                            collate_fn_map=collate_fn_map) for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(*(collate(s, collate_fn_map=collate_fn_map)
                           for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        for k, sample in enumerate(batch):
            if len(sample) != size:
                raise RuntimeError(f"each element in list of batch should be of equal size "
                                   f"(sample 0 has {size} elements, sample {k} has "
                                   f"{len(sample)})")
        fields = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        return fields if isinstance(elem, tuple) else _rebuild(elem, fields)
    raise TypeError(_ERROR.format(elem_type))


def default_collate(batch):
    """A batch from a list of samples: tensors, arrays and numbers stacked into tensors,
    containers collated field by field (see the module docstring)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """``data`` with every numpy array and numpy scalar turned into a tensor (arrays share
    memory), recursing into containers; used when a DataLoader does not batch."""
    if isinstance(data, Tensor):
        return data
    if type(data).__module__ == "numpy" and not isinstance(data, (np.str_, np.bytes_)):
        if isinstance(data, np.ndarray):
            return data if _is_text_array(data) else from_numpy(data)
        return from_numpy(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return _rebuild(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild(data, [default_convert(d) for d in data])
    return data
