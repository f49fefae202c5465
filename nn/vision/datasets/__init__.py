"""``nn.vision.datasets``, as ``torchvision.datasets``: MNIST-format readers (``MNIST``,
``FashionMNIST``, ``KMNIST``), ``CIFAR10`` / ``CIFAR100``, ``ImageFolder`` / ``DatasetFolder``
and ``FakeData``. Nothing is downloaded: files are read where torchvision keeps them."""
from .cifar import CIFAR10, CIFAR100  # noqa: F401
from .fakedata import FakeData  # noqa: F401
from .folder import DatasetFolder, ImageFolder  # noqa: F401
from .mnist import KMNIST, MNIST, DatasetNotFoundError, FashionMNIST  # noqa: F401
from .vision import VisionDataset  # noqa: F401

__all__ = ["MNIST", "FashionMNIST", "KMNIST", "CIFAR10", "CIFAR100", "ImageFolder",
           "DatasetFolder", "FakeData", "VisionDataset", "DatasetNotFoundError"]
