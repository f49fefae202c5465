"""Containers, as PyTorch's: Sequential, ModuleList and ModuleDict of modules; ParameterList
and ParameterDict of parameters (tensors put in them become Parameters)."""
from __future__ import annotations

import collections
import collections.abc
import operator

from ..tensor import Tensor
from .module import Module, Parameter, _addindent

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _index(idx, size):
    """``idx`` as an index in ``[0, size)``, or PyTorch's IndexError."""
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx % size


def _renumber(module):
    """Keys 0, 1, ... again after a deletion, as PyTorch keeps them."""
    module._modules = collections.OrderedDict(
        (str(i), m) for i, m in enumerate(module._modules.values()))


class Sequential(Module):
    """Modules called in order, each on the output of the one before.

    ``Sequential(a, b)`` names them "0", "1"; ``Sequential(OrderedDict(name=module))`` keeps the
    names.
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], collections.OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(collections.OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(idx, len(self))]

    def __setitem__(self, idx, module):
        key = list(self._modules)[_index(idx, len(self))]
        setattr(self, key, module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(self))]]):
            delattr(self, key)
        _renumber(self)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for module in modules:
            self.append(module)
        return self

    def insert(self, index, module):
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules = collections.OrderedDict()
        for i, m in enumerate(modules):
            self.add_module(str(i), m)
        return self

    def pop(self, key):
        """Remove the module at index ``key`` (the rest are renumbered) and return it."""
        module = self[key]
        del self[key]
        return module

    @staticmethod
    def _addend(other):
        """``other`` for ``+`` and ``+=``: a Sequential, with PyTorch's error otherwise."""
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return other

    def __add__(self, other):
        """A new Sequential of this one's modules then ``other``'s (the same objects)."""
        return Sequential(*self, *self._addend(other))

    def __iadd__(self, other):
        return self.extend(list(self._addend(other)))

    def _repeats(self, other):
        """``other`` as a repeat count for ``*``, with PyTorch's errors."""
        if isinstance(other, bool) or not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and "
                            f"{type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        return other

    def __mul__(self, other):
        """A new Sequential of this one's modules repeated ``other`` times (the same
        objects, so the repeats share their parameters)."""
        return Sequential(*(list(self) * self._repeats(other)))

    __rmul__ = __mul__

    def __imul__(self, other):
        return self.extend(list(self) * (self._repeats(other) - 1))

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered under "0", "1", ...; it has no forward of its own."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self)))]

    def __setitem__(self, idx, module):
        setattr(self, str(_index(idx, len(self))), module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(self))]]):
            delattr(self, key)
        _renumber(self)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        """A new ModuleList of this one's modules then ``other``'s (the same objects)."""
        return ModuleList(list(self)).extend(other)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        if not isinstance(modules, collections.abc.Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got "
                            + type(modules).__name__)
        for module in modules:
            self.append(module)
        return self

    def insert(self, index, module):
        """Insert ``module`` before ``index`` (list.insert's rule for indices out of range)."""
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules = collections.OrderedDict()
        for i, m in enumerate(modules):
            self.add_module(str(i), m)

    def pop(self, key):
        """Remove the module at index ``key`` (the rest are renumbered) and return it."""
        module = self[key]
        del self[key]
        return module

    def __repr__(self):
        """Runs of equal modules print once, as PyTorch's ``(0-2): 3 x Linear(...)``."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        lines, start = [], 0
        for end in range(1, len(reprs) + 1):
            if end < len(reprs) and reprs[end] == reprs[start]:
                continue
            text = _addindent(reprs[start], 2)
            if end - start == 1:
                lines.append(f"({start}): {text}")
            else:
                lines.append(f"({start}-{end - 1}): {end - start} x {text}")
            start = end
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """A dict of modules, registered under their keys in insertion order."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        self._modules.clear()

    def pop(self, key):
        module = self[key]
        del self[key]
        return module

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        """Add ``modules``: a mapping, or an iterable of (key, module) pairs."""
        if isinstance(modules, (collections.abc.Mapping, ModuleDict)):
            items = modules.items()
        elif isinstance(modules, collections.abc.Iterable):
            items = []
            for j, pair in enumerate(modules):
                if not isinstance(pair, collections.abc.Iterable) or len(pair) != 2:
                    raise ValueError(f"ModuleDict update sequence element #{j} should be an "
                                     "iterable of length 2")
                items.append(pair)
        else:
            raise TypeError("ModuleDict.update should be called with an iterable of key/value "
                            "pairs, but got " + type(modules).__name__)
        for key, module in items:
            self[key] = module


def _tensor_repr(value):
    """A ParameterList/Dict entry as PyTorch prints it: kind, dtype and size, not values."""
    if isinstance(value, Tensor):
        kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
        size = "x".join(str(n) for n in value.shape)
        return f"{kind} containing: [{value.dtype} of size {size}]"
    return f"Object of type: {type(value).__name__}"


def _as_parameter(value):
    """Tensors stored in a ParameterList/Dict become Parameters (on the same storage)."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


class ParameterList(Module):
    """A list of parameters, registered under "0", "1", ... (so ``parameters()`` and
    ``state_dict`` see them); other objects may be stored too, as PyTorch allows."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)([self[i] for i in range(len(self))[idx]])
        return getattr(self, str(_index(idx, len(self))))

    def __setitem__(self, idx, param):
        setattr(self, str(_index(idx, len(self))), _as_parameter(param))

    def __setattr__(self, name, value):
        if isinstance(value, Parameter) or name.isdigit():
            value = _as_parameter(value)
        super().__setattr__(name, value)

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def append(self, value):
        """Add ``value`` at the end (a tensor becomes a Parameter); returns self."""
        self._size += 1
        self[len(self) - 1] = value
        return self

    def extend(self, values):
        if not isinstance(values, collections.abc.Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        return "\n".join(f"  ({k}): {_tensor_repr(p)}" for k, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """A dict of parameters, registered under their (string) keys in insertion order."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def _key(self, key):
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict keys must be strings, got {type(key).__name__}")
        return key

    def __getitem__(self, key):
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key, value):
        self._keys[self._key(key)] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(list(self._keys))

    def __contains__(self, key):
        return key in self._keys

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def popitem(self):
        """Remove and return the last (key, parameter) pair."""
        key = next(reversed(self))
        return key, self.pop(key)

    def clear(self):
        for key in list(self._keys):
            del self[key]

    def copy(self):
        """A new ParameterDict with the same parameters (not copies of them)."""
        return ParameterDict(collections.OrderedDict((k, self[k]) for k in self._keys))

    def fromkeys(self, keys, default=None):
        return ParameterDict((k, default) for k in keys)

    def update(self, values):
        """Add ``values``: a mapping, or an iterable of (key, parameter) pairs."""
        if isinstance(values, (collections.abc.Mapping, ParameterDict)):
            items = values.items()
        elif isinstance(values, collections.abc.Iterable):
            items = []
            for j, pair in enumerate(values):
                if not isinstance(pair, collections.abc.Iterable) or len(pair) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} should be an "
                                     "iterable of length 2")
                items.append(pair)
        else:
            raise TypeError("ParametersDict.update should be called with an iterable of "
                            "key/value pairs, but got " + type(values).__name__)
        for key, value in items:
            self[key] = value

    def __or__(self, other):
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other):
        merged = ParameterDict(other)
        merged.update(self)
        return merged

    def __ior__(self, other):
        self.update(other)
        return self

    def extra_repr(self):
        return "\n".join(f"  ({k}): {_tensor_repr(p)}" for k, p in self.items())

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called.")
