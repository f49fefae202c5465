"""Default schedules for NVIDIA GPUs (TVM's ``topi.cuda``): every stage that is not inlined
is its own kernel with its loops bound to blocks and threads; a reduction to few outputs
shares each output among the threads of a block (rfactor and a cross-thread combine)."""
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
