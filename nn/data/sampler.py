"""Samplers: the order in which a DataLoader reads a map-style dataset, as torch.utils.data
has them.

A sampler is an iterable of dataset indices (``BatchSampler``: of lists of indices). The random
ones draw from ``generator`` when given, else from nn's generator (``nn.manual_seed`` seeds it),
read at iteration time so that seeding after building the sampler takes effect. ``generator`` is
a ``numpy.random.Generator`` (or any object with its ``integers``, ``permutation`` and ``choice``
methods), nn's convention for generators; exact random streams differ from PyTorch's, the
semantics (lengths, coverage, replacement) do not.
"""
from __future__ import annotations

import numpy as np

from ..tensor import _rng

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]

_GENERATOR_METHODS = ("integers", "permutation", "choice")


def generator_rng(generator):
    """The numpy-style generator to draw from: ``generator``, or nn's generator when None."""
    if generator is None:
        return _rng(None)           # nn's generator now (nn.manual_seed re-binds it)
    if isinstance(generator, np.random.Generator) or all(
            callable(getattr(generator, m, None)) for m in _GENERATOR_METHODS):
        return generator
    raise TypeError(f"generator must be None or a numpy.random.Generator (or an object with its "
                    f"integers, permutation and choice methods), got {type(generator).__name__}")


def _fresh_rng(generator):
    """A generator for one pass: ``generator`` itself, or, as PyTorch's RandomSampler does when
    it has none, a new one seeded by one draw from nn's generator (so that each pass consumes
    the same amount of nn's randomness whatever its length)."""
    if generator is not None:
        return generator_rng(generator)
    return np.random.default_rng(int(generator_rng(None).integers(0, 2 ** 63)))


def _positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value}")
    return int(value)


class Sampler:
    """The base class of samplers: subclasses define ``__iter__`` (and usually ``__len__``)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class SequentialSampler(Sampler):
    """The indices ``0 .. len(data_source) - 1`` in order."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """Random indices: a permutation per pass of the data (``replacement=False``; with
    ``num_samples`` larger than the data set, whole permutations then a partial one), or
    ``num_samples`` independent uniform draws (``replacement=True``)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        _positive_int(self.num_samples, "num_samples")

    @property
    def num_samples(self) -> int:
        """``num_samples`` if given, else the length of the data (read each time: it may grow)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, count = len(self.data_source), self.num_samples
        rng = _fresh_rng(self.generator)
        if self.replacement:
            yield from rng.integers(0, n, count).tolist()
            return
        for _ in range(count // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n)[:count % n].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order (a new permutation each pass)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in generator_rng(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights`` (which need
    not sum to one), with or without replacement."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        _positive_int(num_samples, "num_samples")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        data = weights.detach().cpu().numpy() if hasattr(weights, "detach") else weights
        weights = np.asarray(data, dtype=np.float64)
        if weights.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights.shape)}")
        self.weights = weights
        self.num_samples = int(num_samples)
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        w = self.weights
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry < 0, inf or nan)")
        if w.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not self.replacement and self.num_samples > np.count_nonzero(w):
            raise RuntimeError(f"invalid multinomial distribution (with replacement=False, not "
                               f"enough non-negative category to sample): {self.num_samples} "
                               f"samples asked of {np.count_nonzero(w)} non-zero weights")
        rng = generator_rng(self.generator)
        picks = rng.choice(len(w), size=self.num_samples, replace=self.replacement, p=w / w.sum())
        yield from picks.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler``; the last one shorter unless
    ``drop_last``."""

    def __init__(self, sampler, batch_size, drop_last):
        self.batch_size = _positive_int(batch_size, "batch_size")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return -(-len(self.sampler) // self.batch_size)
