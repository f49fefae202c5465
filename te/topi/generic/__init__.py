"""Default schedules for any target (TVM's ``topi.generic``): the loop nest the declaration
describes, with elementwise producers inlined where TVM inlines them. They run on the CPU as
they are; ``topi.x86`` and ``topi.cuda`` have the target-specific ones."""
from __future__ import annotations

from ..utils import as_tensors, create_schedule, inline_injective

__all__ = ["schedule_injective", "schedule_injective_from_existing", "schedule_elemwise",
           "schedule_broadcast", "schedule_reduce", "schedule_conv2d_nchw",
           "schedule_depthwise_conv2d_nchw", "schedule_dense", "schedule_batch_matmul",
           "schedule_matmul", "schedule_pool", "schedule_adaptive_pool",
           "schedule_global_pool", "schedule_softmax", "schedule_concatenate",
           "schedule_extern", "default_schedule"]


def schedule_injective_from_existing(s, out):
    """Fuse the axes of the injective stage ``out`` into one loop."""
    axes = list(s[out].op.axis)
    if len(axes) > 1:
        s[out].fuse(*axes)
    return s


def schedule_injective(outs):
    """Injective (elementwise, broadcast, layout) outputs: producers inlined, each output
    one fused loop."""
    outs = as_tensors(outs)
    s = create_schedule(outs)
    inline_injective(s, outs)
    for t in outs:
        schedule_injective_from_existing(s, t)
    return s


schedule_elemwise = schedule_injective
schedule_broadcast = schedule_injective
schedule_concatenate = schedule_injective


def schedule_reduce(outs):
    """Reductions: elementwise producers inlined, the first output's axes fused."""
    outs = as_tensors(outs)
    s = create_schedule(outs)
    inline_injective(s, outs)
    schedule_injective_from_existing(s, outs[0])
    return s


def default_schedule(outs, auto_inline=False):
    """The declaration's own loop nest (injective producers inlined when ``auto_inline``)."""
    outs = as_tensors(outs)
    s = create_schedule(outs)
    if auto_inline:
        inline_injective(s, outs)
    return s


def _default(name):
    def schedule(outs, layout=None):
        return default_schedule(outs, auto_inline=False)
    schedule.__name__ = name
    schedule.__doc__ = "The declaration's own loop nest (TVM's generic default)."
    return schedule


schedule_conv2d_nchw = _default("schedule_conv2d_nchw")
schedule_depthwise_conv2d_nchw = _default("schedule_depthwise_conv2d_nchw")
schedule_dense = _default("schedule_dense")
schedule_batch_matmul = _default("schedule_batch_matmul")
schedule_matmul = _default("schedule_matmul")
schedule_pool = _default("schedule_pool")
schedule_adaptive_pool = _default("schedule_adaptive_pool")
schedule_global_pool = schedule_adaptive_pool
schedule_softmax = _default("schedule_softmax")
schedule_extern = _default("schedule_extern")
