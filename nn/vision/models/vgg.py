"""VGG 11/13/16/19 (Simonyan & Zisserman, 2014), with and without batch norm, in torchvision's
layout: ``features`` (the conv stack), ``avgpool``, ``classifier``."""
from __future__ import annotations

from ... import init
from ... import modules as M
from ._api import handle_weights, make_weights

__all__ = ["VGG", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19",
           "vgg19_bn", "make_layers"]

CFGS = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512,
          "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512,
          512, 512, 512, "M"],
}


class VGG(M.Module):
    def __init__(self, features, num_classes=1000, init_weights=True, dropout=0.5):
        super().__init__()
        self.features = features
        self.avgpool = M.AdaptiveAvgPool2d((7, 7))
        self.classifier = M.Sequential(
            M.Linear(512 * 7 * 7, 4096), M.ReLU(True), M.Dropout(p=dropout),
            M.Linear(4096, 4096), M.ReLU(True), M.Dropout(p=dropout),
            M.Linear(4096, num_classes))
        if init_weights:
            for m in self.modules():
                if isinstance(m, M.Conv2d):
                    init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        init.constant_(m.bias, 0)
                elif isinstance(m, M.BatchNorm2d):
                    init.constant_(m.weight, 1)
                    init.constant_(m.bias, 0)
                elif isinstance(m, M.Linear):
                    init.normal_(m.weight, 0, 0.01)
                    init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(x.flatten(1))


def make_layers(cfg, batch_norm=False) -> M.Sequential:
    layers, in_channels = [], 3
    for v in cfg:
        if v == "M":
            layers.append(M.MaxPool2d(kernel_size=2, stride=2))
        else:
            layers.append(M.Conv2d(in_channels, v, kernel_size=3, padding=1))
            if batch_norm:
                layers.append(M.BatchNorm2d(v))
            layers.append(M.ReLU(inplace=True))
            in_channels = v
    return M.Sequential(*layers)


_URL = "https://download.pytorch.org/models/"
_FILES = {"vgg11": "vgg11-8a719046", "vgg11_bn": "vgg11_bn-6002323d",
          "vgg13": "vgg13-19584684", "vgg13_bn": "vgg13_bn-abd245e5",
          "vgg16": "vgg16-397923af", "vgg16_bn": "vgg16_bn-6c64b313",
          "vgg19": "vgg19-dcbb9e9d", "vgg19_bn": "vgg19_bn-c79401a0"}


def _builder(name, cfg, batch_norm):
    enum_name = name.upper() + "_Weights"
    weights_enum = make_weights(enum_name, {"IMAGENET1K_V1": f"{_URL}{_FILES[name]}.pth"},
                                "IMAGENET1K_V1")

    def build(*, weights=None, progress=True, **kwargs) -> VGG:
        handle_weights(name, weights, kwargs)
        return VGG(make_layers(CFGS[cfg], batch_norm), **kwargs)
    build.__name__ = build.__qualname__ = name
    norm = " with batch norm" if batch_norm else ""
    build.__doc__ = f"VGG-{name[3:5]} (configuration {cfg}){norm}."
    return build, weights_enum


vgg11, VGG11_Weights = _builder("vgg11", "A", False)
vgg11_bn, VGG11_BN_Weights = _builder("vgg11_bn", "A", True)
vgg13, VGG13_Weights = _builder("vgg13", "B", False)
vgg13_bn, VGG13_BN_Weights = _builder("vgg13_bn", "B", True)
vgg16, VGG16_Weights = _builder("vgg16", "D", False)
vgg16_bn, VGG16_BN_Weights = _builder("vgg16_bn", "D", True)
vgg19, VGG19_Weights = _builder("vgg19", "E", False)
vgg19_bn, VGG19_BN_Weights = _builder("vgg19_bn", "E", True)
__all__ += [f"VGG{n}{b}_Weights" for n in (11, 13, 16, 19) for b in ("", "_BN")]
