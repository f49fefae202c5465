"""MobileNetV2 (Sandler et al., 2018) in torchvision's layout: ``features`` (a stem
``Conv2dNormActivation``, 17 ``InvertedResidual`` blocks, a 1x1 head) and ``classifier``."""
from __future__ import annotations

from ... import functional as F
from ... import init
from ... import modules as M
from ._api import handle_weights, make_weights

__all__ = ["MobileNetV2", "mobilenet_v2", "MobileNet_V2_Weights", "InvertedResidual",
           "Conv2dNormActivation"]


def _make_divisible(v, divisor, min_value=None):
    min_value = divisor if min_value is None else min_value
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class Conv2dNormActivation(M.Sequential):
    """Conv2d, then a norm layer, then an activation (torchvision.ops.misc's block)."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None,
                 groups=1, norm_layer=M.BatchNorm2d, activation_layer=M.ReLU, dilation=1,
                 inplace=True, bias=None):
        if padding is None:
            padding = (kernel_size - 1) // 2 * dilation
        bias = norm_layer is None if bias is None else bias
        layers = [M.Conv2d(in_channels, out_channels, kernel_size, stride, padding,
                           dilation=dilation, groups=groups, bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer(**({} if inplace is None else {"inplace": inplace})))
        super().__init__(*layers)
        self.out_channels = out_channels


class InvertedResidual(M.Module):
    def __init__(self, inp, oup, stride, expand_ratio, norm_layer=None):
        super().__init__()
        if stride not in (1, 2):
            raise ValueError(f"stride should be 1 or 2 instead of {stride}")
        norm_layer = norm_layer or M.BatchNorm2d
        hidden_dim = int(round(inp * expand_ratio))
        self.stride = stride
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(Conv2dNormActivation(inp, hidden_dim, kernel_size=1,
                                               norm_layer=norm_layer, activation_layer=M.ReLU6))
        layers += [Conv2dNormActivation(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim,
                                        norm_layer=norm_layer, activation_layer=M.ReLU6),
                   M.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False), norm_layer(oup)]
        self.conv = M.Sequential(*layers)
        self.out_channels = oup
        self._is_cn = stride > 1

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(M.Module):
    def __init__(self, num_classes=1000, width_mult=1.0, inverted_residual_setting=None,
                 round_nearest=8, block=None, norm_layer=None, dropout=0.2):
        super().__init__()
        block = block or InvertedResidual
        norm_layer = norm_layer or M.BatchNorm2d
        setting = inverted_residual_setting or [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2],
                                                [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2],
                                                [6, 320, 1, 1]]
        if not setting or any(len(row) != 4 for row in setting):
            raise ValueError(f"inverted_residual_setting should be non-empty or a 4-element "
                             f"list, got {inverted_residual_setting}")
        input_channel = _make_divisible(32 * width_mult, round_nearest)
        self.last_channel = _make_divisible(1280 * max(1.0, width_mult), round_nearest)
        features = [Conv2dNormActivation(3, input_channel, stride=2, norm_layer=norm_layer,
                                         activation_layer=M.ReLU6)]
        for t, c, n, s in setting:
            output_channel = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(block(input_channel, output_channel, s if i == 0 else 1, t,
                                      norm_layer=norm_layer))
                input_channel = output_channel
        features.append(Conv2dNormActivation(input_channel, self.last_channel, kernel_size=1,
                                             norm_layer=norm_layer, activation_layer=M.ReLU6))
        self.features = M.Sequential(*features)
        self.classifier = M.Sequential(M.Dropout(p=dropout),
                                       M.Linear(self.last_channel, num_classes))
        for m in self.modules():
            if isinstance(m, M.Conv2d):
                init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    init.zeros_(m.bias)
            elif isinstance(m, (M.BatchNorm2d, M.GroupNorm)):
                init.ones_(m.weight)
                init.zeros_(m.bias)
            elif isinstance(m, M.Linear):
                init.normal_(m.weight, 0, 0.01)
                init.zeros_(m.bias)

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(x.flatten(1))


MobileNet_V2_Weights = make_weights("MobileNet_V2_Weights", {
    "IMAGENET1K_V1": "https://download.pytorch.org/models/mobilenet_v2-b0353104.pth",
    "IMAGENET1K_V2": "https://download.pytorch.org/models/mobilenet_v2-7ebf99e0.pth"},
    "IMAGENET1K_V2")


def mobilenet_v2(*, weights=None, progress=True, **kwargs) -> MobileNetV2:
    handle_weights("mobilenet_v2", weights, kwargs)
    return MobileNetV2(**kwargs)
