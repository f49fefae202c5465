"""``Optimizer``, the base of nn's optimizers, as PyTorch's: parameter groups with their own
hyper-parameters, per-parameter ``state``, ``zero_grad``, ``step(closure)``, ``add_param_group``
and ``state_dict`` / ``load_state_dict`` in PyTorch's layout.

A subclass gives its ``defaults`` and ``_update(p, grad, group)``, which runs the update
of one parameter as one compiled kernel (``self._run_update``, that is ``fused_update``, with
the declarations of ``nn/ops/optim.py``); ``step`` calls it under ``nn.no_grad()`` for every
parameter that has a gradient. The hyper-parameters reach the kernel at run time, so a
scheduler changing the learning rate never recompiles it.
"""
from __future__ import annotations

import copy
import functools
import itertools
import numbers
import warnings
from collections import defaultdict

import numpy as np

from nn.ops import cpu
from nn.ops.optim import schedule_update
from te.nd import aligned_empty

from .. import autograd
from ..device import CUDA, host, is_gpu, move
from ..functions.base import kernel_calls
from ..tensor import Tensor, tensor, zeros_like

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """The default of a hyper-parameter that every parameter group must give."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj) -> str:
    return "nn.Tensor" if isinstance(obj, Tensor) else type(obj).__name__


class Optimizer:
    """Base class of all optimizers: ``Optimizer(params, defaults)``.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts (parameter
    groups: ``{"params": [...], "lr": ...}``); ``defaults`` gives the hyper-parameters a group
    does not set.
    """

    def __init__(self, params, defaults):
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        self._spares = {}       # parameter -> {state name: buffer the next update writes}
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __repr__(self):
        text = self.__class__.__name__ + " ("
        for k, group in enumerate(self.param_groups):
            text += f"\nParameter Group {k}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # --------------------------------------------------------------- groups

    def add_param_group(self, param_group):
        """Add a group of parameters with its own hyper-parameters (the rest from defaults)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        param_group["params"] = params
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some "
                                 "param names are missing")
            param_group["param_names"] = names
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(p))
            if not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        if len(params) != len(set(params)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error", stacklevel=3)
        seen = set()
        for group in self.param_groups:
            seen.update(group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)
        self._init_group(param_group)

    def _init_group(self, group):
        """Eager state for a new group's parameters (Adagrad's); most optimizers start lazily."""

    # --------------------------------------------------------------- stepping

    def zero_grad(self, set_to_none=True):
        """Reset the gradients: to None (the default), or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                grad = p.grad if p.grad.grad_fn is None else p.grad.detach()
                with autograd.no_grad():
                    grad.zero_()
                p.grad = grad

    def step(self, closure=None):
        """One update of every parameter that has a gradient. ``closure``, if given,
        re-evaluates the model (with grad enabled) and returns the loss, which step returns."""
        loss = None
        if closure is not None:
            with autograd.enable_grad():
                loss = closure()
        with autograd.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        self._update(p, p.grad, group)
        return loss

    _flat_state = False     # True where the state holds vectors over all parameters (LBFGS)

    def _step_state(self, p, names, **first):
        """The state of ``p`` for this step: made on the first step (``step`` = 0, the values of
        ``first``), a zero tensor of ``p``'s shape for each of ``names``, then the step counted
        (``state["step"]`` is returned with it)."""
        state = self.state[p]
        if not state:
            state["step"] = tensor(0.0)
            state.update({name: tensor(value) for name, value in first.items()})
        for name in names:
            if name not in state:
                state[name] = zeros_like(p)
        return state, count_step(state)

    def _run_update(self, declare, p, grad, state, names, hyper, **flags):
        """``fused_update`` with this optimizer's spare state buffers for ``p``."""
        fused_update(declare, p, grad, state, names, hyper, self._spares.setdefault(p, {}),
                     **flags)

    def _update(self, p, grad, group):
        raise NotImplementedError(f"{type(self).__name__} must define _update(p, grad, group) "
                                  "or override step()")

    # --------------------------------------------------------------- state dicts

    def state_dict(self):
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``, the
        parameters numbered in group order, as PyTorch's. The state tensors are the live ones."""
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v
                 for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Load a ``state_dict()``: the hyper-parameters of each group and each parameter's
        state (copied, cast to the parameter's dtype and device; "step" stays float32)."""
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for group, saved in zip(self.param_groups, saved_groups):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group")
        id_map = dict(zip(itertools.chain.from_iterable(g["params"] for g in saved_groups),
                          itertools.chain.from_iterable(g["params"] for g in self.param_groups)))
        state = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = {name: _cast(param, key, name, v, self._flat_state)
                                for name, v in value.items()}
            else:
                state[key] = value
        for group, saved in zip(self.param_groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
        self.state = state
        self.param_groups = saved_groups


def _cast(param, index, key, value, flat=False):
    """A copy of a loaded state entry: tensors on the parameter's device, floating ones in its
    dtype except "step" (float32 on the CPU; a plain number becomes such a tensor). ``flat``:
    the optimizer keeps vectors over all its parameters (LBFGS), not one per parameter."""
    if key == "step":
        return tensor(float(value.item() if isinstance(value, Tensor) else value))
    if not isinstance(value, Tensor):
        return value
    if value.ndim and value.shape != param.shape and not flat:
        raise ValueError(f"loaded state dict has state[{index}][{key!r}] of shape "
                         f"{list(value.shape)} for a parameter of shape {list(param.shape)}; "
                         "was it saved from another model?")
    data = host(value._data)
    floating = value.is_floating_point() and param.is_floating_point()
    data = data.astype(param.dtype) if floating else data.copy()
    return Tensor(move(data, param.device))


# ----------------------------------------------------------------------------- the kernel

def check_numbers(**values):
    """A TypeError naming the hyper-parameter when one is not a number (PyTorch's comparison
    would fail with "'<' not supported ..."): ``check_numbers(lr=lr, eps=eps)``, named as
    PyTorch's range errors name them. A Tensor (a learning rate) passes."""
    for name, value in values.items():
        if isinstance(value, Tensor):
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"Invalid {_label(name)}: {value!r} "
                            f"(expected a float, got {type(value).__name__})")


_LABELS = {"lr": "learning rate", "eps": "epsilon value",
           "beta0": "beta parameter at index 0", "beta1": "beta parameter at index 1"}


def _label(name):
    """How PyTorch's messages name a hyper-parameter: "learning rate", "momentum value"."""
    return _LABELS.get(name, name + " value")


def check_nonnegative(**values):
    """``check_numbers``, then a ValueError with PyTorch's wording ("Invalid learning rate:
    -1", "Invalid weight_decay value: -1") for the first value, in the order given, that is
    not ``>= 0`` (NaN included)."""
    check_numbers(**values)
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {_label(name)}: {value}")


def check_betas(betas):
    """``betas`` must be a pair of numbers, each in [0, 1)."""
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise ValueError(f"Invalid betas: {betas!r} (expected a pair (beta1, beta2))")
    check_numbers(beta0=betas[0], beta1=betas[1])
    for k, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {k}: {beta}")


def check_adam_family(lr, betas, eps, weight_decay):
    """The checks Adam and its relatives share, with PyTorch's messages."""
    check_nonnegative(lr=lr, eps=eps)
    check_betas(betas)
    check_nonnegative(weight_decay=weight_decay)


def decay_kind(group):
    """"none", "l2" or "decoupled": the compile-time weight-decay choice of a group."""
    if float(group["weight_decay"]) == 0:
        return "none"
    return "decoupled" if group.get("decoupled_weight_decay") else "l2"


def no_differentiable(differentiable):
    """nn's optimizers update parameters outside the graph, as PyTorch's do by default."""
    if differentiable:
        raise RuntimeError("differentiable=True is not supported: nn's optimizer steps run "
                           "as fused kernels outside the autograd graph")


def count_step(state) -> float:
    """Add one to ``state["step"]`` (a float32 0-d tensor, as PyTorch's) and return it."""
    step = state["step"].item() + 1
    state["step"].fill_(step)
    return step

def _flat(array):
    """``array`` as a contiguous 1-d array (no copy when it is contiguous already)."""
    if is_gpu(array):
        return array.reshape(array.size)
    return np.ascontiguousarray(array).reshape(-1)


@functools.lru_cache(maxsize=None)
def _build(declare, device, n, dtype, n_inputs, n_hyper, flags):
    shapes = [(n,)] * n_inputs + [(n_hyper,)]
    if device == "cuda":
        from nn.ops import gpu
        return gpu.build(declare, shapes, dtype, **dict(flags))
    return cpu.build(declare, shapes, dtype, schedule=schedule_update, **dict(flags))


_scratch = {}       # (size, dtype) -> the buffer that receives new parameter values


def _buffer(buffers, key, n, dtype):
    """``buffers[key]``: a reusable 64-byte aligned 1-d buffer of ``n`` ``dtype`` values."""
    buf = buffers.get(key)
    if buf is None or buf.shape != (n,) or buf.dtype != dtype:
        buf = buffers[key] = aligned_empty((n,), dtype)
    return buf


def fused_update(declare, p, grad, state, names, hyper, spares, **flags):
    """Run the update ``declare`` (nn/ops/optim.py) on ``p``, ``grad``, the state tensors
    ``state[name]`` and the hyper-parameter vector ``hyper``, as one compiled kernel.

    A kernel's outputs cannot alias its inputs, so the kernel writes the new parameter into a
    scratch buffer that is then copied into ``p``'s storage (an in-place write: its version
    is bumped), and each new state into a spare buffer (from ``spares``, a dict kept per
    parameter) that becomes the state tensor's storage, the old storage becoming the spare:
    the same Tensor objects hold the new values (as a ``state_dict()`` shows), with no copy
    and no allocation per step."""
    if grad.shape != p.shape or grad.dtype != p.dtype or grad.is_cuda != p.is_cuda:
        raise RuntimeError(f"{declare.__name__}: the gradient of a parameter of shape "
                           f"{list(p.shape)}, {p.dtype} on {p.device} is {list(grad.shape)}, "
                           f"{grad.dtype} on {grad.device}; they must match")
    if not p.is_floating_point():
        raise RuntimeError(f"{declare.__name__}: cannot update a parameter of dtype {p.dtype}; "
                           "optimizers update floating point tensors only")
    n, dtype, gpu = p.numel(), p._data.dtype, p.is_cuda
    if n == 0:
        return
    h = np.asarray(hyper, dtype=dtype)
    arrays = [_flat(p._data), _flat(grad._data)] + [_flat(state[k]._data) for k in names]
    f = _build(declare, "cuda" if gpu else "cpu", n, p.dtype, len(arrays), len(hyper),
               tuple(sorted(flags.items())))
    kernel_calls[declare.__name__] += 1
    if gpu:
        new_p, *new_states = f(*arrays, move(h, CUDA))
        p._data.copy_to_device(new_p.reshape(p.shape))
    else:
        new_p = _buffer(_scratch, (n, dtype), n, dtype)
        new_states = [_buffer(spares, k, n, dtype) for k in names]
        f(*arrays, h, out=[new_p, *new_states])
        np.copyto(p._data, new_p.reshape(p.shape))
        spares.update(zip(names, arrays[2:]))
    p._bump_version()
    for name, array in zip(names, new_states):
        state[name]._data = array.reshape(p.shape)
