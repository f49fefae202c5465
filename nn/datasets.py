"""Real data that needs no download: scikit-learn's bundled handwritten digits (1,797 8x8
grey images of 0-9), resized to what a network wants, and the image preparation behind it,
which works as well on a user's own arrays (e.g. ``np.load(path, allow_pickle=False)``).

Resizing is done in numpy: data preparation runs once, not on the compiled hot path. It
follows ``F.interpolate``'s ``bilinear`` (``align_corners=False``) and ``nearest`` modes, so
images resized here equal PyTorch's.
"""
from __future__ import annotations

import importlib.util
import os

import numpy as np

from .data.dataset import TensorDataset
from .tensor import from_numpy

__all__ = ["resize_images", "prepare_images", "load_digits", "DigitsDataset"]

_MODES = ("bilinear", "nearest")


def _interpolation_matrix(n_in, n_out, mode):
    """The (n_out, n_in) matrix that resamples a line of ``n_in`` pixels to ``n_out``."""
    matrix = np.zeros((n_out, n_in))
    scale = n_in / n_out
    rows = np.arange(n_out)
    if mode == "nearest":
        matrix[rows, np.minimum(np.floor(rows * scale).astype(int), n_in - 1)] = 1.0
        return matrix
    source = np.maximum((rows + 0.5) * scale - 0.5, 0.0)
    low = np.minimum(np.floor(source).astype(int), n_in - 1)
    high = np.minimum(low + 1, n_in - 1)
    weight = source - low
    np.add.at(matrix, (rows, low), 1.0 - weight)
    np.add.at(matrix, (rows, high), weight)
    return matrix


def resize_images(images, size, mode="bilinear"):
    """``images`` (an array ``(..., H, W)``) resampled to ``size`` (an int or ``(h, w)``)."""
    if mode not in _MODES:
        raise ValueError(f"resize_images: mode must be one of {_MODES}, got {mode!r}")
    images = np.asarray(images)
    if images.ndim < 2:
        raise ValueError(f"resize_images: expected images of shape (..., H, W), got "
                         f"{images.shape}")
    height, width = (size, size) if isinstance(size, int) else tuple(size)
    if height <= 0 or width <= 0:
        raise ValueError(f"resize_images: size must be positive, got {size}")
    rows = _interpolation_matrix(images.shape[-2], height, mode)
    cols = _interpolation_matrix(images.shape[-1], width, mode)
    return rows @ images.astype(np.float64) @ cols.T


def prepare_images(images, image_size=None, mode="bilinear", max_value=None):
    """Images ``(N, H, W)`` or ``(N, C, H, W)`` as a float32 tensor ``(N, C, S, S)`` in [0, 1]:
    divided by ``max_value`` (the data's maximum when None) and resized to ``image_size``
    (kept when None)."""
    images = np.asarray(images, dtype=np.float64)
    if images.ndim == 3:
        images = images[:, None]
    if images.ndim != 4:
        raise ValueError(f"prepare_images: expected images of shape (N, H, W) or (N, C, H, W), "
                         f"got {images.shape}")
    top = images.max(initial=0.0) if max_value is None else max_value
    if top > 0:
        images = images / top
    if image_size is not None:
        images = resize_images(images, image_size, mode)
    return from_numpy(np.clip(images, 0.0, 1.0).astype(np.float32))


def _digits_arrays():
    """The digits' pixels (1797, 8, 8), 0-16, and labels. Read straight from the CSV file that
    scikit-learn ships, which spares importing scikit-learn (seconds); through its
    ``load_digits`` where the file is not where that version keeps it."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None:
        raise ImportError("nn.datasets.load_digits reads the digits bundled with scikit-learn: "
                          "pip install scikit-learn (it is in tensorweave's dev extra)")
    for folder in spec.submodule_search_locations or ():
        path = os.path.join(folder, "datasets", "data", "digits.csv.gz")
        if os.path.exists(path):
            table = np.loadtxt(path, delimiter=",")
            return table[:, :-1].reshape(-1, 8, 8), table[:, -1].astype(np.int64)
    from sklearn import datasets
    digits = datasets.load_digits()
    return digits.images, digits.target.astype(np.int64)


def load_digits(image_size=32, mode="bilinear"):
    """scikit-learn's handwritten digits as ``(images, labels)``: float32 ``(1797, 1, S, S)``
    in [0, 1] with ``S = image_size``, and int64 labels 0-9."""
    pixels, labels = _digits_arrays()
    return prepare_images(pixels, image_size, mode, max_value=16.0), from_numpy(labels)


class DigitsDataset(TensorDataset):
    """The digits as a dataset of ``(image (1, S, S), label)`` samples."""

    def __init__(self, image_size=32, mode="bilinear"):
        super().__init__(*load_digits(image_size, mode))
