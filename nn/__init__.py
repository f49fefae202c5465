"""tensorweave's PyTorch-shaped layer: Tensor, autograd, and compiled operators (issue 5).

``nn.tensor``, the factories and ``nn.Tensor`` live in ``nn.tensor``; the graph machinery in
``nn.autograd``; the differentiable operators, each a compiled te kernel, in ``nn.functional``.
"""
from .tensor import (Tensor, arange, from_numpy, full, manual_seed, ones, ones_like, rand, randn,
                     tensor, zeros, zeros_like)
from . import autograd, functional  # noqa: E402  (after tensor, which they build on)
from .autograd import enable_grad, is_grad_enabled, no_grad
from .functional import (add, div, exp, log, matmul, mean, mul, neg, pow, relu, sigmoid, sqrt,
                         sub, sum, tanh)
from . import modules  # noqa: E402  (layers on top of the tensor and its operators)
from .modules import (Identity, Linear, Module, ModuleDict, ModuleList, Parameter, ReLU,
                      Sequential, Sigmoid, Tanh)
