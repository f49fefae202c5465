"""Default schedules for the CPU (TVM's ``topi.x86``): elementwise producers inlined, the
outer loops fused into one parallel loop and the innermost data axis split into SIMD vectors;
reductions parallel over their outputs, or, for a whole-tensor reduction, split across vector
lanes by ``rfactor``. ``topi.x86.tensor_intrin`` (tensorize intrinsics) loads on first use.
"""
from __future__ import annotations

import importlib

from .schedules import (schedule_injective, schedule_injective_from_existing,
                        schedule_elemwise, schedule_broadcast, schedule_concatenate,
                        schedule_reduce, schedule_conv2d_nchw, schedule_depthwise_conv2d_nchw,
                        schedule_dense, schedule_batch_matmul, schedule_matmul, schedule_pool,
                        schedule_adaptive_pool, schedule_global_pool, schedule_softmax)

__all__ = ["schedule_injective", "schedule_injective_from_existing", "schedule_elemwise",
           "schedule_broadcast", "schedule_concatenate", "schedule_reduce",
           "schedule_conv2d_nchw", "schedule_depthwise_conv2d_nchw", "schedule_dense",
           "schedule_batch_matmul", "schedule_matmul", "schedule_pool",
           "schedule_adaptive_pool", "schedule_global_pool", "schedule_softmax"]


def __getattr__(name):
    if name == "tensor_intrin":
        return importlib.import_module(f"{__name__}.tensor_intrin")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
