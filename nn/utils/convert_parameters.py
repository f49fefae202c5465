"""``parameters_to_vector`` and ``vector_to_parameters``, as ``torch.nn.utils``'s: all the
parameters as one flat vector (differentiable), and back."""
from __future__ import annotations

from .. import autograd
from ..functions import cat
from ..tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_device(param, device):
    """The device of the first parameter; every other must be on it (PyTorch's TypeError)."""
    if device is None:
        return param.device
    if param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not "
                        "supported.")
    return device


def parameters_to_vector(parameters):
    """One 1-d tensor of every parameter's values, flattened and concatenated in order; it
    is in the graph (gradients flow back to the parameters)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    device, flat = None, []
    for param in parameters:
        device = _check_device(param, device)
        flat.append(param.reshape(-1))
    if not flat:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    return cat(flat)


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of the 1-d ``vec`` into ``parameters`` (their ``.data``, as
    PyTorch's: outside the graph)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    total = sum(p.numel() for p in parameters)
    if vec.ndim != 1 or vec.numel() < total:
        raise RuntimeError(f"vector_to_parameters: expected a 1-d vector of at least {total} "
                           f"elements (the parameters' total), got shape {list(vec.shape)}")
    device, pointer = None, 0
    with autograd.no_grad():
        for param in parameters:
            device = _check_device(param, device)
            n = param.numel()
            param.data = vec[pointer:pointer + n].reshape(param.shape).detach()
            pointer += n
