"""nn.Parameter and the placeholders of lazy modules, as PyTorch's ``torch.nn.parameter`` has
them. ``UninitializedParameter`` and ``UninitializedBuffer`` hold the place of a lazy module's
parameters and buffers until their shapes are known; any use of their shape or values is an
error until ``materialize``. ``nn.modules.module`` exports these names.
"""
from __future__ import annotations

import numpy as np

from ..device import move
from ..tensor import Tensor, _check_device, dtype_name, get_default_dtype

__all__ = ["Parameter", "UninitializedParameter", "UninitializedBuffer"]


class Parameter(Tensor):
    """A Tensor that a Module registers as a parameter when assigned to one of its attributes.

    ``Parameter(t)`` shares ``t``'s storage and requires grad unless ``requires_grad=False``.
    """

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = np.empty((0,), dtype="float32")
        elif isinstance(data, Tensor):
            data = data._data
        elif not isinstance(data, np.ndarray):
            raise TypeError(f"Parameter expects a Tensor, not {type(data).__name__}")
        super().__init__(data, requires_grad=requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


UNINITIALIZED = ("Can't access the shape or values of an uninitialized parameter. Call the "
                 "module's forward once (lazy modules infer their shapes from the first input) "
                 "or load a state_dict before using its parameters.")


class _UninitializedTensor:
    """What ``UninitializedParameter`` and ``UninitializedBuffer`` share, as PyTorch's
    ``UninitializedTensorMixin``: a dtype and a device, and any use of the shape or values
    is an error until ``materialize`` gives the tensor a shape and turns it into
    ``cls_to_become``."""
    cls_to_become = Tensor

    def _init_lazy(self, device, dtype):
        self._lazy_device = _check_device(device)
        self._lazy_dtype = dtype_name(dtype or get_default_dtype())
        return np.empty((0,), self._lazy_dtype)

    @property
    def _data(self):
        raise RuntimeError(UNINITIALIZED)

    @_data.setter
    def _data(self, value):
        self.__dict__["_data"] = value

    @property
    def dtype(self):
        return self._lazy_dtype

    def detach(self):
        return self

    def materialize(self, shape, device=None, dtype=None):
        """Give the tensor its ``shape`` (values unset): it becomes ``cls_to_become``."""
        device = self._lazy_device if device is None else _check_device(device)
        data = np.empty(tuple(shape), dtype_name(dtype or self._lazy_dtype))
        self.__dict__["_data"] = move(data, device)
        self.__class__ = self.cls_to_become

    def __repr__(self):
        return f"<{type(self).__name__}>"


class UninitializedParameter(_UninitializedTensor, Parameter):
    """The parameter of a lazy module before its shape is known: it has a dtype and
    ``requires_grad``, and any use of its shape or values is an error until ``materialize``
    turns it into a ``Parameter``."""
    cls_to_become = Parameter

    def __init__(self, requires_grad=True, device=None, dtype=None):
        Parameter.__init__(self, self._init_lazy(device, dtype), requires_grad)


class UninitializedBuffer(_UninitializedTensor, Tensor):
    """The buffer of a lazy module (a lazy batch norm's running statistics) before its shape
    is known; ``materialize`` (or ``load_state_dict``) turns it into a Tensor."""
    cls_to_become = Tensor

    def __init__(self, requires_grad=False, device=None, dtype=None):
        Tensor.__init__(self, self._init_lazy(device, dtype), requires_grad=requires_grad)
