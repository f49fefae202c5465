"""ResNet 18/34/50/101 (He et al., 2015; the bottleneck's stride on its 3x3 conv, "v1.5", as
torchvision), in torchvision's layout: ``conv1``, ``bn1``, ``layer1``-``layer4``, ``fc``."""
from __future__ import annotations

from ... import init
from ... import modules as M
from ._api import handle_weights, make_weights

__all__ = ["ResNet", "BasicBlock", "Bottleneck", "resnet18", "resnet34", "resnet50",
           "resnet101", "ResNet18_Weights", "ResNet34_Weights", "ResNet50_Weights",
           "ResNet101_Weights"]


def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
    return M.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation,
                    groups=groups, bias=False, dilation=dilation)


def conv1x1(in_planes, out_planes, stride=1):
    return M.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(M.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64,
                 dilation=1, norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or M.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = M.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(M.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64,
                 dilation=1, norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or M.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = M.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(M.Module):
    def __init__(self, block, layers, num_classes=1000, zero_init_residual=False, groups=1,
                 width_per_group=64, replace_stride_with_dilation=None, norm_layer=None):
        super().__init__()
        self._norm_layer = norm_layer = norm_layer or M.BatchNorm2d
        self.inplanes, self.dilation = 64, 1
        replace = replace_stride_with_dilation or [False, False, False]
        if len(replace) != 3:
            raise ValueError("replace_stride_with_dilation should be None or a 3-element tuple, "
                             f"got {replace_stride_with_dilation}")
        self.groups, self.base_width = groups, width_per_group
        self.conv1 = M.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = M.ReLU(inplace=True)
        self.maxpool = M.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], 2, replace[0])
        self.layer3 = self._make_layer(block, 256, layers[2], 2, replace[1])
        self.layer4 = self._make_layer(block, 512, layers[3], 2, replace[2])
        self.avgpool = M.AdaptiveAvgPool2d((1, 1))
        self.fc = M.Linear(512 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, M.Conv2d):
                init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (M.BatchNorm2d, M.GroupNorm)):
                init.constant_(m.weight, 1)
                init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck):
                    init.constant_(m.bn3.weight, 0)
                elif isinstance(m, BasicBlock):
                    init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
        norm_layer, downsample, previous_dilation = self._norm_layer, None, self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = M.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                      norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width,
                        previous_dilation, norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups,
                                base_width=self.base_width, dilation=self.dilation,
                                norm_layer=norm_layer))
        return M.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


_URL = "https://download.pytorch.org/models/"
ResNet18_Weights = make_weights("ResNet18_Weights", {
    "IMAGENET1K_V1": _URL + "resnet18-f37072fd.pth"}, "IMAGENET1K_V1")
ResNet34_Weights = make_weights("ResNet34_Weights", {
    "IMAGENET1K_V1": _URL + "resnet34-b627a593.pth"}, "IMAGENET1K_V1")
ResNet50_Weights = make_weights("ResNet50_Weights", {
    "IMAGENET1K_V1": _URL + "resnet50-0676ba61.pth",
    "IMAGENET1K_V2": _URL + "resnet50-11ad3fa6.pth"}, "IMAGENET1K_V2")
ResNet101_Weights = make_weights("ResNet101_Weights", {
    "IMAGENET1K_V1": _URL + "resnet101-63fe2227.pth",
    "IMAGENET1K_V2": _URL + "resnet101-cd907fc2.pth"}, "IMAGENET1K_V2")


def _resnet(name, block, layers, weights, kwargs):
    handle_weights(name, weights, kwargs)
    return ResNet(block, layers, **kwargs)


def resnet18(*, weights=None, progress=True, **kwargs) -> ResNet:
    return _resnet("resnet18", BasicBlock, [2, 2, 2, 2], weights, kwargs)


def resnet34(*, weights=None, progress=True, **kwargs) -> ResNet:
    return _resnet("resnet34", BasicBlock, [3, 4, 6, 3], weights, kwargs)


def resnet50(*, weights=None, progress=True, **kwargs) -> ResNet:
    return _resnet("resnet50", Bottleneck, [3, 4, 6, 3], weights, kwargs)


def resnet101(*, weights=None, progress=True, **kwargs) -> ResNet:
    return _resnet("resnet101", Bottleneck, [3, 4, 23, 3], weights, kwargs)
