"""``nn.backends``, as ``torch.backends``: the flags PyTorch scripts set (``cudnn``) and the
queries they make (``cuda``, ``mps``, ``mkldnn``, ``openmp``). nn compiles its own kernels (te ->
LLVM / numba.cuda) and calls no cuDNN, so the cuDNN flags are recorded, not acted on."""
from . import cudnn, cuda, mps, mkldnn, openmp  # noqa: F401

__all__ = ["cudnn", "cuda", "mps", "mkldnn", "openmp"]
