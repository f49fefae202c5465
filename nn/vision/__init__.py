"""``nn.vision``, as ``torchvision``: ``datasets`` (MNIST-format, CIFAR, ImageFolder, FakeData),
``transforms`` (and ``transforms.v2``) and ``models`` (AlexNet, VGG, GoogLeNet, ResNet,
MobileNetV2 with torchvision's module and parameter names) and ``utils`` (``make_grid``,
``save_image``)."""
from . import datasets, transforms  # noqa: F401
from . import models, utils  # noqa: F401,E402

__version__ = "0.28.0-nn"       # the torchvision API level these modules follow
__all__ = ["datasets", "transforms", "models", "utils"]
