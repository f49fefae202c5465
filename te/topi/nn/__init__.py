"""Neural-network operators (TVM's ``topi.nn``): activations, padding, convolutions, dense
layers, pooling and softmax, as te declarations (NCHW layouts)."""
from .elemwise import relu, leaky_relu, prelu
from .pad import pad
from .conv2d import conv2d_nchw, conv2d, depthwise_conv2d_nchw, get_pad_tuple
from .dense import dense, batch_matmul, matmul
from .pooling import pool2d, global_pool
from .softmax import softmax, log_softmax
from ..transform import flatten

__all__ = ["relu", "leaky_relu", "prelu", "pad", "conv2d_nchw", "conv2d",
           "depthwise_conv2d_nchw", "get_pad_tuple", "dense", "batch_matmul", "matmul",
           "pool2d", "global_pool", "softmax", "log_softmax", "flatten"]
