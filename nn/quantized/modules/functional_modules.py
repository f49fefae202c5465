"""``FloatFunctional`` and ``QFunctional``, as PyTorch's ``torch.ao.nn.quantized``: modules
that stand for ``add`` / ``add_relu`` / ``mul`` / ``cat`` / ``add_scalar`` / ``mul_scalar`` so
that the quantization flow can observe them (float model) and give them their output
parameters (``QFunctional.scale`` / ``.zero_point``, quantized model)."""
from __future__ import annotations

from ...functions import shape as shape_ops
from ...functions.activation import relu
from ...modules.linear import Identity
from ...modules.module import Module
from .. import functional as qF
from .utils import QuantizedModule

__all__ = ["FloatFunctional", "QFunctional"]


class FloatFunctional(Module):
    """The float operators, each result passed through ``activation_post_process`` (an
    observer once the model is prepared; ``Identity`` before)."""

    def __init__(self):
        super().__init__()
        self.activation_post_process = Identity()

    def forward(self, x):
        raise RuntimeError("FloatFunctional is not intended to use the 'forward'. Please use "
                           "the underlying operation (add, cat, mul, add_relu, add_scalar, "
                           "mul_scalar)")

    def add(self, x, y):
        return self.activation_post_process(x + y)

    def add_scalar(self, x, y):
        return x + y        # not observed: the quantized op chooses its parameters

    def mul(self, x, y):
        return self.activation_post_process(x * y)

    def mul_scalar(self, x, y):
        return x * y        # not observed, as add_scalar

    def cat(self, x, dim=0):
        return self.activation_post_process(shape_ops.cat(x, dim))

    def add_relu(self, x, y):
        return self.activation_post_process(relu(x + y))


class QFunctional(QuantizedModule):
    """The quantized operators, giving outputs of parameters ``(self.scale,
    self.zero_point)``; ``mode`` ("float" or "integer") picks the requantization
    arithmetic (see ``nn.quantization.requantize``)."""

    def __init__(self):
        super().__init__()
        self.scale = 1.0
        self.zero_point = 0
        self.mode = "float"
        self.activation_post_process = Identity()

    def _get_name(self):
        return "QFunctional"

    def extra_repr(self):
        return f"scale={self.scale}, zero_point={self.zero_point}"

    def forward(self, x):
        raise RuntimeError("Functional is not intended to use the 'forward'. Please use the "
                           "underlying operation")

    def add(self, x, y):
        return self.activation_post_process(qF.add(x, y, self.scale, self.zero_point,
                                                   self.mode))

    def add_scalar(self, x, y):
        return qF.add_scalar(x, y, self.mode)

    def mul(self, x, y):
        return self.activation_post_process(qF.mul(x, y, self.scale, self.zero_point,
                                                   self.mode))

    def mul_scalar(self, x, y):
        return qF.mul_scalar(x, y)

    def cat(self, x, dim=0):
        return self.activation_post_process(qF.cat(x, self.scale, self.zero_point, dim,
                                                   self.mode))

    def add_relu(self, x, y):
        return self.activation_post_process(qF.add_relu(x, y, self.scale, self.zero_point,
                                                        self.mode))

    @classmethod
    def from_float(cls, mod):
        """The QFunctional of a calibrated FloatFunctional: its observer's parameters."""
        if type(mod) is not FloatFunctional:
            raise TypeError(f"QFunctional.from_float expects a FloatFunctional, got "
                            f"{type(mod).__name__}")
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        new = cls()
        new.scale, new.zero_point = float(scale), int(zero_point)
        return new
