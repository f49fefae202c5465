"""AlexNet (Krizhevsky et al., 2012) in torchvision's layout: ``features``, ``avgpool``,
``classifier``."""
from __future__ import annotations

from ... import modules as M
from ._api import handle_weights, make_weights

__all__ = ["AlexNet", "alexnet", "AlexNet_Weights"]

AlexNet_Weights = make_weights("AlexNet_Weights", {
    "IMAGENET1K_V1": "https://download.pytorch.org/models/alexnet-owt-7be5be79.pth"},
    "IMAGENET1K_V1")


class AlexNet(M.Module):
    def __init__(self, num_classes=1000, dropout=0.5):
        super().__init__()
        self.features = M.Sequential(
            M.Conv2d(3, 64, kernel_size=11, stride=4, padding=2), M.ReLU(inplace=True),
            M.MaxPool2d(kernel_size=3, stride=2),
            M.Conv2d(64, 192, kernel_size=5, padding=2), M.ReLU(inplace=True),
            M.MaxPool2d(kernel_size=3, stride=2),
            M.Conv2d(192, 384, kernel_size=3, padding=1), M.ReLU(inplace=True),
            M.Conv2d(384, 256, kernel_size=3, padding=1), M.ReLU(inplace=True),
            M.Conv2d(256, 256, kernel_size=3, padding=1), M.ReLU(inplace=True),
            M.MaxPool2d(kernel_size=3, stride=2))
        self.avgpool = M.AdaptiveAvgPool2d((6, 6))
        self.classifier = M.Sequential(
            M.Dropout(p=dropout), M.Linear(256 * 6 * 6, 4096), M.ReLU(inplace=True),
            M.Dropout(p=dropout), M.Linear(4096, 4096), M.ReLU(inplace=True),
            M.Linear(4096, num_classes))

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(x.flatten(1))


def alexnet(*, weights=None, progress=True, **kwargs) -> AlexNet:
    handle_weights("alexnet", weights, kwargs)
    return AlexNet(**kwargs)
