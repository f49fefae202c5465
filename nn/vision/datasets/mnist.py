"""MNIST, FashionMNIST and KMNIST, as torchvision reads them: the four IDX files (gzipped or
not) in ``root/<ClassName>/raw/``. Nothing is downloaded here: ``download=True`` uses the files
when they are present, as torchvision does once it has them, and otherwise raises an error
naming the files to place and where.

An IDX file is two zero bytes, a type code, the number of dimensions, the dimensions as
big-endian uint32, then the values (big-endian). A file whose header, type, dimensions or
length do not agree (truncated, damaged gzip, wrong file) raises ``RuntimeError`` naming it.
"""
from __future__ import annotations

import gzip
import os
import zlib

import numpy as np

from ...tensor import from_numpy
from .vision import VisionDataset, to_image

__all__ = ["MNIST", "FashionMNIST", "KMNIST", "read_idx", "DatasetNotFoundError"]

_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


class DatasetNotFoundError(RuntimeError):
    """A dataset's files are not where torchvision keeps them (and nothing is downloaded)."""


def _read_bytes(path):
    with open(path, "rb") as f:
        raw = f.read()
    if path.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise RuntimeError(f"{path}: damaged gzip file ({e})") from None
    return raw


def read_idx(path) -> np.ndarray:
    """The array an IDX file (``.gz`` or not) holds, in native byte order."""
    path = os.fspath(path)
    raw = _read_bytes(path)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise RuntimeError(f"{path}: not an IDX file (the first bytes are {raw[:4].hex()}, "
                           "expected 00 00 <type code> <ndim>)")
    dtype, ndim = np.dtype(_IDX_TYPES[raw[2]]), raw[3]
    if len(raw) < 4 + 4 * ndim:
        raise RuntimeError(f"{path}: truncated IDX header ({len(raw)} bytes for {ndim} dims)")
    shape = tuple(int(d) for d in np.frombuffer(raw, ">u4", ndim, 4))
    expected = 4 + 4 * ndim + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) != expected:
        raise RuntimeError(f"{path}: damaged IDX file: shape {shape} of {dtype.name} needs "
                           f"{expected} bytes, the file has {len(raw)}")
    data = np.frombuffer(raw, dtype, offset=4 + 4 * ndim).reshape(shape)
    return data.astype(dtype.newbyteorder("="))


class MNIST(VisionDataset):
    """The MNIST digits: ``(image, label)`` samples, the image a 28x28 PIL image of mode "L"
    (a uint8 ``(28, 28)`` array where Pillow is not installed), the label an int.
    ``data`` (uint8 ``(N, 28, 28)``) and ``targets`` (int64 ``(N,)``) are nn tensors."""

    resources = [("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
                 ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")]
    mirrors = ["https://ossci-datasets.s3.amazonaws.com/mnist/",
               "http://yann.lecun.com/exdb/mnist/"]
    training_file = "training.pt"
    test_file = "test.pt"
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five",
               "6 - six", "7 - seven", "8 - eight", "9 - nine"]

    def __init__(self, root, train=True, transform=None, target_transform=None,
                 download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if not self._check_exists():
            raise DatasetNotFoundError(self._missing_message(download))
        self.data, self.targets = self._load_data()

    @property
    def raw_folder(self) -> str:
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def processed_folder(self) -> str:
        return os.path.join(self.root, type(self).__name__, "processed")

    @property
    def class_to_idx(self):
        return {name: i for i, name in enumerate(self.classes)}

    @property
    def _files(self):
        return self.resources[0] if self.train else self.resources[1]

    def _find(self, name):
        """The path of ``name`` or ``name.gz`` in the raw folder, or None."""
        for candidate in (name, name + ".gz"):
            path = os.path.join(self.raw_folder, candidate)
            if os.path.isfile(path):
                return path
        return None

    def _check_exists(self) -> bool:
        return all(self._find(name) is not None for name in self._files)

    def _missing_message(self, download):
        missing = [n for n in self._files if self._find(n) is None]
        where = os.path.abspath(self.raw_folder)
        files = ", ".join(f"{n} (or {n}.gz)" for n in missing)
        if download:
            return (f"{type(self).__name__}: download=True, but nn.vision downloads nothing "
                    f"(no network access is assumed). Place the IDX files {files} in {where}/ "
                    f"(torchvision's layout; they are at {self.mirrors[0]}), then run again.")
        return (f"Dataset not found: {type(self).__name__} needs {files} in {where}/ "
                "(nn.vision downloads nothing: place the files there)")

    def _load_data(self):
        images_path, labels_path = (self._find(n) for n in self._files)
        images, labels = read_idx(images_path), read_idx(labels_path)
        if images.ndim != 3 or images.dtype != np.uint8:
            raise RuntimeError(f"{images_path}: expected uint8 images (N, H, W), got "
                               f"{images.dtype.name} {images.shape}")
        if labels.ndim != 1 or len(labels) != len(images):
            raise RuntimeError(f"{labels_path}: expected {len(images)} labels (one per image "
                               f"in {os.path.basename(images_path)}), got shape {labels.shape}")
        return from_numpy(np.ascontiguousarray(images)), from_numpy(labels.astype(np.int64))

    # torchvision's deprecated names
    @property
    def train_data(self):
        return self.data

    @property
    def train_labels(self):
        return self.targets

    test_data = train_data
    test_labels = train_labels

    def __getitem__(self, index):
        index = int(index)
        image = to_image(self.data.numpy()[index])       # mode "L"
        target = int(self.targets.numpy()[index])
        return self._apply(image, target)

    def __len__(self):
        return len(self.data)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train else 'Test'}"


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: MNIST's format and file names, in ``root/FashionMNIST/raw``."""

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot"]


class KMNIST(MNIST):
    """Kuzushiji-MNIST: MNIST's format and file names, in ``root/KMNIST/raw``."""

    mirrors = ["http://codh.rois.ac.jp/kmnist/dataset/kmnist/"]
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]
