"""Packed weights of the quantized Linear and Conv2d, and the calls of their te kernels
(``nn.ops.quantized``: one kernel per product, the requantization fused).

``PackedWeight`` holds a qint8 weight (per tensor or per output channel), its float bias, the
packed int8 layout and the weight row sums (both computed once by te kernels); ``run`` takes a
quint8 input and the output parameters, prepares the per-channel epilogue values for the
input's scale (O(channels) host arithmetic, PyTorch's float32 formulas) and runs the kernel.

``PATH`` picks the product's instructions (``nn.ops.quantized.host_path``, detected when this
module is imported: ``vnni``, ``pmaddwd``, ``pmaddwd256`` (AVX2 hosts) or ``plain``; the
environment variable ``NN_QUANTIZED_PATH`` overrides it); ``set_path`` changes it (the tests
run every path the host can). The packed layout follows the path (4 or 2 reduction values
per lane), packed again on first use when the path changes.
"""
from __future__ import annotations

import functools
import os

import numpy as np

from nn.ops import cpu
from nn.ops import quantized as qops
from nn.ops import quantized_conv as qconv

from ..functions import base
from ..tensor import Tensor
from .dtypes import per_tensor_affine, qint8, quint8
from .kernels import quantize_multiplier
from .qtensor import QTensor

MODES = ("float", "integer")
PATH = os.environ.get("NN_QUANTIZED_PATH") or qops.host_path()


def available_paths() -> tuple:
    """The paths this host can run, fastest first."""
    return qops.host_paths()


def set_path(path: str) -> str:
    """Run the products on ``path`` (one of ``available_paths()``). Returns the previous
    path."""
    global PATH
    if path not in qops.PATHS:
        raise ValueError(f"set_path: path must be one of {qops.PATHS}, got {path!r}")
    if path not in available_paths():
        raise RuntimeError(f"set_path: this host's CPU cannot run the {path!r} path (it runs "
                           f"{', '.join(available_paths())})")
    old, PATH = PATH, path
    return old


@functools.lru_cache(maxsize=None)
def _schedule(path, conv=False):
    return functools.partial(qconv.schedule_qconv2d if conv else qops.schedule_qgemm,
                             path=path)


def _f32(v):
    return np.float32(v)


class PackedWeight:
    """A quantized weight (OC, K...) with its bias, packed for ``groups`` groups."""

    def __init__(self, weight: QTensor, bias, groups=1):
        if not isinstance(weight, QTensor) or weight.dtype != qint8:
            raise RuntimeError("quantized weights must be a quantized tensor of dtype "
                               f"nn.qint8, got {getattr(weight, 'dtype', type(weight).__name__)}")
        if weight.qscheme() is not per_tensor_affine and weight.q_per_channel_axis() != 0:
            raise RuntimeError("quantized weights quantized per channel must use axis 0 (the "
                               f"output channels), got axis {weight.q_per_channel_axis()}")
        oc = weight.shape[0]
        if bias is not None:
            bias = bias.detach() if isinstance(bias, Tensor) else Tensor(np.asarray(bias))
            if bias.shape != (oc,):
                raise RuntimeError(f"bias should have shape ({oc},) (one value per output "
                                   f"channel), got {tuple(bias.shape)}")
            bias = base.cast(bias, "float32")
        self.weight, self.bias, self.groups = weight, bias, int(groups)
        self.out_channels = oc
        data = weight._int.contiguous()._data
        ints = data.reshape(oc, -1)
        self.k = ints.shape[1]
        self._packs = {}
        self.pack(qops.K_BLOCK[PATH])
        self.colsum = cpu.build(qops.weight_sums, [ints.shape], "int8")(ints)
        base.kernel_calls["qweight_sums"] += 1
        if weight.qscheme() is per_tensor_affine:
            self.w_scales = np.full(oc, weight.q_scale(), "float64")
            self.w_zps = np.full(oc, weight.q_zero_point(), "int32")
            self.per_channel = False
        else:
            self.w_scales = weight._scales.astype("float64")
            self.w_zps = weight._zero_points.astype("int32")
            self.per_channel = True

    def pack(self, kb):
        """The int8 weights packed with ``kb`` reduction values per lane (a te kernel, once
        per layout)."""
        if kb not in self._packs:
            data = self.weight._int.contiguous()._data
            if data.ndim == 4:          # a conv's weights (OC, C / groups, KH, KW)
                packed = cpu.build(qconv.pack_conv_weight, [data.shape], "int8",
                                   groups=self.groups, kb=kb)(data)
            else:
                ints = data.reshape(self.out_channels, -1)
                packed = cpu.build(qops.pack_weight, [ints.shape], "int8",
                                   groups=self.groups, kb=kb)(ints)
            base.kernel_calls["qpack"] += 1
            self._packs[kb] = packed
        return self._packs[kb]

    def __getstate__(self):
        """Copies (``copy.deepcopy`` of a converted model) leave the compiled kernels out:
        they are found again in the build cache."""
        state = dict(self.__dict__)
        state.pop("_fns", None)
        return state

    def epilogue(self, x_scale, out_scale, mode):
        """``(ich, fch)`` of ``nn.ops.quantized`` for an input of scale ``x_scale`` (the
        last few kept: a calibrated model calls with the same scales every time)."""
        key = (float(x_scale), float(out_scale), mode)
        cache = self.__dict__.setdefault("_epilogues", {})
        if key not in cache:
            if len(cache) >= 8:
                cache.pop(next(iter(cache)))
            cache[key] = self._epilogue(*key)
        return cache[key]

    def _epilogue(self, x_scale, out_scale, mode):
        oc = self.out_channels
        ich = np.zeros((5, oc), "int32")
        ich[0], ich[1] = self.colsum, self.w_zps
        fch = np.zeros((2, oc), "float32")
        bias = None if self.bias is None else self.bias._data.astype("float32")
        atws = _f32(x_scale) * self.w_scales.astype("float32")          # f32(sx * sw)
        if mode == "float":
            fch[1] = atws / _f32(out_scale)                                # PyTorch's mult
            if bias is not None:
                if self.per_channel:
                    fch[0] = bias / atws
                else:           # fbgemm's reciprocal, computed in double
                    fch[0] = bias * np.float32(1.0 / np.float64(atws[0]))
        else:
            real = np.float64(x_scale) * self.w_scales
            if bias is not None:
                qb = np.rint(bias.astype("float64") / real)
                ich[2] = np.clip(qb, -2 ** 31, 2 ** 31 - 1).astype("int32")
            for c in range(oc):
                ich[3, c], ich[4, c] = quantize_multiplier(float(real[c] / out_scale))
        return ich, fch

    def run(self, x: QTensor, scale, zero_point, relu, mode, conv=None):
        """The kernel on quint8 ``x``: ``conv`` is None (linear, x 2-d) or the conv2d
        parameters ``(kernel, stride, padding, dilation)``; returns the output integers."""
        ich, fch = self.epilogue(x.q_scale(), scale, mode)
        p = np.array([x.q_zero_point(), zero_point], "float64")
        data = x._int._data
        channels_last = False
        if conv is not None and not data.flags.c_contiguous and \
                data.transpose(0, 2, 3, 1).flags.c_contiguous:
            data, channels_last = data.transpose(0, 2, 3, 1), True    # NHWC in memory
        elif not data.flags.c_contiguous:
            data = x._int.contiguous()._data
        arrays = (data, self.pack(qops.K_BLOCK[PATH]), ich, fch, p)
        key = (data.shape, mode, bool(relu), conv, PATH, channels_last)
        fns = self.__dict__.setdefault("_fns", {})
        f = fns.get(key)
        if f is None:
            f = fns[key] = self._build(key, [a.shape for a in arrays])
        base.kernel_calls["qlinear" if conv is None else "qconv2d"] += 1
        out = f(*arrays)
        if conv is None:
            n = self.out_channels
            return out if out.shape[1] == n else Tensor(out[:, :n]).contiguous()._data
        # (N, OH, OWp, G, Np), channels last: the padding cropped by a te copy kernel, the
        # result an NCHW view of NHWC memory (as PyTorch's channels-last output)
        n = self.out_channels // self.groups
        ow = conv_width(x.shape[3], conv)
        if out.shape[4] != n or out.shape[2] != ow:
            out = Tensor(out[:, :, :ow, :, :n]).contiguous()._data
        nb, oh = out.shape[:2]
        return out.reshape(nb, oh, ow, self.out_channels).transpose(0, 3, 1, 2)

    def _build(self, key, shapes):
        _, mode, relu, conv, path, channels_last = key
        common = dict(mode=mode, relu=relu, has_wzp=bool(np.any(self.w_zps != 0)))
        dts = ["uint8", "int8", "int32", "float32", "float64"]
        if conv is None:
            return cpu.build(qops.qlinear, shapes, dts, schedule=_schedule(path),
                             out_features=self.out_channels, **common)
        kernel, stride, padding, dilation = conv
        return cpu.build(qconv.qconv2d, shapes, dts, schedule=_schedule(path, True),
                         out_channels=self.out_channels, kernel=tuple(kernel),
                         stride=tuple(stride), padding=tuple(padding),
                         dilation=tuple(dilation), groups=self.groups,
                         channels_last=channels_last, **common)


def conv_width(width, conv):
    """The output width of a conv2d of input width ``width``."""
    kernel, stride, padding, dilation = conv
    return (width + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1


def check_input(x, what, dtype=quint8):
    """``x`` must be a per-tensor quantized tensor of ``dtype`` (PyTorch's errors)."""
    if not isinstance(x, QTensor):
        raise NotImplementedError(
            f"Could not run '{what}' with arguments from the 'CPU' backend. This could be "
            f"because the operator doesn't exist for this backend: {what} takes a quantized "
            "tensor; quantize the input first (nn.quantize_per_tensor, or a QuantStub "
            "before the quantized module)")
    if x.dtype != dtype:
        raise RuntimeError(f"{what}: expected the input to be of dtype {dtype!r} (as PyTorch's "
                           f"x86 kernels: activations are quint8), got {x.dtype!r}")
    if x.qscheme() is not per_tensor_affine:
        raise RuntimeError(f"{what}: the input must be quantized per tensor")
    return x


def check_mode(mode, what):
    if mode not in MODES:
        raise ValueError(f"{what}: argument 'mode' must be 'float' or 'integer', got {mode!r}")
