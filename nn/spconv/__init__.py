"""Sparse convolution with spconv 2.x's API (``spconv.pytorch`` -> ``nn.spconv``).

``SparseConvTensor`` holds the active sites; each layer runs under a rulebook (for every
kernel offset, the pairs of input and output sites it connects; nn/spconv/rulebook.py, and
for cuda features nn/spconv/rulebook_gpu.py, built on the device) as gather -> GEMM ->
segmented scatter-add kernels written in te (nn/ops/spconv.py), with gradients for the
features and the weights, on CPU and cuda tensors.
"""
from .conv import *  # noqa: F401,F403
from .modules import *  # noqa: F401,F403
from .rulebook import build_rulebook  # noqa: F401
from .rulebook_gpu import build_rulebook_gpu  # noqa: F401
from .tensor import IndiceData, SparseConvTensor  # noqa: F401
from . import conv, modules  # noqa: E402

__all__ = ["SparseConvTensor", "IndiceData", "build_rulebook", "build_rulebook_gpu"] + \
    conv.__all__ + modules.__all__
