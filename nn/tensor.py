"""nn.Tensor: an n-dimensional array on the CPU that records the operations run on it.

A Tensor wraps a numpy array, its storage (views share it, as PyTorch's views do), and, when it
requires grad and was computed, the autograd node that produced it (``grad_fn``; None for a
leaf). Its operators dispatch to ``nn.functional``, whose forward and backward computations are
compiled te kernels. The factories follow PyTorch's signatures and dtype rules (a Python float
gives float32, a Python int int64); dtypes are numpy's names, as strings ("float32").
"""
from __future__ import annotations

import collections
import warnings
import weakref

import numpy as np

from . import autograd
from . import device as devices
from .dtypes import as_dtype

__all__ = ["Tensor", "tensor", "from_numpy", "zeros", "ones", "full", "empty", "arange",
           "linspace", "logspace", "eye", "rand", "randn", "randint", "randperm", "normal",
           "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like",
           "randint_like", "manual_seed", "median", "nanmedian", "isclose", "allclose",
           "repeat_interleave", "as_tensor", "is_tensor", "bernoulli", "multinomial", "unique",
           "numel", "is_floating_point", "get_default_dtype", "set_default_dtype", "Size"]

FLOATING = ("float16", "float32", "float64")
_SHORT = {"float32", "int64", "bool"}          # dtypes that repr does not name, as PyTorch's

max_result = collections.namedtuple("max", ["values", "indices"])
_DEFAULT_DTYPE = ["float32"]    # the floating dtype of Python floats and factories
median_result = collections.namedtuple("median", ["values", "indices"])
nanmedian_result = collections.namedtuple("nanmedian", ["values", "indices"])


class Size(tuple):
    """A shape, as ``torch.Size``: a tuple of ints (``nn.Size([2, 3]) == (2, 3)``). Tensor
    shapes are plain tuples, which compare equal to it."""

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        n = 1
        for k in self:
            n *= k
        return n

    def __repr__(self):
        return f"nn.Size({list(self)})"


class Tensor:
    """A multi-dimensional array with autograd; make one with ``nn.tensor`` or a factory."""
    __hash__ = object.__hash__      # == is elementwise; tensors hash by identity
    # on the GPU a view is a copy; this is (the tensor it views, byte offset, byte strides)
    # in a C-contiguous host copy of that tensor, so that writes to the view reach it
    _view_of = None
    _epoch = 0          # how many in-place writes inside the graph gave this tensor a new node
    _base_epoch = 0     # for a view: the epoch of its base when the view took its history
    _post_accumulate_hooks = None   # hook id -> hook(tensor), run after .grad accumulates
    is_quantized = False            # nn.quantized.QTensor's is True

    def __init__(self, data: np.ndarray, requires_grad=False):
        self._data = data
        self._requires_grad = False
        self._grad = None
        self.grad_fn = None
        self._output_nr = 0
        self._backward_hooks = None
        self._retains_grad = False
        self._accumulator = None
        self._base = None           # the tensor this one is a view of, when made in a graph
        if requires_grad:
            self.requires_grad_(True)

    # --------------------------------------------------------------- properties

    @property
    def shape(self) -> tuple:
        shape = self._data.shape
        return shape if type(shape) is tuple else tuple(shape)    # the simulator's arrays

    @property
    def dtype(self) -> str:
        """The element type: an ``nn.dtype`` (``nn.float32``), equal to its numpy name."""
        return as_dtype(dtype_name(self._data.dtype))

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def size(self, dim=None):
        """The shape, or the size of dimension ``dim``."""
        return self.shape if dim is None else self.shape[_dim(dim, self.ndim)]

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return self._data.size

    def is_floating_point(self) -> bool:
        return self.dtype in FLOATING

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    # --------------------------------------------------------------- conversion

    def numpy(self) -> np.ndarray:
        """The storage as a numpy array (shared, not copied)."""
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if devices.is_gpu(self._data):
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use "
                            "Tensor.cpu() to copy the tensor to host memory first.")
        return self._data

    # numpy defers its operators to the tensor's (``np.float32(2) * t`` is a tensor)
    __array_priority__ = 1000

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(t)``: the storage, as ``numpy()`` gives it (so a GPU tensor or one
        that requires grad is refused, as PyTorch refuses them)."""
        array = self.numpy()
        return array if dtype is None else array.astype(dtype, copy=False)

    def __format__(self, format_spec):
        """A 0-d tensor formats as its value (``f"{t:.2f}"``), others as ``str`` does."""
        if self.ndim == 0:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to "
                               "Scalar")
        return devices.host(self._data).reshape(-1)[0].item()

    def tolist(self):
        return devices.host(self._data).tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    @property
    def device(self) -> devices.device:
        return devices.of(self._data)

    @property
    def is_cuda(self) -> bool:
        return devices.is_gpu(self._data)

    def get_device(self) -> int:
        """The index of the GPU holding this tensor; -1 on the CPU."""
        return self.device.index if self.is_cuda else -1

    def to(self, *args, **kwargs) -> Tensor:
        """This tensor on another device and/or with another dtype, as PyTorch's ``to``:
        ``to(dtype)``, ``to(device, dtype=None)``, ``to(other_tensor)``; itself when nothing
        changes."""
        kwargs.pop("non_blocking", None)
        copy = kwargs.pop("copy", False)
        dtype, where = kwargs.pop("dtype", None), kwargs.pop("device", None)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        for arg in args:
            if isinstance(arg, Tensor):
                dtype, where = arg.dtype, arg.device
            elif isinstance(arg, devices.device) or (
                    isinstance(arg, str) and arg.split(":")[0] in ("cpu", "cuda")):
                where = arg
            else:
                dtype = arg
        out = self if where is None else F.to_device(self, where)
        out = out if dtype is None else F.cast(out, dtype)
        return F.clone(out) if copy and out is self else out

    def cuda(self, device=None) -> Tensor:
        return self.to(devices.CUDA if device is None else device)

    def cpu(self) -> Tensor:
        return self.to(devices.CPU)

    def float(self) -> Tensor:
        return self.to("float32")

    def double(self) -> Tensor:
        return self.to("float64")

    def half(self) -> Tensor:
        return self.to("float16")

    def long(self) -> Tensor:
        return self.to("int64")

    def int(self) -> Tensor:
        return self.to("int32")

    def short(self) -> Tensor:
        return self.to("int16")

    def byte(self) -> Tensor:
        return self.to("uint8")

    def bool(self) -> Tensor:
        return self.to("bool")

    def __repr__(self):
        data = devices.host(self._data)
        body = np.array2string(data, separator=", ", prefix="tensor(",
                               formatter=_formatter(data))
        extra = [f"device='{self.device}'"] if self.is_cuda else []
        extra += [] if self.dtype in _SHORT else [f"dtype={self.dtype}"]
        if self.grad_fn is not None:
            extra.append(f"grad_fn=<{self.grad_fn.name()}>")
        elif self.requires_grad:
            extra.append("requires_grad=True")
        return "tensor(" + ", ".join([body] + extra) + ")"

    # --------------------------------------------------------------- autograd

    @property
    def grad_fn(self):
        """The node that made this tensor (None for a leaf)."""
        if self._base is not None and self._base_epoch != self._base._epoch:
            self._follow_base()
        return self._grad_fn

    @grad_fn.setter
    def grad_fn(self, node):
        self._grad_fn = node

    def _follow_base(self):
        """This view's base was written in place inside the graph since the view took its
        history: the view reads the new values, so its gradient now flows through the base's
        new node (PyTorch regenerates a view's grad_fn the same way). Reading ``grad_fn`` or
        ``requires_grad`` of such a view does it: it records a node (the view's positions in
        the base) even under no_grad."""
        base = self._base
        self._base_epoch = base._epoch
        if base.requires_grad:
            with autograd.enable_grad():
                view = _Take.apply(base, _view_positions(self, base))
            self._set_history(view.grad_fn, view._output_nr)

    @property
    def requires_grad(self) -> bool:
        if self._base is not None and self._base_epoch != self._base._epoch:
            self._follow_base()
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True) -> Tensor:
        """Set whether autograd records operations on this leaf; returns self."""
        if self.grad_fn is not None:
            if not requires_grad:
                raise RuntimeError("you can only change requires_grad flags of leaf variables. "
                                   "If you want to use a computed variable in a subgraph that "
                                   "doesn't require differentiation use var_no_grad = "
                                   "var.detach().")
            return self
        if requires_grad and not self.is_floating_point():
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def grad(self):
        if self._grad is None and not self.is_leaf and not self._retains_grad:
            warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being "
                          "accessed. Its .grad attribute won't be populated during "
                          "autograd.backward(). If you indeed want the .grad field to be "
                          "populated for a non-leaf Tensor, use .retain_grad() on the non-leaf "
                          "Tensor.", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None and not isinstance(value, Tensor):
            kind = type(value)
            name = kind.__name__ if kind.__module__ == "builtins" else \
                f"{kind.__module__.split('.')[0]}.{kind.__name__}"
            raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                            f"type {name}")
        if value is not None and (value.shape != self.shape or value.dtype != self.dtype):
            raise RuntimeError(f"assigned grad has data of shape {value.shape} and dtype "
                               f"{value.dtype}; expected {self.shape} and {self.dtype}")
        self._grad = value

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def _set_history(self, node, nr):
        self.grad_fn, self._output_nr, self._requires_grad = node, nr, True

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor into the ``.grad`` of the leaves (of
        ``inputs`` only, when given)."""
        autograd.backward(self, gradient, retain_graph, create_graph, inputs)

    def retain_grad(self):
        """Keep the gradient of this non-leaf tensor in ``.grad`` during backward."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if not self.is_leaf and not self._retains_grad:
            self.grad_fn._retained[self._output_nr] = weakref.ref(self)
            self._retains_grad = True

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor
        replaces the gradient. Returns a handle whose ``remove()`` unregisters it."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                               "gradient")
        if self._backward_hooks is None:
            self._backward_hooks = {}
            if self.grad_fn is not None:
                self.grad_fn._hooks[self._output_nr] = self._backward_hooks
        handle = autograd.RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(self)`` after a backward has accumulated a gradient into this leaf's
        ``.grad``. Returns a handle whose ``remove()`` unregisters it."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                               "gradient")
        if not self.is_leaf:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        if self._post_accumulate_hooks is None:
            self._post_accumulate_hooks = {}
        handle = autograd.RemovableHandle(self._post_accumulate_hooks)
        self._post_accumulate_hooks[handle.id] = hook
        return handle

    def detach(self) -> Tensor:
        """A tensor on the same storage, out of the graph."""
        out = Tensor(self._data)
        out._view_of = self._view_of
        return out

    @property
    def data(self) -> Tensor:
        """This tensor's storage as a new tensor out of the graph (as ``detach()``); writes
        to it are not seen by autograd's version checks, as in PyTorch."""
        out = Tensor(self._data)
        out._view_of = self._view_of
        return out

    @data.setter
    def data(self, value):
        """Replace the storage (any shape and dtype), keeping autograd's flags and history:
        ``p.data = p.data * 0.5``."""
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be set to a Tensor, not {type(value).__name__}")
        if self.requires_grad and not value.is_floating_point():
            raise RuntimeError(f"data set to a {value.dtype} tensor on a tensor that requires "
                               "grad: only floating point tensors can require gradients")
        self._data = value._data

    # --------------------------------------------------------------- in place

    @property
    def _version(self) -> int:
        """How many in-place writes the storage of this tensor (shared by its views) has seen;
        autograd compares it with the version a saved tensor had when it was saved."""
        return _counter(self._data)[0]

    def _bump_version(self):
        """Count an in-place write into this tensor's storage; a GPU view (a copy) then
        writes its values through into the tensor it views."""
        _counter(self._data)[0] += 1
        if self._view_of is not None:
            self._write_through()
        if id(self._data) in _gpu_views:
            _refresh_gpu_views(self._data)

    def _keep_gpu_storage(self, view_of):
        """Before this GPU tensor takes the layout of ``view_of`` (a GPU view of itself, made
        by an in-place reshape such as ``t_()``): its old storage lives on as a hidden tensor
        that this one, and the views made of it before, write through into and read from."""
        storage = Tensor(self._data)
        storage._view_of = self._view_of
        if storage._view_of is not None:
            register_gpu_view(storage)
        for ref in list(_gpu_views.get(id(self._data), {}).values()):
            view = ref()
            if view is not None and view._view_of[0] is self:
                view._view_of = (storage,) + view._view_of[1:]
        return (storage,) + view_of[1:]

    def _write_through(self):
        parent, offset, strides = self._view_of
        host = np.ascontiguousarray(devices.host(parent._data))
        window = np.ndarray(self.shape, self._data.dtype, buffer=host, offset=offset,
                            strides=strides)
        window[...] = devices.host(self._data)
        parent._data.copy_to_device(host.reshape(parent.shape))
        parent._bump_version()

    def _records_inplace(self, others) -> bool:
        """Whether an in-place operation on this tensor with tensors ``others`` must enter the
        graph; raises PyTorch's errors where it cannot."""
        if not autograd.is_grad_enabled():
            return False
        if self.is_leaf and self.requires_grad:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        if not (self.requires_grad or any(o.requires_grad for o in others)):
            return False
        base = self._base
        if base is not None and base.is_leaf and base.requires_grad:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in "
                               "an in-place operation.")
        return True

    def _assign(self, result):
        if result.shape != self.shape:
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(result.shape)}")
        if not _can_cast(result.dtype, self.dtype):
            raise RuntimeError(f"result type {_torch_name(result.dtype)} can't be cast to the "
                               f"desired output type {_torch_name(self.dtype)}")
        if devices.is_gpu(self._data) or devices.is_gpu(result._data):
            devices.common([self._data, result._data], "in-place operation")
            self._data.copy_to_device(F.cast(result, self.dtype)._data)
        else:       # integers wrap around, as PyTorch's (uint8 += 300 adds 44)
            np.copyto(self._data, result._data, casting="unsafe")
        self._bump_version()
        return self

    def _inplace(self, op, *args, **kwargs):
        """``op(self, ...)`` written into this tensor's storage. Inside a graph the tensor then
        takes the result's history (as PyTorch rebases it); if the operation saved this tensor
        for its backward, it keeps a copy of the old values instead."""
        others = [a for a in args if isinstance(a, Tensor)]
        _refuse_partial_overlap(self, others + [v for v in kwargs.values()
                                                if isinstance(v, Tensor)])
        if not self._records_inplace(others):
            with autograd.no_grad():
                return self._assign(op(self, *args, **kwargs))
        out = op(self, *args, **kwargs)
        node = out.grad_fn
        if node is not None and any(t is self for t in node._saved):
            old = Tensor(devices.copy(self._data))
            if self.grad_fn is not None:
                old._set_history(self.grad_fn, self._output_nr)
            node.save_for_backward(*(old if t is self else t for t in node._saved))
        with autograd.no_grad():
            self._assign(out)
        _rebase_inplace(self, out)
        return self

    def copy_(self, src, non_blocking=False) -> Tensor:
        """Write ``src`` (broadcast to this shape, cast to this dtype, moved to this device)
        into this tensor; inside the graph the gradient flows to ``src``."""
        if not isinstance(src, Tensor):
            raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
        _refuse_partial_overlap(self, [src])
        if not self._records_inplace([src]):
            with autograd.no_grad():
                return self._assign(_copy_of(self, src))
        # in the graph: a copy of its own, so that this tensor gets a node even when the
        # source is a leaf (the gradient then flows to it through the copy)
        return self._inplace(lambda dst, source: F.clone(_copy_of(dst, source)), src)

    def zero_(self):
        return self.fill_(0)

    def fill_(self, value):
        others = [value] if isinstance(value, Tensor) else []
        in_graph = self._records_inplace(others)
        if others:
            if value.ndim:
                raise RuntimeError("fill_ only supports 0-dimension value tensor but got "
                                   f"tensor with {value.ndim} dimensions.")
            value = F.expand(F.cast(F.to_device(value, self.device), self.dtype), self.shape)
        with autograd.no_grad():
            self._data[...] = devices.host(value._data) if others else value
            self._bump_version()
        if in_graph:
            _rebase_inplace(self, value if others else None)
        return self

    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    def __ifloordiv__(self, other):
        return self.floor_divide_(other)

    def __imod__(self, other):
        return self.remainder_(other)

    def __ipow__(self, other):
        return self.pow_(other)

    def __iand__(self, other):
        return self.bitwise_and_(other)

    def __ior__(self, other):
        return self.bitwise_or_(other)

    def __ixor__(self, other):
        return self.bitwise_xor_(other)

    def __ilshift__(self, other):
        return self.bitwise_left_shift_(other)

    def __irshift__(self, other):
        return self.bitwise_right_shift_(other)

    # --------------------------------------------------------------- new tensors, layout

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False) -> Tensor:
        return tensor(devices.host(data._data) if isinstance(data, Tensor) else data,
                      dtype=dtype or (None if not isinstance(data, Tensor) else data.dtype)
                      or self.dtype, device=device or self.device, requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
        return zeros(_sizes(size), dtype=dtype or self.dtype, device=device or self.device,
                     requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
        return ones(_sizes(size), dtype=dtype or self.dtype, device=device or self.device,
                    requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
        return empty(_sizes(size), dtype=dtype or self.dtype, device=device or self.device,
                     requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                    requires_grad=requires_grad)

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the elements lie in C order in the storage (for a GPU view, a copy: in the
        tensor it views)."""
        if self.is_cuda:
            return _gpu_view_contiguous(self)
        return bool(self._data.flags.c_contiguous)

    def stride(self, dim=None):
        """The step, in elements, between neighbours along each dimension (for a GPU view:
        in the tensor it views, as its strides would be in PyTorch)."""
        if self.is_cuda and self._view_of is not None:
            strides = tuple(s // self._data.dtype.itemsize for s in self._view_of[2])
        elif self.is_cuda:          # GPU storage is C-contiguous
            steps, step = [], 1
            for n in reversed(self.shape):
                steps.append(step)
                step *= max(n, 1)
            strides = tuple(reversed(steps))
        else:
            strides = tuple(s // self._data.itemsize for s in self._data.strides)
        return strides if dim is None else strides[_dim(dim, self.ndim)]

    def detach_(self) -> Tensor:
        """Take this tensor out of the graph (it becomes a leaf that does not require grad)."""
        self.grad_fn, self._requires_grad, self._output_nr = None, False, 0
        return self

    def _reshape_(self, out) -> Tensor:
        """This tensor made ``out`` (a view of it): its storage view and history."""
        view_of = out._view_of
        if view_of is not None and view_of[0] is self:
            view_of = self._keep_gpu_storage(view_of)
        self._data, self._view_of = out._data, view_of
        if view_of is not None:
            register_gpu_view(self)
        if out.grad_fn is not None:
            self._set_history(out.grad_fn, out._output_nr)
        return self

    def t_(self) -> Tensor:
        return self._reshape_(self.t())

    def transpose_(self, dim0, dim1) -> Tensor:
        return self._reshape_(F.transpose(self, dim0, dim1))

    def unsqueeze_(self, dim) -> Tensor:
        return self._reshape_(F.unsqueeze(self, dim))

    def squeeze_(self, dim=None) -> Tensor:
        return self._reshape_(F.squeeze(self, dim))

    # in-place random fills, drawn from nn's generator (see ``manual_seed``)

    def _fill_random(self, values) -> Tensor:
        return self.copy_(Tensor(np.asarray(values).astype(self._data.dtype).reshape(
            self.shape)))

    def normal_(self, mean=0.0, std=1.0, *, generator=None) -> Tensor:
        return self._fill_random(mean + std * _rng(generator).standard_normal(self.shape))

    def uniform_(self, a=0.0, b=1.0, *, generator=None) -> Tensor:
        return self._fill_random(_rng(generator).uniform(a, b, self.shape))

    def bernoulli_(self, p=0.5, *, generator=None) -> Tensor:
        if isinstance(p, Tensor):
            p = devices.host(p._data)
        return self._fill_random(_rng(generator).random(self.shape) < p)

    def exponential_(self, lambd=1.0, *, generator=None) -> Tensor:
        return self._fill_random(_rng(generator).exponential(1.0 / lambd, self.shape))

    def median(self, dim=None, keepdim=False):
        return median(self, dim, keepdim)

    def nanmedian(self, dim=None, keepdim=False):
        return nanmedian(self, dim, keepdim)

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> Tensor:
        return isclose(self, other, rtol, atol, equal_nan)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
        return allclose(self, other, rtol, atol, equal_nan)

    def repeat_interleave(self, repeats, dim=None, *, output_size=None) -> Tensor:
        return repeat_interleave(self, repeats, dim, output_size=output_size)

    # --------------------------------------------------------------- operators

    def __add__(self, other):
        return F.add(self, other)

    def __radd__(self, other):
        return F.add(other, self)

    def __sub__(self, other):
        return F.sub(self, other)

    def __rsub__(self, other):
        return F.sub(other, self)

    def __mul__(self, other):
        return F.mul(self, other)

    def __rmul__(self, other):
        return F.mul(other, self)

    def __truediv__(self, other):
        return F.div(self, other)

    def __rtruediv__(self, other):
        # ``number / tensor`` is ``reciprocal(tensor) * number``, as PyTorch's (its values
        # and its node, which keeps the reciprocal, not the tensor)
        return F.mul(F.reciprocal(self), other)

    def __neg__(self):
        return F.neg(self)

    def __pow__(self, exponent):
        return F.pow(self, exponent)

    def __matmul__(self, other):
        return F.matmul(self, other)

    def __lt__(self, other):
        return F.lt(self, other)

    def __le__(self, other):
        return F.le(self, other)

    def __gt__(self, other):
        return F.gt(self, other)

    def __ge__(self, other):
        return F.ge(self, other)

    def __eq__(self, other):
        return F.eq(self, other)

    def __ne__(self, other):
        return F.ne(self, other)

    def __rpow__(self, base):
        return F.pow(base, self)

    def __rmatmul__(self, other):
        return F.matmul(other, self)

    def __floordiv__(self, other):
        return F.floor_divide(self, other)

    def __mod__(self, other):
        return F.remainder(self, other)

    def __rfloordiv__(self, other):
        return F.floor_divide(other, self)

    def __rmod__(self, other):
        return F.remainder(other, self)

    def __abs__(self):
        return F.abs(self)

    def __invert__(self):
        return F.bitwise_not(self)

    # bitwise on the promoted dtype, as PyTorch's: bool & bool is bool, bool & 6 is int64

    def __and__(self, other):
        return F.bitwise_and(self, other)

    def __rand__(self, other):
        return F.bitwise_and(other, self)

    def __or__(self, other):
        return F.bitwise_or(self, other)

    def __ror__(self, other):
        return F.bitwise_or(other, self)

    def __xor__(self, other):
        return F.bitwise_xor(self, other)

    def __rxor__(self, other):
        return F.bitwise_xor(other, self)

    def __lshift__(self, other):
        return F.bitwise_left_shift(self, other)

    def __rlshift__(self, other):
        return F.bitwise_left_shift(other, self)

    def __rshift__(self, other):
        return F.bitwise_right_shift(self, other)

    def __rrshift__(self, other):
        return F.bitwise_right_shift(other, self)

    def __getitem__(self, index):
        return F.getitem(self, index)

    def __setitem__(self, index, value):
        F.setitem_(self, index, value)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(F.unbind(self, 0))

    # methods whose arguments differ from the function's: sizes as f(2, 3) or f((2, 3))

    def view(self, *shape):
        if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list)):
            return F.view_dtype(self, shape[0])
        return F.view(self, _sizes(shape))

    def reshape(self, *shape):
        return F.reshape(self, _sizes(shape))

    def permute(self, *dims):
        return F.permute(self, _sizes(dims))

    def expand(self, *sizes):
        return F.expand(self, _sizes(sizes))

    def repeat(self, *sizes):
        return F.repeat(self, _sizes(sizes))

    def tile(self, *sizes):
        return F.tile(self, _sizes(sizes))

    def view_as(self, other):
        return F.view(self, other.shape)

    def reshape_as(self, other):
        return F.reshape(self, other.shape)

    def expand_as(self, other):
        return F.expand(self, other.shape)

    def where(self, condition, other):
        """``nn.where(condition, self, other)``."""
        return F.where(condition, self, other)

    def type_as(self, other):
        return self.to(other.dtype)

    def t(self):
        return F.t(self)

    def det(self):
        """``nn.linalg.det(self)``."""
        return _linalg().det(self)

    def inverse(self):
        """``nn.linalg.inv(self)``."""
        return _linalg().inv(self)

    def logdet(self):
        return _linalg().logdet(self)

    def slogdet(self):
        return _linalg().slogdet(self)

    def cholesky(self, upper=False):
        return _linalg().cholesky(self, upper=upper)

    def cov(self, *, correction=1, fweights=None, aweights=None):
        return F.cov(self, correction=correction, fweights=fweights, aweights=aweights)

    def corrcoef(self):
        return F.corrcoef(self)

    @property
    def T(self):
        return F.permute(self, tuple(reversed(range(self.ndim))))

    @property
    def mT(self):
        return F.transpose(self, -2, -1)


# Methods that call the operator of the same name with the tensor first: ``x.clamp(0, 1)`` is
# ``nn.clamp(x, 0, 1)``. In-place forms (``x.clamp_(0, 1)``) compute out of place, then write
# the result into this tensor's storage (see ``Tensor._inplace``).
METHODS = """
    add sub mul div true_divide neg negative pow matmul mm bmm mv dot outer addmm
    absolute subtract multiply divide
    lt le gt ge eq ne
    less less_equal greater greater_equal equal not_equal
    exp exp2 log log2 log10 log1p expm1 sqrt rsqrt square abs sign sin cos tan asin acos atan
    sinh cosh erf reciprocal floor ceil round trunc frac sigmoid tanh relu clamp clip
    clamp_min clamp_max maximum minimum fmod remainder floor_divide lerp atan2
    logical_not logical_and logical_or logical_xor bitwise_not bitwise_and bitwise_or
    bitwise_xor bitwise_left_shift bitwise_right_shift isnan isinf isfinite nan_to_num where
    masked_fill clone contiguous
    sum mean max min amax amin argmax argmin var std prod logsumexp softmax log_softmax all
    any cumsum cumprod norm sort argsort topk
    flatten unflatten squeeze unsqueeze transpose swapaxes swapdims movedim moveaxis narrow
    split chunk unbind
    flip roll diagonal tril triu
    gather scatter scatter_add index_select masked_select take nonzero index_add index_fill
    scatter_reduce index_put
    broadcast_to diff nanmean addcmul addcdiv
    ravel select take_along_dim tensor_split hsplit vsplit dsplit rot90 diag diag_embed trace
    kron cross argwhere count_nonzero nansum cummax cummin logcumsumexp fmax fmin hypot
    heaviside sgn xlogy float_power frexp ldexp dist renorm addmv aminmax quantile nanquantile
    bincount histc index_copy masked_scatter msort lgamma digamma erfinv
""".split()
INPLACE = """
    add sub mul div pow neg exp log sqrt abs sigmoid tanh relu clamp clamp_min clamp_max
    floor ceil round trunc reciprocal sign sin cos lerp masked_fill scatter scatter_add
    index_fill index_add fmod remainder clip exp2 square frac atan2 addcmul addcdiv
    scatter_reduce index_put bitwise_and bitwise_or bitwise_xor bitwise_left_shift
    bitwise_right_shift fmax fmin hypot heaviside sgn xlogy float_power ldexp renorm addmv
    index_copy masked_scatter lgamma digamma erfinv floor_divide
""".split()


def _method(name):
    def method(self, *args, **kwargs):
        return getattr(F, name)(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"``nn.{name}(self, ...)``."
    return method


def _inplace_method(name):
    def method(self, *args, **kwargs):
        return self._inplace(getattr(F, name), *args, **kwargs)
    method.__name__ = name + "_"
    method.__doc__ = f"``nn.{name}(self, ...)`` written into this tensor."
    return method


for _name in METHODS:
    if _name not in Tensor.__dict__:
        setattr(Tensor, _name, _method(_name))
for _name in INPLACE:
    if _name + "_" not in Tensor.__dict__:
        setattr(Tensor, _name + "_", _inplace_method(_name))


def _can_cast(src, dst) -> bool:
    """PyTorch's rule for writing a result of dtype ``src`` into a tensor of dtype ``dst``:
    anything but floating into integral or bool, and anything but bool into bool."""
    if src in FLOATING:
        return dst in FLOATING
    return dst != "bool" or src == "bool"


def _dense(array) -> bool:
    """Whether ``array`` covers a gap-free block of memory, each element once (PyTorch's
    "non-overlapping and dense"), its dimensions in any order."""
    expected = array.itemsize
    for n, stride in sorted((p for p in zip(array.shape, array.strides) if p[0] != 1),
                            key=lambda p: p[1]):
        if stride != expected:
            return False
        expected *= n
    return True


def _partial_overlap(a, b) -> bool:
    """Whether host arrays ``a`` and ``b`` share memory without being the same elements in
    the same layout: PyTorch's "partial" overlap. Layouts it cannot judge cheaply (not
    dense: strided, broadcast) pass, as in PyTorch."""
    if a is b or not a.size or not b.size or not np.may_share_memory(a, b):
        return False
    if not (_dense(a) and _dense(b)):
        return False
    a_begin = a.__array_interface__["data"][0]
    b_begin = b.__array_interface__["data"][0]
    if (a_begin, a.nbytes) == (b_begin, b.nbytes):
        same = [(n, s) for n, s in zip(a.shape, a.strides) if n != 1] == \
            [(n, s) for n, s in zip(b.shape, b.strides) if n != 1]
        return not same
    return a_begin < b_begin + b.nbytes and b_begin < a_begin + a.nbytes


def _refuse_partial_overlap(dst, sources):
    """PyTorch's error for an in-place write into ``dst`` from a tensor that overlaps it in
    memory other than element for element (``y[1:].add_(y[:-1])``; ``x.add_(x)`` is fine)."""
    if not isinstance(dst._data, np.ndarray):
        return              # GPU views are copies (see ``Tensor._view_of``)
    for src in sources:
        if isinstance(src._data, np.ndarray) and _partial_overlap(dst._data, src._data):
            raise RuntimeError("unsupported operation: some elements of the input tensor and "
                               "the written-to tensor refer to a single memory location. "
                               "Please clone() the tensor before performing the operation.")


def _copy_of(dst, src):
    """``src`` as ``copy_`` writes it into ``dst``: on its device, of its dtype and shape."""
    return F.expand(F.cast(F.to_device(src, dst.device), dst.dtype), dst.shape)


_DTYPE_NAMES = {}


def dtype_name(dtype) -> str:
    """``np.dtype(dtype).name``, memoized (numpy computes the name anew each time, ~3 us)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = np.dtype(dtype).name
    return name


_versions = {}          # id of a root array -> [version], while that array lives


def _counter(array) -> list:
    """The version counter of the storage ``array`` views (its root array)."""
    while isinstance(getattr(array, "base", None), np.ndarray):
        array = array.base
    key = id(array)
    entry = _versions.get(key)
    if entry is None:
        entry = _versions[key] = [0]
        weakref.finalize(array, _versions.pop, key, None)
    return entry


_gpu_views = {}         # id of a GPU array -> {id(view): weakref to a GPU view made of it}


def register_gpu_view(view):
    """Remember ``view`` (a copy, see ``Tensor._view_of``) with the GPU storage it was taken
    from, so that in-place writes into that storage update its values too."""
    storage = view._view_of[0]._data
    views = _gpu_views.get(id(storage))
    if views is None:
        views = _gpu_views[id(storage)] = {}
        weakref.finalize(storage, _gpu_views.pop, id(storage), None)
    key = id(view)
    views[key] = weakref.ref(view, lambda _, views=views, key=key: views.pop(key, None))


def _refresh_gpu_views(storage):
    """Copy the new values of the GPU array ``storage`` into the views made of it (and into
    theirs): a GPU view is a copy, which must read as a view after a write into its base."""
    host = None
    for ref in list(_gpu_views.get(id(storage), {}).values()):
        view = ref()
        if view is None or view._view_of[0]._data is not storage:
            continue                # dead, or it has taken other storage since (_reshape_)
        if host is None:
            host = np.ascontiguousarray(devices.host(storage))
        _, offset, strides = view._view_of
        window = np.ndarray(view.shape, view._data.dtype, buffer=host, offset=offset,
                            strides=strides)
        view._data.copy_to_device(window.copy(order="C"))
        _counter(view._data)[0] += 1
        if id(view._data) in _gpu_views:
            _refresh_gpu_views(view._data)


def _dim(dim, ndim):
    """``dim`` counted from 0, as PyTorch wraps negative dimensions."""
    bound = max(ndim, 1)
    if not -bound <= dim < bound:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-bound}, {bound - 1}], but got {dim})")
    return dim % bound


def _sizes(args):
    """Sizes given as ``f(2, 3)`` or ``f((2, 3))``."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _formatter(data):
    """PyTorch's number style: ``1.`` when every value is whole, else 4 decimals."""
    if data.dtype.kind != "f":
        return None
    finite = data[np.isfinite(data)]
    if finite.size and np.all(finite == np.round(finite)) and np.abs(finite).max() < 1e8:
        return {"float_kind": lambda v: f"{v:.0f}." if np.isfinite(v) else str(v)}
    big = finite.size and (np.abs(finite).max() >= 1e8 or 0 < np.abs(finite[finite != 0]
                                                                       ).min(initial=1) < 1e-4)
    spec = ".4e" if big else ".4f"
    return {"float_kind": lambda v: format(v, spec) if np.isfinite(v) else str(v)}


# ----------------------------------------------------------------------------- factories

def _dtype(dtype):
    return None if dtype is None else dtype_name(dtype)


def _check_device(device):
    """The device a factory was asked for (``None``: the CPU), or PyTorch's error."""
    if device is None:
        return devices.CPU
    if not isinstance(device, (str, devices.device)):
        raise TypeError(f"device must be None, a string such as 'cpu' or 'cuda', or an "
                        f"nn.device, not {type(device).__name__}")
    return devices.device(device)


def _array(data, dtype):
    """A new array from a Python value, array or tensor, with PyTorch's default dtypes."""
    if isinstance(data, Tensor):
        data = data._data
    if isinstance(data, (np.ndarray, np.generic)):
        arr = np.array(data, dtype=_dtype(dtype))
    else:
        leaves = []
        if isinstance(data, (list, tuple)):
            data = _scalars_of(data, leaves)
        arr = np.array(data)
        if leaves and dtype is None and arr.dtype == np.float64 and "float64" not in leaves:
            arr = arr.astype(_DEFAULT_DTYPE[0])   # the tensors' dtypes and Python floats decide
            leaves = ()
        elif leaves and dtype is None:
            return arr
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"nn.tensor: cannot make a tensor from {type(data).__name__} "
                            f"(numpy dtype {arr.dtype})")
        if dtype is None and arr.dtype == np.float64:
            arr = arr.astype(_DEFAULT_DTYPE[0])   # a Python float: the default (float32)
        elif dtype is not None:
            arr = arr.astype(_dtype(dtype))
    return arr


def _scalars_of(data, dtypes):
    """Nested lists with their one-element tensors as numpy scalars (PyTorch takes their
    values, as ``item()``); the tensors' dtypes are appended to ``dtypes``."""
    out = []
    for item in data:
        if isinstance(item, Tensor):
            if item.numel() != 1:
                raise ValueError("only one element tensors can be converted to Python scalars")
            dtypes.append(item.dtype)
            item = devices.host(item._data).reshape(-1)[0]
        elif isinstance(item, (list, tuple)):
            item = _scalars_of(item, dtypes)
        out.append(item)
    return out


def _size(size, name):
    """Sizes given as ``f(2, 3)``, ``f((2, 3))`` or ``f(size=...)``, checked."""
    shape = _sizes(size)
    for n in shape:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"{name}(): argument 'size' must be a tuple of ints, but found "
                            f"element of type {type(n).__name__}")
        if n < 0:
            raise RuntimeError(f"{name}(): trying to create tensor with negative dimension "
                               f"{n}: {list(shape)}")
    return tuple(int(n) for n in shape)


def _new(data, device, requires_grad) -> Tensor:
    return Tensor(devices.move(data, _check_device(device)), requires_grad=requires_grad)


def tensor(data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (a number, nested lists or an array)."""
    return _new(_array(data, dtype), device, requires_grad)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor on the storage of ``array`` (no copy: writes show in both)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    return Tensor(array)


def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value`` (its dtype by PyTorch's rules)."""
    if dtype is None:
        dtype = _array(fill_value, None).dtype
    data = np.full(_size((size,), "full"), fill_value, dtype=_dtype(dtype))
    return _new(data, device, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _new(np.zeros(_size(size, "zeros"), _dtype(dtype) or _DEFAULT_DTYPE[0]),
                device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _new(np.ones(_size(size, "ones"), _dtype(dtype) or _DEFAULT_DTYPE[0]), device,
                requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ``size`` whose values are whatever the new memory holds."""
    return _new(np.empty(_size(size, "empty"), _dtype(dtype) or _DEFAULT_DTYPE[0]),
                device, requires_grad)


def zeros_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    device = input.device if device is None else device
    return zeros(input.shape, dtype=dtype or input.dtype, device=device,
                 requires_grad=requires_grad)


def ones_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    device = input.device if device is None else device
    return ones(input.shape, dtype=dtype or input.dtype, device=device,
                requires_grad=requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    device = input.device if device is None else device
    return full(input.shape, fill_value, dtype=dtype or input.dtype, device=device,
                requires_grad=requires_grad)


def empty_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    device = input.device if device is None else device
    return empty(input.shape, dtype=dtype or input.dtype, device=device,
                 requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``[start, end)`` by ``step``: int64 for ints, float32 when any bound is a float."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("arange(): step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange(): upper bound ({end}) and lower bound ({start}) "
                           f"inconsistent with step sign ({step})")
    if dtype is None:
        whole = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = "int64" if whole else _DEFAULT_DTYPE[0]
    return _new(np.arange(start, end, step, dtype=_dtype(dtype)), device, requires_grad)


def _steps(steps, name):
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise RuntimeError(f"{name}(): number of steps must be a non-negative int, got "
                           f"{steps!r}")
    return int(steps)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included."""
    values = np.linspace(start, end, _steps(steps, "linspace"), dtype="float64")
    return _new(values.astype(_dtype(dtype) or _DEFAULT_DTYPE[0]), device, requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    """``base`` to the powers ``linspace(start, end, steps)``."""
    values = np.logspace(start, end, _steps(steps, "logspace"), base=base, dtype="float64")
    return _new(values.astype(_dtype(dtype) or _DEFAULT_DTYPE[0]), device, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """The ``n x m`` (``n x n``) matrix with ones on the diagonal."""
    for name, v in (("n", n), ("m", m)):
        if v is not None and v < 0:
            raise RuntimeError(f"eye(): {name} must be greater or equal to 0, got {v}")
    return _new(np.eye(n, m, dtype=_dtype(dtype) or _DEFAULT_DTYPE[0]), device,
                requires_grad)


# ----------------------------------------------------------------------------- random

_generator = np.random.default_rng()


def manual_seed(seed):
    """Seed nn's generator (``nn.default_generator``, in place): the random factories,
    dropout and ``nn.init`` draw from it. Returns it, as PyTorch's does."""
    global _generator
    if hasattr(_generator, "manual_seed"):      # nn.Generator (nn.random installs one)
        return _generator.manual_seed(seed)
    _generator = np.random.default_rng(seed)
    return _generator


def _rng(generator):
    """``generator`` (a ``numpy.random.Generator``), or nn's generator when None."""
    if generator is None:
        return _generator
    if not isinstance(generator, np.random.Generator):
        raise TypeError("generator must be None or a numpy.random.Generator, got "
                        f"{type(generator).__name__}")
    return generator


def _floating_dtype(dtype, name):
    dtype = _dtype(dtype) or _DEFAULT_DTYPE[0]
    if dtype not in FLOATING:
        raise TypeError(f"{name}(): expected a floating point dtype, got {dtype}")
    return dtype


def _uniform(shape, dtype, generator, name):
    return _rng(generator).random(shape).astype(_floating_dtype(dtype, name))


def _normal(shape, dtype, generator, name):
    return _rng(generator).standard_normal(shape).astype(_floating_dtype(dtype, name))


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform on [0, 1)."""
    return _new(_uniform(_size(size, "rand"), dtype, generator, "rand"), device,
                requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal."""
    return _new(_normal(_size(size, "randn"), dtype, generator, "randn"), device,
                requires_grad)


def rand_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    device = input.device if device is None else device
    return rand(input.shape, dtype=dtype or input.dtype, device=device,
                requires_grad=requires_grad)


def randn_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    device = input.device if device is None else device
    return randn(input.shape, dtype=dtype or input.dtype, device=device,
                 requires_grad=requires_grad)


def _integers(low, high, shape, dtype, generator, device, requires_grad, name):
    if high is None:
        raise TypeError(f"{name}() missing required argument 'high'")
    if low >= high:
        raise RuntimeError(f"{name}(): random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={high}")
    data = _rng(generator).integers(low, high, shape).astype(_dtype(dtype) or "int64")
    return _new(data, device, requires_grad)


def randint(low=0, high=None, size=None, generator=None, dtype=None, device=None,
            requires_grad=False) -> Tensor:
    """Integers uniform on [low, high): ``randint(high, size)`` or ``randint(low, high,
    size)``, int64 unless ``dtype`` says otherwise."""
    if size is None and isinstance(high, (tuple, list)):
        low, high, size = 0, low, high          # randint(high, size)
    if size is None:
        raise TypeError("randint() missing required argument 'size' (a tuple of ints)")
    return _integers(low, high, _size((size,), "randint"), dtype, generator, device,
                     requires_grad, "randint")


def randint_like(input, low=0, high=None, dtype=None, device=None,
                 requires_grad=False) -> Tensor:
    """``randint`` with the shape (and dtype) of ``input``: ``randint_like(input, high)`` or
    ``randint_like(input, low, high)``."""
    device = input.device if device is None else device
    if high is None:
        low, high = 0, low
    return _integers(low, high, input.shape, dtype or input.dtype, None, device,
                     requires_grad, "randint_like")


def randperm(n, generator=None, dtype="int64", device=None, requires_grad=False) -> Tensor:
    """A random permutation of ``0 .. n - 1``."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise RuntimeError(f"randperm(): n must be a non-negative int, got {n!r}")
    return _new(_rng(generator).permutation(int(n)).astype(_dtype(dtype)), device,
                requires_grad)


def normal(mean, std=1.0, size=None, generator=None, dtype=None, device=None,
           requires_grad=False) -> Tensor:
    """Normal samples with PyTorch's forms: ``normal(mean, std, size)`` for numbers, or tensors
    ``mean`` and/or ``std`` (one sample per element of their broadcast shape)."""
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    if tensors and size is not None:
        raise RuntimeError("normal(): give size only when mean and std are numbers")
    if not tensors and size is None:
        raise TypeError("normal() with a number mean and std needs size")
    if tensors:
        dtype = dtype or tensors[0].dtype
        mean_, std_ = (t._data if isinstance(t, Tensor) else t for t in (mean, std))
        shape = np.broadcast_shapes(np.shape(mean_), np.shape(std_))
    else:
        mean_, std_, shape = mean, std, _size((size,), "normal")
    if np.any(np.asarray(std_) < 0):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    values = mean_ + std_ * _rng(generator).standard_normal(shape)
    return _new(values.astype(_floating_dtype(dtype, "normal")), device, requires_grad)


# ----------------------------------------------------------------------------- composites

def median(input, dim=None, keepdim=False):
    """The lower median (PyTorch's): of all elements, or ``(values, indices)`` along
    ``dim``; NaN where the reduced elements hold a NaN (``nanmedian`` ignores them)."""
    return _median(input, dim, keepdim, False)


def nanmedian(input, dim=None, keepdim=False):
    """``median`` of the elements that are not NaN (NaN where all are)."""
    return _median(input, dim, keepdim, True)


def _median(input, dim, keepdim, ignore_nan):
    from .functions import sorting
    if dim is None:
        if input.numel() == 0:
            return full((), float("nan"), dtype=input.dtype, device=input.device)
        return (sorting.Nanmedian if ignore_nan else sorting.Median).apply(input)
    values, indices = sorting.median_along(input, dim, keepdim, ignore_nan)
    return (nanmedian_result if ignore_nan else median_result)(values, indices)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> Tensor:
    """``|input - other| <= atol + rtol * |other|`` elementwise (equal infinities too)."""
    if not isinstance(other, Tensor):
        other = full((), other, dtype=input.dtype, device=input.device)
    if input.dtype != other.dtype:
        raise RuntimeError(f"{input.dtype} did not match {other.dtype}")
    with autograd.no_grad():
        close = input == other
        if input.is_floating_point():
            a, b = input.double(), other.double()
            diff = (a - b).abs()
            finite = F.isfinite(a) & F.isfinite(b)
            close = close | (finite & (diff <= atol + rtol * b.abs()))
            if equal_nan:
                close = close | (F.isnan(a) & F.isnan(b))
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None) -> Tensor:
    """Each element (slice along ``dim``) repeated ``repeats`` times (an int, or one count
    per element); ``repeat_interleave(counts)`` repeats the indices ``0 .. len - 1``."""
    if repeats is None:                         # repeat_interleave(repeats_tensor)
        counts = devices.host(input._data).astype("int64")
        return tensor(np.repeat(np.arange(counts.size), counts), device=input.device)
    if dim is None:
        input, dim = input.reshape(-1), 0
    d = _dim(dim, input.ndim)
    counts = devices.host(repeats._data) if isinstance(repeats, Tensor) else repeats
    counts = np.asarray(counts, "int64")
    n = input.shape[d]
    if counts.ndim and counts.size not in (1, n):
        raise RuntimeError("repeats must have the same size as input along dim")
    if np.any(counts < 0):
        raise RuntimeError("repeats can not be negative")
    index = tensor(np.repeat(np.arange(n), counts.reshape(-1) if counts.ndim else counts),
                   device=input.device)
    return F.index_select(input, d, index)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, sharing memory where it can: a tensor of that dtype and device
    is returned as is, a numpy array of that dtype on the CPU is not copied."""
    if isinstance(data, Tensor):
        out = data if dtype is None else data.to(_dtype(dtype))
        return out if device is None else out.to(device)
    if isinstance(data, np.ndarray) and (dtype is None or _dtype(dtype) == data.dtype.name) \
            and _check_device(device) == devices.CPU and data.dtype.kind in "biuf":
        return Tensor(data)
    return tensor(data, dtype=dtype, device=device)


def is_tensor(obj) -> bool:
    """Whether ``obj`` is an ``nn.Tensor``."""
    return isinstance(obj, Tensor)


def bernoulli(input, p=None, *, generator=None) -> Tensor:
    """Draws of 0 or 1, each 1 with probability ``input`` (or with ``p`` when given), in the
    dtype of ``input``. As in PyTorch the gradient to ``input`` is zero."""
    probs = devices.host(input._data) if p is None else np.full(input.shape, p, "float64")
    if np.any(~((probs >= 0) & (probs <= 1))):
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}" if p is not None
                           else "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  "
                                "(Could this error message be improved?  If so, please report "
                                "an enhancement request to PyTorch.)")
    draws = (_rng(generator).random(input.shape) < probs).astype(input.dtype)
    out = Tensor(devices.move(draws, input.device))
    if input.requires_grad and autograd.is_grad_enabled():
        out = out + input * 0           # in the graph, with a zero gradient (PyTorch's)
    return out


def multinomial(input, num_samples, replacement=False, *, generator=None) -> Tensor:
    """``num_samples`` category indices per row of ``input`` (1-D or 2-D non-negative
    weights), drawn with or without ``replacement`` (int64)."""
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.is_floating_point():
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{input.dtype}")
    n = input.shape[-1]
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    weights = devices.host(input._data).astype("float64").reshape(-1, n)
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    totals = weights.sum(axis=1, keepdims=True)
    if np.any(totals <= 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rng = _rng(generator)
    if replacement:
        cumulative = np.cumsum(weights / totals, axis=1)
        draws = rng.random((weights.shape[0], num_samples))
        rows = [np.searchsorted(c, d, side="right") for c, d in zip(cumulative, draws)]
        picked = np.minimum(np.array(rows), n - 1)
    else:   # the largest weight / Exp(1) keys, as PyTorch's (zero weights come last)
        keys = weights / rng.exponential(size=weights.shape)
        picked = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    picked = picked.astype("int64").reshape(input.shape[:-1] + (num_samples,))
    return Tensor(devices.move(picked, input.device))


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements (sorted; with ``dim``, the distinct slices along it), with the
    index of each input element in them and the counts when asked. Not differentiable."""
    data = devices.host(input._data)
    if dim is not None:
        d = _dim(dim, input.ndim)
        values, inverse, counts = np.unique(data, return_inverse=True, return_counts=True,
                                            axis=d)
        inverse = inverse.reshape(-1)
    else:
        # each NaN distinct (NaN != NaN), as PyTorch's; numpy would merge them
        values, inverse, counts = np.unique(data, return_inverse=True, return_counts=True,
                                            equal_nan=False)
        inverse = inverse.reshape(input.shape)
    out = [Tensor(devices.move(values, input.device))]
    if return_inverse:
        out.append(Tensor(devices.move(inverse.astype("int64"), input.device)))
    if return_counts:
        out.append(Tensor(devices.move(counts.astype("int64"), input.device)))
    return out[0] if len(out) == 1 else tuple(out)


def _bernoulli_(self, p=0.5, *, generator=None):
    """Fill this tensor with draws that are 1 with probability ``p`` (a number or a tensor
    that broadcasts to it)."""
    with autograd.no_grad():
        if isinstance(p, Tensor):
            drawn = bernoulli(F.expand(p, self.shape).to(self.dtype), generator=generator)
        else:
            drawn = bernoulli(self, p, generator=generator)
    return self.copy_(drawn)


Tensor.bernoulli = lambda self, p=None, *, generator=None: bernoulli(self, p, generator=generator)
Tensor.bernoulli_ = _bernoulli_
Tensor.multinomial = multinomial
Tensor.unique = unique


from . import functions as F  # noqa: E402  (the operators build on Tensor)
from .functions.base import torch_name as _torch_name  # noqa: E402
from .functions.index import rebase_inplace as _rebase_inplace  # noqa: E402
from .functions.index import Take as _Take, _view_positions  # noqa: E402
from .functions.shape import gpu_view_contiguous as _gpu_view_contiguous  # noqa: E402


def _linalg():
    from . import linalg
    return linalg


def numel(input) -> int:
    """The number of elements of ``input``."""
    return input.numel()


def is_floating_point(input) -> bool:
    """Whether ``input`` has a floating point dtype."""
    return input.is_floating_point()


def get_default_dtype():
    """The dtype of Python floats and of the floating factories (float32 unless set)."""
    return as_dtype(_DEFAULT_DTYPE[0])


def set_default_dtype(d):
    """Make ``d`` (float32 or float64; float16 too) the dtype of Python floats and of the
    floating factories, as ``torch.set_default_dtype``."""
    name = _dtype(d)
    if name not in FLOATING:
        raise TypeError("only floating-point types are supported as the default type")
    _DEFAULT_DTYPE[0] = name
