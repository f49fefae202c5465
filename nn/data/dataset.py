"""Datasets, as torch.utils.data has them: map-style (``__getitem__`` and ``__len__``) and
iterable-style (``__iter__``), the tensor, concatenated, chained and subset datasets, and
``random_split``.
"""
from __future__ import annotations

import bisect
import itertools
import math
import warnings

from ..tensor import Tensor
from .sampler import generator_rng

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset",
           "Subset", "random_split"]


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__`` (and ``__len__`` for the default
    samplers). ``a + b`` concatenates two datasets."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """An iterable-style dataset: subclasses define ``__iter__``. In a DataLoader with workers,
    each worker iterates its own copy; ``nn.data.get_worker_info()`` tells an ``__iter__``
    which share to produce. ``a + b`` chains two of them."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are tuples of the ``tensors``' rows: ``dataset[i] == (t[i] for t in tensors)``."""

    def __init__(self, *tensors):
        for k, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"TensorDataset expects tensors, but argument {k} is "
                                f"{type(t).__name__} (wrap arrays with nn.from_numpy)")
            if t.ndim == 0 or t.shape[0] != tensors[0].shape[0]:
                sizes = [list(x.shape) for x in tensors]
                raise AssertionError(f"Size mismatch between tensors: every tensor needs the "
                                     f"same size in dimension 0, got shapes {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0] if self.tensors else 0


class ConcatDataset(Dataset):
    """The samples of several map-style datasets one after the other."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        if which == len(self.datasets):
            raise IndexError(f"index {idx} is out of range for a ConcatDataset of length "
                             f"{len(self)}")
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """The samples of several iterable-style datasets one after the other."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        """Many samples at once (a DataLoader calls it with each batch's indices)."""
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


def _lengths_from_fractions(fractions, total):
    """Split sizes for ``fractions`` summing to 1: each floor(total * fraction), then the
    remainder handed out one at a time from the first split on, as PyTorch does."""
    lengths = []
    for i, frac in enumerate(fractions):
        if frac < 0 or frac > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths.append(int(math.floor(total * frac)))
    for i in range(total - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might result in an empty "
                          "dataset.", stacklevel=3)
    return lengths


def random_split(dataset, lengths, generator=None):
    """Non-overlapping random ``Subset``s of ``dataset`` with the given ``lengths`` (which sum
    to its length) or fractions (which sum to 1), from one permutation drawn from
    ``generator`` (nn's generator when None)."""
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _lengths_from_fractions(lengths, len(dataset))
    if sum(lengths) != len(dataset):
        raise ValueError(f"Sum of input lengths does not equal the length of the input dataset! "
                         f"(lengths {lengths} sum to {sum(lengths)}, the dataset has "
                         f"{len(dataset)} samples)")
    indices = generator_rng(generator).permutation(sum(lengths)).tolist()
    offsets = itertools.accumulate(lengths)
    return [Subset(dataset, indices[end - n:end]) for end, n in zip(offsets, lengths)]
