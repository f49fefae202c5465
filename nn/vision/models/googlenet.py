"""GoogLeNet / Inception v1 (Szegedy et al., 2014) in torchvision's layout, with the two
auxiliary classifiers (``aux_logits=True`` by default, used in training mode only: the model
then returns ``GoogLeNetOutputs(logits, aux_logits2, aux_logits1)``). As in torchvision, the
"5x5" branch of each Inception block is a 3x3 convolution."""
from __future__ import annotations

import collections

from ... import functional as F
from ... import init
from ... import modules as M
from ...functions import cat
from ._api import handle_weights, make_weights

__all__ = ["GoogLeNet", "GoogLeNetOutputs", "googlenet", "GoogLeNet_Weights", "BasicConv2d",
           "Inception", "InceptionAux"]

GoogLeNetOutputs = collections.namedtuple("GoogLeNetOutputs",
                                          ["logits", "aux_logits2", "aux_logits1"])


class BasicConv2d(M.Module):
    def __init__(self, in_channels, out_channels, **kwargs):
        super().__init__()
        self.conv = M.Conv2d(in_channels, out_channels, bias=False, **kwargs)
        self.bn = M.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class Inception(M.Module):
    def __init__(self, in_channels, ch1x1, ch3x3red, ch3x3, ch5x5red, ch5x5, pool_proj):
        super().__init__()
        self.branch1 = BasicConv2d(in_channels, ch1x1, kernel_size=1)
        self.branch2 = M.Sequential(BasicConv2d(in_channels, ch3x3red, kernel_size=1),
                                    BasicConv2d(ch3x3red, ch3x3, kernel_size=3, padding=1))
        self.branch3 = M.Sequential(BasicConv2d(in_channels, ch5x5red, kernel_size=1),
                                    BasicConv2d(ch5x5red, ch5x5, kernel_size=3, padding=1))
        self.branch4 = M.Sequential(
            M.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=True),
            BasicConv2d(in_channels, pool_proj, kernel_size=1))

    def forward(self, x):
        return cat([self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)], 1)


class InceptionAux(M.Module):
    def __init__(self, in_channels, num_classes, dropout=0.7):
        super().__init__()
        self.conv = BasicConv2d(in_channels, 128, kernel_size=1)
        self.fc1 = M.Linear(2048, 1024)
        self.fc2 = M.Linear(1024, num_classes)
        self.dropout = M.Dropout(p=dropout)

    def forward(self, x):
        x = self.conv(F.adaptive_avg_pool2d(x, (4, 4))).flatten(1)
        return self.fc2(self.dropout(F.relu(self.fc1(x))))


class GoogLeNet(M.Module):
    def __init__(self, num_classes=1000, aux_logits=True, transform_input=False,
                 init_weights=None, dropout=0.2, dropout_aux=0.7):
        super().__init__()
        self.aux_logits, self.transform_input = aux_logits, transform_input
        self.conv1 = BasicConv2d(3, 64, kernel_size=7, stride=2, padding=3)
        self.maxpool1 = M.MaxPool2d(3, stride=2, ceil_mode=True)
        self.conv2 = BasicConv2d(64, 64, kernel_size=1)
        self.conv3 = BasicConv2d(64, 192, kernel_size=3, padding=1)
        self.maxpool2 = M.MaxPool2d(3, stride=2, ceil_mode=True)
        self.inception3a = Inception(192, 64, 96, 128, 16, 32, 32)
        self.inception3b = Inception(256, 128, 128, 192, 32, 96, 64)
        self.maxpool3 = M.MaxPool2d(3, stride=2, ceil_mode=True)
        self.inception4a = Inception(480, 192, 96, 208, 16, 48, 64)
        self.inception4b = Inception(512, 160, 112, 224, 24, 64, 64)
        self.inception4c = Inception(512, 128, 128, 256, 24, 64, 64)
        self.inception4d = Inception(512, 112, 144, 288, 32, 64, 64)
        self.inception4e = Inception(528, 256, 160, 320, 32, 128, 128)
        self.maxpool4 = M.MaxPool2d(2, stride=2, ceil_mode=True)
        self.inception5a = Inception(832, 256, 160, 320, 32, 128, 128)
        self.inception5b = Inception(832, 384, 192, 384, 48, 128, 128)
        if aux_logits:
            self.aux1 = InceptionAux(512, num_classes, dropout=dropout_aux)
            self.aux2 = InceptionAux(528, num_classes, dropout=dropout_aux)
        else:
            self.aux1 = self.aux2 = None
        self.avgpool = M.AdaptiveAvgPool2d((1, 1))
        self.dropout = M.Dropout(p=dropout)
        self.fc = M.Linear(1024, num_classes)
        if init_weights is None or init_weights:
            for m in self.modules():
                if isinstance(m, (M.Conv2d, M.Linear)):
                    init.trunc_normal_(m.weight, mean=0.0, std=0.01, a=-2, b=2)
                elif isinstance(m, M.BatchNorm2d):
                    init.constant_(m.weight, 1)
                    init.constant_(m.bias, 0)

    def _transform_input(self, x):
        if not self.transform_input:
            return x
        chans = [x[:, i:i + 1] * (std / 0.5) + (mean - 0.5) / 0.5
                 for i, (mean, std) in enumerate(((0.485, 0.229), (0.456, 0.224),
                                                  (0.406, 0.225)))]
        return cat(chans, 1)

    def forward(self, x):
        x = self._transform_input(x)
        x = self.maxpool1(self.conv1(x))
        x = self.maxpool2(self.conv3(self.conv2(x)))
        x = self.maxpool3(self.inception3b(self.inception3a(x)))
        x = self.inception4a(x)
        aux1 = self.aux1(x) if self.aux1 is not None and self.training else None
        x = self.inception4d(self.inception4c(self.inception4b(x)))
        aux2 = self.aux2(x) if self.aux2 is not None and self.training else None
        x = self.maxpool4(self.inception4e(x))
        x = self.inception5b(self.inception5a(x))
        x = self.fc(self.dropout(self.avgpool(x).flatten(1)))
        if self.training and self.aux_logits:
            return GoogLeNetOutputs(x, aux2, aux1)
        return x


GoogLeNet_Weights = make_weights("GoogLeNet_Weights", {
    "IMAGENET1K_V1": "https://download.pytorch.org/models/googlenet-1378be20.pth"},
    "IMAGENET1K_V1")


def googlenet(*, weights=None, progress=True, **kwargs) -> GoogLeNet:
    handle_weights("googlenet", weights, kwargs)
    return GoogLeNet(**kwargs)
