"""Flatten and Unflatten: reshape a range of dimensions into one, and one into several."""
from __future__ import annotations

import numpy as np

from .module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flattens dimensions ``start_dim`` to ``end_dim`` (the batch axis is kept by default)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expands dimension ``dim`` into ``unflattened_size`` (one entry may be -1)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
            raise TypeError(f"invalid argument 'dim': expected an int, got "
                            f"{type(dim).__name__}")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError("unflattened_size must be tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        for k, n in enumerate(unflattened_size):
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
                raise TypeError("unflattened_size must be tuple of ints, but found element of "
                                f"type {type(n).__name__} at pos {k}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
