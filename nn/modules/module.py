"""nn.Module, as PyTorch has it.

A Module registers the Parameters, buffers and submodules assigned to its attributes, in
insertion order, so that ``named_parameters`` and ``state_dict`` name them with PyTorch's dotted
keys (``0.weight``, ``encoder.layers.1.bias``). Calling a module runs its forward pre-hooks,
``forward`` and its forward hooks; with full backward hooks registered, identity autograd
Functions (``BackwardHookFunction``, in ``backward_hooks``) around its tensor inputs and outputs
report their gradients to the hooks. ``Parameter``, ``UninitializedParameter`` and
``UninitializedBuffer`` (the placeholders of a lazy module's parameters and buffers until their
shapes are known) are in ``parameter``; this module exports them too.
"""
from __future__ import annotations

import collections
import collections.abc
import itertools

import numpy as np

from .. import autograd, init
from ..device import host
from ..tensor import FLOATING, Tensor, _check_device, dtype_name
from .backward_hooks import BackwardHookFunction, _BackwardHookState  # noqa: F401
from .parameter import (UNINITIALIZED, Parameter, UninitializedBuffer,  # noqa: F401
                        UninitializedParameter, _UninitializedTensor)

__all__ = ["Parameter", "UninitializedParameter", "UninitializedBuffer", "Module"]


class LazyModuleMixin:
    """PyTorch's lazy modules: parameters (and buffers) are ``UninitializedParameter``s
    (``UninitializedBuffer``s) until the first forward, which calls
    ``initialize_parameters(input)`` and turns the module into ``cls_to_become``
    (``load_state_dict`` materializes them too)."""

    def has_uninitialized_params(self):
        return any(isinstance(t, _UninitializedTensor)
                   for t in itertools.chain(self._parameters.values(), self._buffers.values()))

    def forward(self, input):
        self.initialize_parameters(input)
        self.__class__ = self.cls_to_become
        return self.forward(input)


class _IncompatibleKeys(collections.namedtuple("IncompatibleKeys",
                                               ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys it missed and those it did not use."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


def _check_name(kind, name, module, own: dict):
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if hasattr(module, name) and name not in own:
        raise KeyError(f"attribute '{name}' already exists")


class Module:
    """The base class of layers and models: subclasses set attributes in ``__init__`` (after
    ``super().__init__()``) and define ``forward``."""
    training: bool
    _version = 1

    def __init__(self):
        setattr_ = super().__setattr__
        setattr_("training", True)
        setattr_("_parameters", collections.OrderedDict())
        setattr_("_buffers", collections.OrderedDict())
        setattr_("_non_persistent_buffers_set", set())
        setattr_("_modules", collections.OrderedDict())
        setattr_("_forward_hooks", collections.OrderedDict())
        setattr_("_forward_hooks_with_kwargs", set())
        setattr_("_forward_pre_hooks", collections.OrderedDict())
        setattr_("_forward_pre_hooks_with_kwargs", set())
        setattr_("_backward_hooks", collections.OrderedDict())
        setattr_("_backward_pre_hooks", collections.OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{self._get_name()}] is missing the required '
                                  '"forward" function')

    # --------------------------------------------------------------- calling

    def __call__(self, *args, **kwargs):
        for key, hook in list(self._forward_pre_hooks.items()):
            if key in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {result}.")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        state = None
        if (self._backward_hooks or self._backward_pre_hooks) and autograd.is_grad_enabled():
            state = _BackwardHookState(self, len(args))
            args = state.wrap_inputs(args)
        output = self.forward(*args, **kwargs)
        for key, hook in list(self._forward_hooks.items()):
            if key in self._forward_hooks_with_kwargs:
                result = hook(self, args, kwargs, output)
            else:
                result = hook(self, args, output)
            if result is not None:
                output = result
        return output if state is None else state.wrap_outputs(output)

    def _register_hook(self, hooks, hook, prepend, with_kwargs=None, kwarg_ids=None):
        handle = autograd.RemovableHandle(hooks)
        hooks[handle.id] = hook
        if with_kwargs:
            kwarg_ids.add(handle.id)
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Call ``hook(module, args)`` (``hook(module, args, kwargs)`` with ``with_kwargs``)
        before ``forward``; a returned value replaces the arguments (a tuple, or one value
        that is wrapped in one; ``(args, kwargs)`` with ``with_kwargs``). Returns a removable
        handle."""
        return self._register_hook(self._forward_pre_hooks, hook, prepend, with_kwargs,
                                   self._forward_pre_hooks_with_kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Call ``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with
        ``with_kwargs``) after ``forward``; a returned value replaces the output. Returns a
        removable handle."""
        return self._register_hook(self._forward_hooks, hook, prepend, with_kwargs,
                                   self._forward_hooks_with_kwargs)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """Call ``hook(module, grad_output)`` when the gradients of the module's outputs are
        known, before those of its inputs are computed; a returned tuple replaces
        ``grad_output``. Returns a removable handle."""
        return self._register_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook, prepend=False):
        """Call ``hook(module, grad_input, grad_output)`` once the gradients of the module's
        positional inputs are computed (None for those that are not tensors requiring grad);
        a returned tuple replaces ``grad_input``. Returns a removable handle."""
        return self._register_hook(self._backward_hooks, hook, prepend)

    # --------------------------------------------------------------- registration

    def register_buffer(self, name, tensor, persistent=True):
        """Add a tensor that is state but not a parameter (running statistics); a
        non-persistent buffer stays out of ``state_dict``."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name("buffer", name, self, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(nn.Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Add a parameter (a ``Parameter`` or None) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name("parameter", name, self, self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' as a "
                             "function of another Tensor, compute the value in the forward() "
                             "method.")
        self._parameters[name] = param

    def add_module(self, name, module):
        """Add a child module (or None) under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        _check_name("module", name, self, self._modules)
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        def remove_from(*dicts):
            for d in dicts:
                if name in d:
                    if d is self.__dict__:
                        del d[name]
                    else:
                        d.pop(name)
                        if d is self._buffers:
                            self._non_persistent_buffers_set.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            modules = self.__dict__.get("_modules")
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(self.__dict__, self._parameters, self._buffers)
            modules[name] = value
        elif name in self.__dict__.get("_modules", ()):
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (nn.Module or None expected)")
            self._modules[name] = value
        elif name in self.__dict__.get("_buffers", ()):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(nn.Tensor or None expected)")
            self._buffers[name] = value
        else:
            super().__setattr__(name, value)

    def __getattr__(self, name):
        # Only called when ordinary lookup fails: look in the registries.
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d and name in d[registry]:
                return d[registry][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    def __dir__(self):
        keys = set(super().__dir__()) | set(self.__dict__)
        keys |= set(self._parameters) | set(self._buffers) | set(self._modules)
        return sorted(k for k in keys if not k[0].isdigit())

    # --------------------------------------------------------------- lookup

    def get_submodule(self, target: str) -> Module:
        """The submodule at the dotted path ``target`` ("" is the module itself)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at the dotted path ``target`` (``"0.weight"``)."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path ``target``."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(mod, name)

    # --------------------------------------------------------------- iteration

    def _named_members(self, members, prefix, recurse, remove_duplicate):
        memo = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for name, value in members(module):
                if value is None or value in memo:
                    continue
                if remove_duplicate:
                    memo.add(value)
                yield (module_prefix + "." if module_prefix else "") + name, value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, parameter) pairs, each shared parameter once."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                       remove_duplicate)

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                       remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(dotted name, module) pairs of this module ("") and all below it, depth first."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name,
                                            remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    # --------------------------------------------------------------- modes and state

    def train(self, mode=True):
        """Set training mode (``eval()`` is ``train(False)``) here and below; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset the parameters' gradients: to None, or to zeros in place."""
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                if param.grad.grad_fn is not None:
                    param.grad = param.grad.detach()
                else:
                    param.grad.requires_grad_(False)
                param.grad.zero_()

    def apply(self, fn):
        """Call ``fn`` on every submodule (children first) and on self; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _move(self, device=None, dtype=None):
        """Parameters, buffers and gradients moved to ``device`` and their floating ones cast
        to ``dtype``, in place: the Parameter objects stay the same (optimizers keep them)."""
        for t in itertools.chain(self.parameters(), self.buffers()):
            cast = dtype if t.is_floating_point() else None
            if cast not in (None, t.dtype) or (device is not None and device != t.device):
                t._data = _converted(t, device, cast)._data
            if t._grad is not None:
                t._grad = _converted(t._grad, device, cast)
        return self

    def _cast(self, dtype):
        return self._move(dtype=dtype)

    def to(self, *args, **kwargs):
        """Move parameters and buffers to a device and/or cast the floating ones, in place:
        ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(tensor)`` (its device and
        dtype) or keywords ``device=`` and ``dtype=``. Returns self."""
        device, dtype = _to_args(args, kwargs)
        if dtype is not None and dtype not in FLOATING:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired "
                            f"dtype={dtype}")
        return self._move(None if device is None else _check_device(device), dtype)

    def cpu(self):
        """Move parameters and buffers to the CPU; returns self."""
        return self.to("cpu")

    def cuda(self, device=None):
        """Move parameters and buffers to the GPU; returns self."""
        return self.to("cuda" if device is None else device)

    def float(self):
        return self._cast("float32")

    def double(self):
        return self._cast("float64")

    def half(self):
        return self._cast("float16")

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """An ordered dict from PyTorch's dotted key names to parameters and persistent
        buffers; detached tensors on the same storage unless ``keep_vars``."""
        if destination is None:
            destination = collections.OrderedDict()
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        return destination

    def _load_from_state_dict(self, state_dict, prefix, strict, missing_keys, unexpected_keys,
                              error_msgs, assign=False):
        for name, param, value in self._loadable(state_dict, prefix, strict, missing_keys,
                                                 unexpected_keys, error_msgs):
            if isinstance(param, _UninitializedTensor):
                param.materialize(value.shape)
            if assign:
                self._assign_loaded(name, param, value)
            else:
                init._write(param, host(value._data))

    def _loadable(self, state_dict, prefix, strict, missing_keys, unexpected_keys, error_msgs):
        """The ``(name, tensor, checkpoint value)`` triples this module (not its children) would
        load from ``state_dict``; the missing and unexpected keys and the errors (a value that
        is no tensor, a size mismatch) go to the lists. Nothing is copied."""
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        local = {k: v for k, v in itertools.chain(self._parameters.items(), persistent.items())
                 if v is not None}
        loadable = []
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  "nn.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(value)}")
                continue
            if not isinstance(param, _UninitializedTensor) and value.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{list(value.shape)} from checkpoint, the shape in current "
                                  f"model is {list(param.shape)}.")
                continue
            loadable.append((name, param, value))
        if strict:
            for key in state_dict:
                if not key.startswith(prefix):
                    continue
                head, dot, _ = key[len(prefix):].partition(".")
                # a dotted rest names something inside a child module
                if (head not in self._modules) if dot else (head not in local):
                    unexpected_keys.append(key)
        return loadable

    def _assign_loaded(self, name, current, value):
        """``load_state_dict(assign=True)``: keep the checkpoint's tensor itself (detached),
        as a Parameter where ``current`` was one."""
        value = value.detach()
        if isinstance(current, Parameter):
            self._parameters[name] = Parameter(value, requires_grad=current.requires_grad)
        else:
            self._buffers[name] = value

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy ``state_dict``'s tensors into the parameters and buffers with the same keys
        (with ``assign``, take the checkpoint's tensors instead of copying into ours).

        Returns ``(missing_keys, unexpected_keys)``; with ``strict`` either list being non-empty
        is an error, as is a shape mismatch in any mode. All or nothing: every key is checked
        before the first copy, so a load that raises leaves the module as it was.
        """
        if not isinstance(state_dict, collections.abc.Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = self._load_pass(state_dict, assign, dry_run=True)
        if not errors and not (strict and (missing or unexpected)):
            # all or nothing: the copies start only once every key has been checked
            missing, unexpected, errors = self._load_pass(state_dict, assign, dry_run=False)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self._get_name(), "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def _load_pass(self, state_dict, assign, dry_run):
        """One walk of ``load_state_dict`` over the module tree: ``(missing, unexpected,
        errors)``. A dry run copies nothing (a module that overrides ``_load_from_state_dict``
        is checked by its own method in the real pass only)."""
        missing, unexpected, errors = [], [], []

        def load(module, prefix):
            if not dry_run:
                module._load_from_state_dict(state_dict, prefix, True, missing, unexpected,
                                             errors, assign)
            elif type(module)._load_from_state_dict is Module._load_from_state_dict:
                module._loadable(state_dict, prefix, True, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")

        load(self, "")
        return missing, unexpected, errors

    # --------------------------------------------------------------- printing

    def _get_name(self):
        return type(self).__name__

    def extra_repr(self) -> str:
        """The text inside the parentheses of ``repr``; layers override it."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2)
                       for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"


# ----------------------------------------------------------------------------- Module.to

def _converted(t, device, dtype):
    """``t`` detached, on ``device`` with ``dtype`` (None: unchanged).

    float64 goes to float16 through float32: LLVM lowers a direct fptrunc to a call of
    ``__truncdfhf2``, which the JIT does not resolve (the kernel crashes)."""
    t = t.detach()
    if dtype == "float16" and t.dtype == "float64":
        t = t.to("float32")
    return t.to(device=device, dtype=dtype)


def _is_device(value):
    if isinstance(value, str):
        return value.partition(":")[0] in ("cpu", "cuda", "mps", "meta")
    return hasattr(value, "type") and not isinstance(value, (Tensor, np.dtype, type))


def _to_args(args, kwargs):
    """(device, dtype) from the forms of ``Module.to``."""
    unknown = set(kwargs) - {"device", "dtype", "non_blocking"}
    if unknown:
        raise TypeError(f"to() got an unexpected keyword argument '{sorted(unknown)[0]}'")
    if len(args) > 2:
        raise TypeError(f"to() takes at most 2 positional arguments ({len(args)} given)")
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    for arg in args:
        if isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        elif _is_device(arg):
            device = arg
        else:
            dtype = arg
    if dtype is not None:
        try:
            dtype = dtype_name(dtype)
        except TypeError:
            raise TypeError(f"to() expects a device, a dtype or a tensor, got {dtype!r}") \
                from None
    return device, dtype
