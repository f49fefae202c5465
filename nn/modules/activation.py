"""Activation layers, as PyTorch's: each calls its function in ``nn.functional`` and prints
its arguments as PyTorch's ``extra_repr`` does. ``inplace=True`` overwrites the input, which is
allowed, as in-place ops are here, only outside the autograd graph (under ``nn.no_grad()`` or
on tensors that do not require grad)."""
from __future__ import annotations

from .. import functional as F
from ..tensor import full, get_default_dtype
from .module import Module, Parameter

__all__ = ["ReLU", "Sigmoid", "Tanh", "LeakyReLU", "PReLU", "ELU", "SELU", "CELU", "GELU",
           "SiLU", "Mish", "Hardtanh", "ReLU6", "Hardsigmoid", "Hardswish", "Softplus",
           "Softsign", "LogSigmoid", "Threshold", "GLU", "Softmax", "LogSoftmax", "Softmin",
           "Hardshrink", "Softshrink", "Tanhshrink"]


def _inplace_repr(inplace):
    return "inplace=True" if inplace else ""


class ReLU(Module):
    """max(x, 0)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu_(input) if self.inplace else F.relu(input)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class Sigmoid(Module):
    """1 / (1 + exp(-x))."""

    def forward(self, input):
        return F.sigmoid(input)


class Tanh(Module):
    """tanh(x)."""

    def forward(self, input):
        return F.tanh(input)


class LeakyReLU(Module):
    """x where positive, else ``negative_slope * x``."""

    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace
                                                          else "")


class PReLU(Module):
    """x where positive, else ``weight * x``; a learned slope, one or one per channel."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(full((num_parameters,), float(init),
                                     dtype=dtype or get_default_dtype()))
        if device is not None:
            self.to(device=device)

    def reset_parameters(self):
        self.weight._data[...] = self.init

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class _Elu(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class ELU(_Elu):
    """x where positive, else ``alpha * (exp(x) - 1)``."""

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)


class CELU(_Elu):
    """x where positive, else ``alpha * (exp(x / alpha) - 1)``."""

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class _InplaceOnly(Module):
    """A layer whose only argument is ``inplace``; ``function`` names the functional form."""
    function = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return getattr(F, self.function)(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class SELU(_InplaceOnly):
    """``scale * elu(x, alpha)`` with the self-normalizing constants."""
    function = "selu"


class SiLU(_InplaceOnly):
    """x * sigmoid(x)."""
    function = "silu"


class Mish(_InplaceOnly):
    """x * tanh(softplus(x))."""
    function = "mish"


class Hardsigmoid(_InplaceOnly):
    """relu6(x + 3) / 6."""
    function = "hardsigmoid"

    def extra_repr(self):
        return ""


class Hardswish(_InplaceOnly):
    """x * relu6(x + 3) / 6."""
    function = "hardswish"

    def extra_repr(self):
        return ""


class GELU(Module):
    """x * Phi(x), or its tanh approximation (``approximate="tanh"``)."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Hardtanh(Module):
    """x clamped to [min_val, max_val]."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if min_val > max_val:
            raise ValueError("min_val cannot be greater than max_val")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (
            ", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    """min(max(x, 0), 6)."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear above ``threshold``."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Softsign(Module):
    """x / (1 + |x|)."""

    def forward(self, input):
        return F.softsign(input)


class LogSigmoid(Module):
    """log(sigmoid(x))."""

    def forward(self, input):
        return F.logsigmoid(input)


class Threshold(Module):
    """x where ``x > threshold``, else ``value``."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + (
            ", inplace=True" if self.inplace else "")


class Hardshrink(Module):
    """x where ``|x| > lambd``, else 0."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """x - lambd above ``lambd``, x + lambd below ``-lambd``, else 0."""

    def forward(self, input):
        return F.softshrink(input, self.lambd)


class Tanhshrink(Module):
    """x - tanh(x)."""

    def forward(self, input):
        return F.tanhshrink(input)


class GLU(Module):
    """a * sigmoid(b) for the halves a, b of the input along ``dim``."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class _AlongDim(Module):
    function = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return getattr(F, self.function)(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_AlongDim):
    """exp(x) / sum(exp(x)) along ``dim``."""
    function = "softmax"


class LogSoftmax(_AlongDim):
    """log(softmax(x)) along ``dim``."""
    function = "log_softmax"


class Softmin(_AlongDim):
    """softmax(-x) along ``dim``."""
    function = "softmin"
