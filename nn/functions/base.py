"""What the differentiable operators share: running a compiled kernel, dtype promotion,
broadcast shapes, reducing a broadcast gradient, reduced axes, and ``Op``, the base class of
the built-in operators (its nodes are named as PyTorch's: ``MulBackward0``).

``kernel_calls`` counts the kernel calls per declaration, so tests can see where work ran."""
from __future__ import annotations

import builtins
import collections

import numpy as np

from nn.ops import cpu, declare
from nn.ops import host as host_knobs

from .. import device as devices
from ..autograd import Function
from ..device import is_gpu
from ..tensor import (FLOATING, Tensor, _dim, arange, dtype_name,  # noqa: F401  (re-exported)
                      max_result, _DEFAULT_DTYPE)

kernel_calls = collections.Counter()


def _kernel(declare, *arrays, out_shape, **params):
    """Run the compiled ``declare`` on ``arrays``, the result reshaped to ``out_shape``.

    Kernels take contiguous arrays of rank 1 or more: 0-d operands run as shape (1,). Arrays
    on the GPU run the GPU build of the declaration (``nn.ops.gpu.build``; a CPU
    ``schedule=`` among ``params`` is then ignored).
    """
    if any(map(is_gpu, arrays)):
        return Tensor(_gpu_kernel(declare, arrays, params).reshape(out_shape))
    arrays = [a.reshape(a.shape or (1,)) for a in arrays]
    return Tensor(_cpu_kernel(declare, arrays, params).reshape(out_shape))


def _kernel_f32(declare, *arrays, out_shape, **params):
    """``_kernel`` that accumulates float16 in float32, as PyTorch's reductions and products
    do: float16 arrays run widened to float32 and the result is rounded to float16 once, at
    the end. Other dtypes run ``declare`` as they are."""
    if not any(dtype_name(a.dtype) == "float16" for a in arrays):
        return _kernel(declare, *arrays, out_shape=out_shape, **params)
    wide = [_astype(a, "float32") if dtype_name(a.dtype) == "float16" else a for a in arrays]
    out = _kernel(declare, *wide, out_shape=out_shape, **params)
    return Tensor(_astype(out._data, "float16")) if out.dtype == "float32" else out


def _astype(array, dtype):
    """``array`` converted to ``dtype`` by a te kernel (on the array's device)."""
    return _kernel(declare.astype, array, out_shape=array.shape, to=dtype)._data


_plans = {}         # (declare, shapes, dtypes, params, host knobs) -> the built function
PLANS_MAX = 8192
_BUILD = cpu.build


def _cpu_kernel(declare, arrays, params):
    """The CPU build of ``declare`` run on host ``arrays`` (strided ones made contiguous by a
    kernel); counted in ``kernel_calls``. Returns its output array(s).

    The built function is looked up by the arrays' shapes and numpy dtypes in a plain dict
    (a cached call plan) before ``cpu.build``'s normalizing of its arguments."""
    arrays = [a if a.flags.c_contiguous else _host_contiguous(a) for a in arrays]
    try:
        key = (declare, tuple([a.shape for a in arrays]), tuple([a.dtype for a in arrays]),
               tuple(params.items()), host_knobs.token())
        f = _plans.get(key)
    except TypeError:               # an unhashable parameter (a list): no plan
        key, f = None, None
    if f is None or cpu.build is not _BUILD:      # (a test may have replaced cpu.build)
        f = cpu.build(declare, [a.shape for a in arrays],
                      [dtype_name(a.dtype) for a in arrays], **params)
        if key is not None:
            if len(_plans) >= PLANS_MAX:
                _plans.clear()
            _plans[key] = f
    kernel_calls[declare.__name__] += 1
    return f(*arrays)


def _host_contiguous(array):
    """A strided view (transposed, sliced, expanded) copied by a te kernel into C order."""
    from .shape import contiguous_data
    return contiguous_data(array)


def _gpu_kernel(declare, arrays, params):
    from nn.ops import gpu
    # 0-d CPU operands (numbers) join a GPU kernel, as PyTorch lets CPU scalars do
    arrays = [devices.move(a, devices.CUDA) if not is_gpu(a) and a.ndim == 0 else a
              for a in arrays]
    devices.common(arrays)
    arrays = [_contiguous(a).reshape(tuple(a.shape) or (1,)) for a in arrays]
    f = gpu.build(declare, [a.shape for a in arrays], [dtype_name(a.dtype) for a in arrays],
                  **params)
    kernel_calls[declare.__name__] += 1
    return f(*arrays)


def _contiguous(array):
    """A C-contiguous GPU array with the values of ``array`` (a te copy kernel if needed)."""
    if array.is_c_contiguous():
        return array
    raise RuntimeError("nn: a non-contiguous GPU tensor reached a kernel; call .contiguous() "
                       "on it first")


# ----------------------------------------------------------------------------- dtypes, shapes

_TORCH_NAMES = {"float32": ("Float", "float"), "float64": ("Double", "double"),
                "float16": ("Half", "c10::Half"), "bfloat16": ("BFloat16", "c10::BFloat16"),
                "int64": ("Long", "long int"), "int32": ("Int", "int"),
                "int16": ("Short", "short int"), "int8": ("Char", "signed char"),
                "uint8": ("Byte", "unsigned char"), "bool": ("Bool", "bool")}


def torch_name(dtype, c_name=False):
    """PyTorch's name of ``dtype`` in its messages: ``Float``, ``Long``, or with ``c_name``
    the C++ type (``float``, ``long int``) that some of them give."""
    return _TORCH_NAMES.get(dtype, (dtype, dtype))[c_name]


_KIND = {"b": 0, "u": 1, "i": 1, "f": 2}


def result_type(a, b) -> str:
    """PyTorch's promotion: floating > integral > bool; the wider of one kind; a Python
    number takes the tensor's dtype unless it is of a higher kind (then float32 or int64)."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        ka, kb = _KIND[a._data.dtype.kind], _KIND[b._data.dtype.kind]
        if ka == kb:
            return np.promote_types(a.dtype, b.dtype).name
        return a.dtype if ka > kb else b.dtype
    t, number = (a, b) if isinstance(a, Tensor) else (b, a)
    kind = 0 if isinstance(number, (bool, np.bool_)) else 1 if isinstance(
        number, (int, np.integer)) else 2
    if kind <= _KIND[t._data.dtype.kind]:
        return t.dtype
    return _DEFAULT_DTYPE[0] if kind == 2 else "int64"


def _operands(a, b, dtype=None):
    """``a`` and ``b`` as tensors of one dtype (a Python number becomes a 0-d tensor)."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"expected a Tensor operand, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    dtype = dtype or result_type(a, b)
    return tuple(cast(x, dtype) if isinstance(x, Tensor) else Tensor(np.array(x, dtype))
                 for x in (a, b))


def broadcast_shape(*shapes) -> tuple:
    """numpy's broadcast of ``shapes``, with PyTorch's message when they do not broadcast."""
    ndim = builtins.max(len(s) for s in shapes)
    out = []
    for d in range(-ndim, 0):
        sizes = [s[d] for s in shapes if len(s) >= -d]
        size = next((n for n in sizes if n != 1), 1)      # 0 too: (0,) and (1,) give (0,)
        for k, n in enumerate(sizes):
            if n not in (1, size):
                raise RuntimeError(f"The size of tensor a ({sizes[0]}) must match the size of "
                                   f"tensor b ({sizes[-1]}) at non-singleton dimension "
                                   f"{ndim + d}")
        out.append(size)
    return tuple(out)


def _sum_to(g, shape):
    """``g`` summed over the axes that broadcasting added or repeated to reach ``shape``."""
    if g.shape == tuple(shape):
        return g
    lead = g.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(lead + k for k, n in enumerate(shape)
                                      if n == 1 and g.shape[lead + k] != 1)
    return g.sum(dims, keepdim=True).reshape(shape) if dims else g.reshape(shape)


def _floating(x, what):
    if not x.is_floating_point():
        raise RuntimeError(f"{what}: expected a floating point tensor, got {x.dtype}")


def _binary(declare, a, b):
    return _kernel(declare, a._data, b._data, out_shape=broadcast_shape(a.shape, b.shape))


class Op(Function):
    """A built-in operator: its node is named as PyTorch's (``MulBackward0``)."""
    node_suffix = "Backward0"


def _int_dims(dim):
    """``dim`` (an int or a sequence of them) as a tuple of ints; PyTorch's TypeError for
    anything else (``sum(dim=1.0)``, ``sum(dim="x")``)."""
    if isinstance(dim, (int, np.integer)):
        return (int(dim),)
    if not isinstance(dim, (tuple, list)):
        raise TypeError(f"argument 'dim' must be tuple of ints, not {type(dim).__name__}")
    for k, d in enumerate(dim):
        if not isinstance(d, (int, np.integer)):
            raise TypeError(f"argument 'dim' must be tuple of ints, but found element of type "
                            f"{type(d).__name__} at pos {k}")
    return tuple(int(d) for d in dim)


def _dims(dim, ndim):
    """Reduced axes as a sorted tuple; None means all."""
    if dim is None:
        return tuple(range(ndim))
    dims = sorted({_dim(d, ndim) for d in _int_dims(dim)})
    return tuple(d for d in dims if d < ndim)


def _kept(shape, dims):
    """``shape`` with the ``dims`` set to 1 (the keepdim shape)."""
    return tuple(1 if d in dims else n for d, n in enumerate(shape))


def _reduced(shape, dims, keepdim):
    return _kept(shape, dims) if keepdim else tuple(n for d, n in enumerate(shape)
                                                     if d not in dims)


class ToCopy(Op):
    """A conversion to another dtype."""

    @staticmethod
    def forward(ctx, x, to):
        ctx.dtype = x.dtype
        return _kernel(declare.astype, x._data, out_shape=x.shape, to=to)

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.dtype), None


def cast(x, dtype):
    """``x`` converted to ``dtype`` (``x`` itself when it has it)."""
    dtype = dtype_name(dtype)
    return x if x.dtype == dtype else ToCopy.apply(x, dtype)


class ToDevice(Op):
    """A copy to another device; the gradient goes back to the input's device."""

    @staticmethod
    def forward(ctx, x, to):
        ctx.device = x.device
        return Tensor(devices.move(x._data, to))

    @staticmethod
    def backward(ctx, g):
        return to_device(g, ctx.device), None


def to_device(x, to):
    """``x`` on device ``to`` (``x`` itself when it is there)."""
    to = devices.device(to)
    return x if x.device == to else ToDevice.apply(x, to)
