"""nn's Module system and layers, as PyTorch's ``torch.nn`` has them (issue 5)."""
from .module import Module, Parameter
from .container import ModuleDict, ModuleList, Sequential
from .linear import Identity, Linear
from .activation import ReLU, Sigmoid, Tanh

__all__ = ["Module", "Parameter", "Sequential", "ModuleList", "ModuleDict", "Identity",
           "Linear", "ReLU", "Sigmoid", "Tanh"]
