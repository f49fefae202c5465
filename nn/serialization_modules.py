"""Whole modules in checkpoints (``nn.save(model)``) without pickle: a module is written as a
reference to its class (``"package.module:QualName"``), its plain attributes (numbers, strings,
bools, None, tuples/lists/dicts of these, references to classes and functions), its parameters
and buffers (tensors) and its children, recursively.

``nn.load`` rebuilds such a file only when called with ``weights_only=False`` and only from
classes it may trust: nn's own (already imported, looked up, never imported) and those the
user puts on the allow-list with ``add_safe_globals``. A module is rebuilt as pickle would
rebuild it (``cls.__new__`` and the base ``Module.__init__``; the class's own ``__init__`` is not
run) and its attributes, tensors and children are set from the file's data. A name that is not
trusted is refused before anything is built, and nothing named by the file is imported.
"""
from __future__ import annotations

import contextlib
import sys

__all__ = ["add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "UnsafeCheckpointError"]

_SAFE = {}              # "module:qualname" -> the object


class UnsafeCheckpointError(ValueError):
    """A checkpoint names code (a class or function) that this load may not trust."""


def _name(obj) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


def add_safe_globals(safe_globals):
    """Allow ``nn.load(..., weights_only=False)`` to rebuild these classes (and use these
    functions as attributes): a list of objects, or ``(object, "module:qualname")`` pairs."""
    for entry in safe_globals:
        obj, name = entry if isinstance(entry, tuple) else (entry, None)
        if not (isinstance(obj, type) or callable(obj)):
            raise TypeError(f"add_safe_globals: expected classes or functions, got {obj!r}")
        _SAFE[name or _name(obj)] = obj


def get_safe_globals():
    return list(_SAFE.values())


def clear_safe_globals():
    _SAFE.clear()


@contextlib.contextmanager
def safe_globals(entries):
    """``with nn.serialization.safe_globals([MyNet]):`` allows them inside the block only."""
    saved = dict(_SAFE)
    add_safe_globals(entries)
    try:
        yield
    finally:
        _SAFE.clear()
        _SAFE.update(saved)


# ----------------------------------------------------------------------------- save

_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
_INTERNAL = {"training", "_parameters", "_buffers", "_modules", "_non_persistent_buffers_set",
             "_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs", *_HOOKS}


def _global(obj, path):
    qualname = getattr(obj, "__qualname__", "")
    if "<locals>" in qualname or "<lambda>" in qualname or not getattr(obj, "__module__", None):
        raise TypeError(f"{path}: cannot save {obj!r}: nn.save(model) refers to classes and "
                        "functions by their importable names, and this one is defined inside a "
                        "function (or is a lambda); define it at module level, or save "
                        "model.state_dict() instead")
    return {"type": "global", "name": _name(obj)}


def _attribute(writer, value, path):
    if isinstance(value, type) or (callable(value) and hasattr(value, "__qualname__")
                                   and not hasattr(value, "forward")):
        return _global(value, path)
    if isinstance(value, str) and type(value) is not str:       # nn.dtype and other str kinds
        return writer.encode(str(value), path)
    if type(value) in (list, tuple, dict):
        kind = type(value).__name__
        if kind == "dict":
            return {"type": "attr_dict", "items": [[writer._key(k, path),
                                                    _attribute(writer, v, f"{path}[{k!r}]")]
                                                   for k, v in value.items()]}
        return {"type": "attr_" + kind, "items": [_attribute(writer, v, f"{path}[{i}]")
                                                  for i, v in enumerate(value)]}
    return writer.encode(value, path)


def encode_module(writer, module, path):
    """The node of ``module`` (called by the writer for Module objects)."""
    for hooks in _HOOKS:
        if module.__dict__.get(hooks):
            raise TypeError(f"{path}: cannot save a module with {hooks[1:]} registered (hooks "
                            "are code); remove them (handle.remove()) or save state_dict()")
    cls = type(module)
    _global(cls, path)
    writer._check_depth(path)
    writer.depth += 1
    try:
        attrs = [[k, _attribute(writer, v, f"{path}.{k}")] for k, v in module.__dict__.items()
                 if k not in _INTERNAL]
        params = [[k, None if p is None else {"tensor": writer.encode(p, f"{path}.{k}"),
                                              "requires_grad": bool(p.requires_grad)}]
                  for k, p in module._parameters.items()]
        buffers = [[k, writer.encode(b, f"{path}.{k}")] for k, b in module._buffers.items()]
        children = [[k, None if m is None else encode_module(writer, m, f"{path}.{k}")]
                    for k, m in module._modules.items()]
    finally:
        writer.depth -= 1
    return {"type": "module", "class": _name(cls), "training": bool(module.training),
            "attrs": attrs, "parameters": params, "buffers": buffers,
            "non_persistent": sorted(module._non_persistent_buffers_set), "modules": children}


# ----------------------------------------------------------------------------- load

def _resolve(name, reader, path):
    """The trusted object ``name`` names: on the allow-list, or nn's own (already imported;
    nothing is imported here)."""
    if name in _SAFE:
        return _SAFE[name]
    module_name, _, qualname = name.partition(":")
    own = module_name == "nn" or module_name.startswith("nn.")
    module = sys.modules.get(module_name) if own else None
    if module is not None and qualname and "<" not in qualname:
        obj = module
        for part in qualname.split("."):
            obj = getattr(obj, part, None)
        if obj is not None and _name(obj) == name:
            return obj
    raise UnsafeCheckpointError(
        f"nn.load: {reader.name}: {path} names {name}, which is not on the allow-list; if you "
        f"trust this file, allow it first: nn.serialization.add_safe_globals([{qualname or name}])"
        " (nn.load imports and runs nothing a file names)")


def decode_attribute(reader, node, path, depth):
    kind = node.get("type") if isinstance(node, dict) else None
    if kind == "global":
        return _resolve(reader.field(node, "name", path, str), reader, path)
    if kind in ("attr_list", "attr_tuple"):
        items = [decode_attribute(reader, v, f"{path}[{i}]", depth + 1)
                 for i, v in enumerate(reader.field(node, "items", path, list))]
        return items if kind == "attr_list" else tuple(items)
    if kind == "attr_dict":
        out = {}
        for i, pair in enumerate(reader.field(node, "items", path, list)):
            if type(pair) is not list or len(pair) != 2:
                reader.fail(f"{path}'s item {i} is not a [key, value] pair")
            out[reader.key(pair[0], path, depth + 1)] = decode_attribute(reader, pair[1], path,
                                                                         depth + 1)
        return out
    return reader.decode(node, path, depth + 1)


def _pairs(reader, node, key, path):
    pairs = reader.field(node, key, path, list)
    for pair in pairs:
        if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str:
            reader.fail(f"{path}'s {key!r} holds {pair!r:.60}, not a [name, value] pair")
    return pairs


def decode_module(reader, node, path, depth=0):
    """Rebuild a module node (the reader calls this for ``weights_only=False`` loads)."""
    from .modules.module import Module, Parameter
    from .tensor import Tensor
    if depth >= 100:
        reader.fail(f"{path[:200]}... nests modules too deep")
    name = reader.field(node, "class", path, str)
    cls = _resolve(name, reader, path)
    if not (isinstance(cls, type) and issubclass(cls, Module)):
        raise UnsafeCheckpointError(f"nn.load: {reader.name}: {path} names {name}, which is not "
                                    "an nn.Module class")
    module = cls.__new__(cls)
    Module.__init__(module)
    object.__setattr__(module, "training", reader.field(node, "training", path, bool))
    for key, value in _pairs(reader, node, "attrs", path):
        module.__dict__[key] = decode_attribute(reader, value, f"{path}.{key}", depth)
    for key, value in _pairs(reader, node, "parameters", path):
        if value is None:
            module._parameters[key] = None
            continue
        if not isinstance(value, dict):
            reader.fail(f"{path}.{key} is not a parameter node")
        tensor = reader.decode(reader.field(value, "tensor", path, dict), f"{path}.{key}",
                               depth + 1)
        if not isinstance(tensor, Tensor):
            reader.fail(f"{path}.{key} is not a tensor")
        module._parameters[key] = Parameter(tensor, reader.field(value, "requires_grad", path,
                                                                 bool))
    for key, value in _pairs(reader, node, "buffers", path):
        module._buffers[key] = reader.decode(value, f"{path}.{key}", depth + 1)
    off = reader.field(node, "non_persistent", path, list)
    module._non_persistent_buffers_set.update(str(k) for k in off)
    for key, value in _pairs(reader, node, "modules", path):
        module._modules[key] = None if value is None else decode_module(
            reader, value, f"{path}.{key}", depth + 1)
    return module
