"""Elementwise activation layers: ReLU, Sigmoid, Tanh (PyTorch's)."""
from __future__ import annotations

from .. import autograd
from .. import functional as F
from .module import Module

__all__ = ["ReLU", "Sigmoid", "Tanh"]


class ReLU(Module):
    """max(x, 0). ``inplace=True`` overwrites the input, which is allowed, as in-place ops
    are here, only outside the autograd graph (under ``nn.no_grad()`` or on plain tensors)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        if not self.inplace:
            return F.relu(input)
        input._check_inplace()
        with autograd.no_grad():
            return input._assign(F.relu(input))

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Sigmoid(Module):
    """1 / (1 + exp(-x))."""

    def forward(self, input):
        return F.sigmoid(input)


class Tanh(Module):
    """tanh(x)."""

    def forward(self, input):
        return F.tanh(input)
