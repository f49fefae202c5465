"""CIFAR-10 and CIFAR-100 from their "python version" batches (``root/cifar-10-batches-py/``,
``root/cifar-100-python/``), read with a restricted unpickler: the batches are pickles, and a
pickle can name any callable, so only what a batch needs is allowed (numpy's array
reconstruction, pickle protocols 2-5, with non-object dtypes; latin-1 byte strings; pickle's
own dicts, lists, strings, numbers); any other global in the file raises
``pickle.UnpicklingError`` before anything runs.
"""
from __future__ import annotations

import codecs
import os
import pickle
import tarfile

import numpy as np

from .mnist import DatasetNotFoundError
from .vision import VisionDataset, to_image

__all__ = ["CIFAR10", "CIFAR100", "load_batch"]


def _dtype(obj, align=False, copy=False):
    dtype = np.dtype(obj, align, copy)
    if dtype.hasobject:
        raise pickle.UnpicklingError(f"refused: a numpy dtype holding Python objects ({dtype})")
    return dtype


def _encode(text, encoding="latin1"):
    if encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError(f"refused: _codecs.encode with {encoding!r}")
    return codecs.encode(text, "latin1")


def _reconstruct(cls, shape, dtype):
    if cls is not np.ndarray:
        raise pickle.UnpicklingError(f"refused: reconstructing {cls!r}")
    return np.ndarray.__new__(np.ndarray, shape, _dtype(dtype))


def _frombuffer(buffer, dtype, shape, order):
    """Protocol 5's array: the bytes of ``buffer`` viewed as ``shape`` of ``dtype``."""
    dtype = _dtype(dtype)
    return np.frombuffer(bytes(buffer), dtype).reshape(shape, order=order).copy()


_ALLOWED = {
    ("numpy.core.numeric", "_frombuffer"): _frombuffer,
    ("numpy._core.numeric", "_frombuffer"): _frombuffer,
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): _dtype,
    ("_codecs", "encode"): _encode,
}


class _BatchUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"refused to load global {module}.{name}: a CIFAR batch holds only arrays, "
                "lists, strings and numbers") from None


def load_batch(path) -> dict:
    """A CIFAR batch file's dict (keys as str), read by the restricted unpickler."""
    with open(path, "rb") as f:
        try:
            entry = _BatchUnpickler(f, encoding="latin1").load()
        except (EOFError, ValueError, TypeError, IndexError) as e:
            raise RuntimeError(f"{path}: damaged CIFAR batch ({type(e).__name__}: {e})") from None
    if not isinstance(entry, dict):
        raise RuntimeError(f"{path}: expected a dict, found {type(entry).__name__}")
    return {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in entry.items()}


class CIFAR10(VisionDataset):
    """CIFAR-10: ``(image, label)`` samples, the image a 32x32 RGB PIL image (a uint8
    ``(32, 32, 3)`` array without Pillow). ``data`` is a uint8 numpy array ``(N, 32, 32, 3)``
    and ``targets`` a list of ints, as torchvision's."""

    base_folder = "cifar-10-batches-py"
    train_list = ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4",
                  "data_batch_5"]
    test_list = ["test_batch"]
    meta = {"filename": "batches.meta", "key": "label_names"}
    labels_key = "labels"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"

    def __init__(self, root, train=True, transform=None, target_transform=None,
                 download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        folder = os.path.join(self.root, self.base_folder)
        archive = os.path.join(self.root, os.path.basename(self.url))
        if download and not os.path.isdir(folder) and os.path.isfile(archive):
            with tarfile.open(archive, "r:gz") as tar:      # the archive torchvision fetches
                tar.extractall(self.root, filter="data")     # no links out, no odd members
        names = self.train_list if train else self.test_list
        missing = [n for n in names + [self.meta["filename"]]
                   if not os.path.isfile(os.path.join(folder, n))]
        if missing:
            extra = (" download=True, but nn.vision downloads nothing (no network access is "
                     "assumed):" if download else "")
            raise DatasetNotFoundError(
                f"{type(self).__name__}:{extra} place {', '.join(missing)} in "
                f"{os.path.abspath(folder)}/ (or {os.path.basename(self.url)} in {self.root} "
                f"with download=True: it is extracted, as torchvision does after downloading "
                f"{self.url})")
        data, targets = [], []
        for name in names:
            entry = load_batch(os.path.join(folder, name))
            if "data" not in entry or self.labels_key not in entry:
                raise RuntimeError(f"{os.path.join(folder, name)}: a CIFAR batch needs 'data' "
                                   f"and {self.labels_key!r}, found {sorted(entry)}")
            array = np.asarray(entry["data"])
            if array.dtype != np.uint8 or array.ndim != 2 or array.shape[1] != 3072:
                raise RuntimeError(f"{os.path.join(folder, name)}: expected uint8 data (N, "
                                   f"3072), got {array.dtype} {array.shape}")
            labels = [int(v) for v in entry[self.labels_key]]
            if len(labels) != len(array):
                raise RuntimeError(f"{os.path.join(folder, name)}: {len(array)} images but "
                                   f"{len(labels)} labels")
            data.append(array)
            targets.extend(labels)
        self.data = np.vstack(data).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1).copy()
        self.targets = targets
        meta = load_batch(os.path.join(folder, self.meta["filename"]))
        self.classes = [c.decode("latin1") if isinstance(c, bytes) else str(c)
                        for c in meta[self.meta["key"]]]
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    def __getitem__(self, index):
        image, target = self.data[int(index)], self.targets[int(index)]
        return self._apply(to_image(image), target)

    def __len__(self):
        return len(self.data)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train else 'Test'}"


class CIFAR100(CIFAR10):
    """CIFAR-100 (the 100 fine labels), from ``root/cifar-100-python/{train,test,meta}``."""

    base_folder = "cifar-100-python"
    train_list = ["train"]
    test_list = ["test"]
    meta = {"filename": "meta", "key": "fine_label_names"}
    labels_key = "fine_labels"
    url = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
