"""``ImageFolder`` / ``DatasetFolder``, as torchvision's: ``root/<class>/**/<file>``, classes
the sorted sub-folder names, samples ``(path, class_index)`` in sorted order."""
from __future__ import annotations

import os

from .vision import VisionDataset, pil_module

__all__ = ["DatasetFolder", "ImageFolder", "IMG_EXTENSIONS", "default_loader", "pil_loader",
           "find_classes", "make_dataset", "has_file_allowed_extension"]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def has_file_allowed_extension(filename, extensions) -> bool:
    return filename.lower().endswith(extensions if isinstance(extensions, str)
                                     else tuple(extensions))


def find_classes(directory):
    """The sorted class folder names under ``directory`` and their indices."""
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
    if not classes:
        raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
    return classes, {name: i for i, name in enumerate(classes)}


def make_dataset(directory, class_to_idx=None, extensions=None, is_valid_file=None,
                 allow_empty=False):
    """The ``(path, class_index)`` samples under ``directory``, walked in sorted order."""
    directory = os.path.expanduser(os.fspath(directory))
    if class_to_idx is None:
        _, class_to_idx = find_classes(directory)
    if (extensions is None) == (is_valid_file is None):
        raise ValueError("Both extensions and is_valid_file cannot be None or not None at the "
                         "same time")
    if extensions is not None:
        def is_valid_file(path):
            return has_file_allowed_extension(path, extensions)
    samples, found = [], set()
    for name in sorted(class_to_idx):
        folder = os.path.join(directory, name)
        if not os.path.isdir(folder):
            continue
        for base, _, files in sorted(os.walk(folder, followlinks=True)):
            for file in sorted(files):
                path = os.path.join(base, file)
                if is_valid_file(path):
                    samples.append((path, class_to_idx[name]))
                    found.add(name)
    empty = set(class_to_idx) - found
    if empty and not allow_empty:
        message = f"Found no valid file for the classes {', '.join(sorted(empty))}. "
        if extensions is not None:
            message += f"Supported extensions are: {', '.join(extensions)}"
        raise FileNotFoundError(message)
    return samples


def pil_loader(path):
    image_module = pil_module()
    if image_module is None:
        raise ImportError("nn.vision.datasets.ImageFolder reads images with Pillow: pip install "
                          "pillow (or pass loader=)")
    with open(path, "rb") as f:
        return image_module.open(f).convert("RGB")


default_loader = pil_loader


class DatasetFolder(VisionDataset):
    """Samples ``loader(path)`` with the index of the class folder they are in."""

    def __init__(self, root, loader, extensions=None, transform=None, target_transform=None,
                 is_valid_file=None, allow_empty=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.classes, self.class_to_idx = self.find_classes(self.root)
        self.samples = self.make_dataset(self.root, self.class_to_idx, extensions,
                                         is_valid_file, allow_empty)
        self.loader, self.extensions = loader, extensions
        self.targets = [target for _, target in self.samples]

    @staticmethod
    def make_dataset(directory, class_to_idx, extensions=None, is_valid_file=None,
                     allow_empty=False):
        return make_dataset(directory, class_to_idx, extensions, is_valid_file, allow_empty)

    def find_classes(self, directory):
        return find_classes(directory)

    def __getitem__(self, index):
        path, target = self.samples[int(index)]
        return self._apply(self.loader(path), target)

    def __len__(self):
        return len(self.samples)


class ImageFolder(DatasetFolder):
    """Images in class folders (``root/dog/1.png``); ``imgs`` is ``samples``."""

    def __init__(self, root, transform=None, target_transform=None, loader=default_loader,
                 is_valid_file=None, allow_empty=False):
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None,
                         transform=transform, target_transform=target_transform,
                         is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.imgs = self.samples
