"""Operators for the CPU, TOPI style: te declarations and default schedules for x86 (AVX-512).

Each declaration takes te tensors and returns the output tensor; each ``schedule_*`` takes the
output and returns a schedule for ``te.build(s, [inputs..., out], target="llvm")``. ``build``
does both for given shapes and returns a cached callable on numpy arrays:

    f = cpu.build(cpu.matmul, [(1024, 512), (512, 256)])
    c = f(a, b)                      # allocates the output; f.module is the te module

    operators                                   default schedule
    ------------------------------------------  ----------------------
    broadcast(fn, *xs), add, ..., relu, exp     schedule_injective
    matmul, dense, batch_matmul                 schedule_matmul        (nn/ops/cpu_matmul.py)
    conv2d_nchw                                 schedule_conv2d_nchw   (nn/ops/cpu_conv.py)
    sum, mean, max, min                         schedule_reduce        (nn/ops/cpu_reduce.py)
    softmax                                     schedule_softmax       (nn/ops/cpu_reduce.py)

The speeds measured on the development machine are in each schedule's docstring;
``benchmarks/cpu.py`` measures them next to numpy and PyTorch.
"""
from __future__ import annotations

import functools
import math

import numpy as np

import te
from te import dtypes
from te.nd import aligned_empty
from te.tensor import ComputeOp
from te.topi.broadcast import broadcast_compute

from . import host
from .cpu_conv import conv2d_nchw, schedule_conv2d_nchw
from .cpu_matmul import batch_matmul, dense, matmul, schedule_matmul
from .cpu_reduce import max, mean, min, schedule_reduce, schedule_softmax, softmax, sum
from .cpu_util import build_key, inline_injective, num_elements, schedule_rows

# outputs of at least this many bytes (several times the caches) get streaming stores
STREAM_BYTES = 32 << 20

__all__ = ["broadcast", "add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
           "negative", "relu", "exp", "log", "sqrt", "tanh", "sigmoid", "abs",
           "schedule_injective", "matmul", "dense", "batch_matmul", "schedule_matmul",
           "conv2d_nchw", "schedule_conv2d_nchw", "sum", "mean", "max", "min", "softmax",
           "schedule_reduce", "schedule_softmax", "build", "OpFunction"]


# ----------------------------------------------------------------------------- elementwise

def broadcast(fn, *operands, name="elemwise"):
    """``fn(*elements)`` elementwise with numpy's broadcasting; operands: tensors or scalars
    (``te.topi``'s declaration, tagged "elemwise" for the injective schedules)."""
    return broadcast_compute(fn, *operands, name=name, tag="elemwise")


def _binary(fn, opname):
    def op(a, b, name=opname):
        return broadcast(fn, a, b, name=name)
    op.__name__ = opname
    op.__doc__ = f"Elementwise {opname} with numpy's broadcasting."
    return op


def _unary(fn, opname):
    def op(x, name=opname):
        return broadcast(fn, x, name=name)
    op.__name__ = opname
    op.__doc__ = f"Elementwise {opname}."
    return op


add = _binary(lambda a, b: a + b, "add")
subtract = _binary(lambda a, b: a - b, "subtract")
multiply = _binary(lambda a, b: a * b, "multiply")
divide = _binary(lambda a, b: a / b, "divide")
maximum = _binary(lambda a, b: te.max(a, b), "maximum")
minimum = _binary(lambda a, b: te.min(a, b), "minimum")
power = _binary(te.power, "power")
# x * -1 for floats: te's -x is 0 - x, which gives +0.0 for 0.0 (PyTorch's neg gives -0.0)
negative = _unary(lambda x: x * te.const(-1, x.dtype) if "float" in x.dtype else -x,
                  "negative")
# a select, not te.max, so that NaN stays NaN (as in PyTorch)
relu = _unary(lambda x: te.select(x < te.const(0, x.dtype), te.const(0, x.dtype), x), "relu")
exp = _unary(te.exp, "exp")
log = _unary(te.log, "log")
sqrt = _unary(te.sqrt, "sqrt")
tanh = _unary(te.tanh, "tanh")
sigmoid = _unary(te.sigmoid, "sigmoid")
abs = _unary(te.abs, "abs")


def schedule_injective(outs):
    """Schedule for elementwise outputs: producers inlined into one loop nest per output.

    The leading axes are fused into one parallel loop (serial below ``PARALLEL_MIN``
    elements), the last axis is split into 16-lane vectors (float32). The last axis is not
    fused with the others, so that broadcast operands keep contiguous vector loads; when the
    lanes do not divide it, loop partitioning splits off the partial vector. Outputs of at
    least ``STREAM_BYTES`` get pragma "nontemporal": when they are 64-byte aligned (te and nn
    allocate them so), their vector stores bypass the caches, which saves the read of each
    line before it is written.

    Measured (benchmarks/cpu.py on the 2-core znver4 development machine, idle; medians;
    1 / 2 threads): ``a + b`` on 16M float32 27.8 / 34.0 GB/s, memory bound (numpy 30.8 /
    26.0, torch 25.2 / 34.7); fused ``exp(a) * b + c`` (libmvec's AVX-512 expf) 17.9 / 26.4
    GB/s, 1.2 / 1.8x numpy's three passes and 3.7 / 3.9x torch.
    """
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    s = te.create_schedule([o.op for o in outs])
    inline_injective(s, outs)
    for o in outs:
        outer, _ = schedule_rows(s, o, list(s[o].op.axis))
        total = num_elements(o.shape)
        if outer is not None and total is not None and \
                total * dtypes.bits(o.dtype) // 8 >= STREAM_BYTES:
            s[o].pragma(outer, "nontemporal")
    return s


# ----------------------------------------------------------------------------- building

# the default schedule of each declaration that is not elementwise
SCHEDULES = {matmul: schedule_matmul, dense: schedule_matmul, batch_matmul: schedule_matmul,
             conv2d_nchw: schedule_conv2d_nchw, sum: schedule_reduce, mean: schedule_reduce,
             max: schedule_reduce, min: schedule_reduce, softmax: schedule_softmax}


class OpFunction:
    """A built operator: call it on numpy arrays to get new output arrays (a tuple when the
    declaration returned several tensors)."""

    def __init__(self, module, out_shapes, out_dtypes, multiple=False):
        self.module = module
        self.out_shapes = out_shapes
        self.out_dtypes = out_dtypes
        self.multiple = multiple
        # large outputs start on a 64-byte boundary, for streaming stores (schedule_injective)
        self._alloc = tuple(aligned_empty if math.prod(s) * np.dtype(d).itemsize >= STREAM_BYTES
                            else np.empty for s, d in zip(out_shapes, out_dtypes))

    @property
    def out_shape(self):
        return self.out_shapes[0]

    @property
    def out_dtype(self):
        return self.out_dtypes[0]

    def __call__(self, *arrays, out=None):
        if out is None:
            outs = tuple(alloc(s, d) for alloc, s, d in zip(self._alloc, self.out_shapes,
                                                             self.out_dtypes))
        else:
            outs = tuple(out) if self.multiple else (out,)
        self.module(*arrays, *outs)
        return outs if self.multiple else outs[0]


@functools.lru_cache(maxsize=4096)
def _build(declare, shapes, dtypes_, schedule, params, knobs=None):
    inputs = [te.placeholder(shape, dtype, name=f"x{k}")
              for k, (shape, dtype) in enumerate(zip(shapes, dtypes_))]
    result = declare(*inputs, **dict(params))
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    for out in outs:
        if not isinstance(out.op, ComputeOp):
            raise ValueError(f"build: {getattr(declare, '__name__', declare)} did not return "
                             "computed tensors")
    if schedule is None:
        schedule = SCHEDULES.get(declare, schedule_injective)
    name = getattr(declare, "__name__", "")
    module = te.build(schedule(outs if len(outs) > 1 else outs[0]), inputs + outs,
                      target="llvm", name=name if name.isidentifier() else "op")
    return OpFunction(module, tuple(tuple(d.value for d in o.shape) for o in outs),
                      tuple(o.dtype for o in outs), isinstance(result, (tuple, list)))


def build(declare, shapes, dtype="float32", schedule=None, **params):
    """Declare ``declare(*placeholders, **params)`` for ``shapes``, schedule and compile it.

    ``dtype`` is one dtype for all inputs or one per input; ``schedule`` defaults to the
    operator's own (``schedule_injective`` for elementwise ones); it receives the output
    tensor, or the list of them when ``declare`` returns several (a tuple or list), and then
    the built function returns a tuple of arrays. Results are cached per host knobs
    (``nn.ops.host.token()``: a forced family builds its own kernels).
    """
    shapes, dts, params = build_key(shapes, dtype, params)
    return _build(declare, shapes, dts, schedule, params, host.token())
