"""te.topi: TVM's operator library (``tvm.topi``) as te declarations, with default schedules.

    from te import topi
    C = topi.add(A, B)                      # numpy broadcasting, tagged "broadcast"
    D = topi.nn.conv2d_nchw(X, W, stride=1, padding=1, dilation=1)
    s = topi.x86.schedule_conv2d_nchw([D])  # or topi.generic.* / topi.cuda.*

Declarations build te compute ops and import nothing below te; the schedules create their
schedule through te's facade when called.
"""
from . import tag, utils
from .broadcast import (add, subtract, multiply, divide, floor_divide, trunc_divide, mod,
                        floor_mod, trunc_mod, maximum, minimum, power, left_shift, right_shift,
                        equal, not_equal, less, less_equal, greater, greater_equal,
                        logical_and, logical_or, logical_xor, bitwise_and, bitwise_or,
                        bitwise_xor, broadcast_shape)
from .math import (exp, log, log2, log10, sqrt, rsqrt, tanh, sigmoid, erf, sin, cos, tan,
                   floor, ceil, round, trunc, abs, negative, identity, isnan, logical_not,
                   bitwise_not, cast, clip, elemwise_sum, full_like, zeros_like, ones_like)
from .transform import (reshape, transpose, concatenate, split, take, expand_dims, squeeze,
                        broadcast_to)
from .reduction import sum, max, min, prod, argmax, argmin, all, any
from . import nn, generic, x86, cuda
from .nn import matmul
