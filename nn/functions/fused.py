"""What the fused operators (norms, losses, dropout, embedding) share: running a compiled
kernel with several outputs, and ``FusedOp``, an operator whose backward is one fused kernel
and whose double backward comes from a composite form.

A fused backward kernel has no graph of its own. When a backward runs with
``create_graph=True`` (the engine then records operations), ``FusedOp`` instead differentiates
the operator's ``composite`` form (the same function written in nn's differentiable operators)
with ``autograd.grad(create_graph=True)``, so the gradient can be differentiated again.
"""
from __future__ import annotations


from .. import autograd
from .. import device as devices
from ..device import is_gpu
from .base import Op, Tensor, _cpu_kernel, _gpu_kernel


def run_kernel(declare, *arrays, schedule=None, **params):
    """The arrays that the compiled ``declare`` returns for ``arrays`` (always a tuple);
    counted in ``kernel_calls`` as ``base._kernel`` counts. When one of ``arrays`` is on the
    GPU, the others (indices, noise drawn on the host) join it there and the GPU build runs."""
    if any(map(is_gpu, arrays)):
        out = _gpu_kernel(declare, [devices.move(a, devices.CUDA) for a in arrays], params)
    else:
        out = _cpu_kernel(declare, arrays, dict(params, schedule=schedule))
    return out if isinstance(out, tuple) else (out,)


class FusedOp(Op):
    """An operator with a fused backward kernel and a composite form.

    Subclasses define ``forward(ctx, *args)`` (calling ``remember(ctx, args)`` with all their
    arguments), ``fused_backward(ctx, args, *grads)`` and ``composite(*args)``; they may
    override ``needs_composite(ctx)`` for gradients that the fused kernel does not compute.
    """

    @staticmethod
    def remember(ctx, args):
        """Keep the forward's arguments: tensors as saved tensors (freed with the graph)."""
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        ctx.arg_is_tensor = [isinstance(a, Tensor) for a in args]
        ctx.constants = [None if isinstance(a, Tensor) else a for a in args]

    @staticmethod
    def needs_composite(ctx):
        return False

    @classmethod
    def backward(cls, ctx, *grads):
        args = _saved_args(ctx)
        if autograd.is_grad_enabled() or cls.needs_composite(ctx):
            return _recorded_grads(ctx, cls.composite, args, grads)
        return cls.fused_backward(ctx, args, *grads)


def _saved_args(ctx):
    tensors = iter(ctx.saved_tensors)
    return [next(tensors) if is_tensor else c
            for c, is_tensor in zip(ctx.constants, ctx.arg_is_tensor)]


def _recorded_grads(ctx, composite, args, grads):
    """The input gradients as the gradient of ``composite(*args)``, recorded."""
    wrt = [a for a, need in zip(args, ctx.needs_input_grad) if need]
    with autograd.enable_grad():
        out = composite(*args)
        found = iter(autograd.grad(out, wrt, grads[0] if len(grads) == 1 else grads,
                                   create_graph=True, allow_unused=True))
    return tuple(next(found) if need else None for need in ctx.needs_input_grad)
