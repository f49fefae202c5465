"""``nn.vision.models``, as ``torchvision.models``: AlexNet, VGG 11/13/16/19 (``_bn``),
GoogLeNet, ResNet 18/34/50/101 and MobileNetV2, with torchvision's module and parameter names,
defaults and output shapes (a torchvision state dict, converted to nn tensors, loads with
``strict=True``). ``weights=`` raises: nothing is downloaded here (see ``_api``)."""
from .alexnet import *  # noqa: F401,F403
from .googlenet import *  # noqa: F401,F403
from .mobilenetv2 import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403
from ._api import WeightsEnum  # noqa: F401

_BUILDERS = ["alexnet", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19",
             "vgg19_bn", "googlenet", "resnet18", "resnet34", "resnet50", "resnet101",
             "mobilenet_v2"]


def list_models():
    """The names ``get_model`` builds."""
    return sorted(_BUILDERS)


def get_model(name, **config):
    """``get_model("resnet18", num_classes=10)``, as torchvision's."""
    if name not in _BUILDERS:
        raise ValueError(f"Unknown model {name!r}; nn.vision.models has {list_models()}")
    return globals()[name](**config)
