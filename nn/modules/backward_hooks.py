"""The full backward hooks of a Module: ``_BackwardHookState`` wraps a call's tensor inputs
and outputs in identity autograd Functions (``BackwardHookFunction``) whose backward reports
the gradients to the module's backward pre-hooks and hooks, as PyTorch's
``torch.utils.hooks.BackwardHook`` does.
"""
from __future__ import annotations

from .. import autograd
from ..tensor import Tensor


# ----------------------------------------------------------------------------- backward hooks

class _BackwardHookState:
    """One call of a module with full backward hooks: the identity Functions around its
    inputs and outputs report the gradients that pass through them.

    The gradients of the outputs reach the outputs' ``BackwardHookFunction`` first: the
    pre-hooks run on them (and may replace them) and they are kept as ``grad_output``. Those
    of the inputs reach the inputs' one last, where the hooks see ``grad_input``. When no input
    requires grad, the hooks run at the outputs with ``grad_input`` all None, as PyTorch's.
    """

    def __init__(self, module, n_args):
        self.module = module
        self.n_args = n_args
        self.input_slots = ()           # positions of the arguments wrapped
        self.output_slots, self.n_outputs = (), 0
        self.grad_output = None

    def wrap_inputs(self, args):
        self.input_slots = tuple(k for k, a in enumerate(args)
                                 if isinstance(a, Tensor) and a.requires_grad)
        if not self.input_slots:
            return args
        wrapped = BackwardHookFunction.apply(self.input_grads, *(args[k] for k in self.input_slots))
        args = list(args)
        for k, t in zip(self.input_slots, wrapped):
            args[k] = t
        return tuple(args)

    def wrap_outputs(self, output):
        single = isinstance(output, Tensor)
        outs = (output,) if single else output
        if not isinstance(outs, (tuple, list)):
            return output
        slots = tuple(k for k, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad)
        if not slots:
            return output
        self.output_slots, self.n_outputs = slots, len(outs)
        wrapped = BackwardHookFunction.apply(self.output_grads, *(outs[k] for k in slots))
        outs = list(outs)
        for k, t in zip(slots, wrapped):
            outs[k] = t
        return outs[0] if single else type(output)(outs)

    def _spread(self, grads, slots, n):
        full = [None] * n
        for k, g in zip(slots, grads):
            full[k] = g
        return tuple(full)

    def _gather(self, full, slots, n, what):
        full = tuple(full) if isinstance(full, (tuple, list)) else (full,)
        if len(full) != n:
            raise RuntimeError(f"Backward hook returned an invalid number of {what}, got "
                               f"{len(full)}, but expected {n}")
        return tuple(full[k] for k in slots)

    def output_grads(self, grads):
        """The outputs' gradients: run the pre-hooks, keep them as grad_output."""
        grad_output = self._spread(grads, self.output_slots, self.n_outputs)
        for hook in list(self.module._backward_pre_hooks.values()):
            result = hook(self.module, grad_output)
            if result is not None:
                grad_output = self._spread(self._gather(result, self.output_slots,
                                                        self.n_outputs, "grad_output"),
                                           self.output_slots, self.n_outputs)
        self.grad_output = grad_output
        if not self.input_slots:
            for hook in list(self.module._backward_hooks.values()):
                result = hook(self.module, (None,) * self.n_args, grad_output)
                if result is not None and any(r is not None for r in result):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
        return self._gather(grad_output, self.output_slots, self.n_outputs, "grad_output")

    def input_grads(self, grads):
        """The inputs' gradients: run the hooks, which may replace them."""
        grad_input = self._run_hooks(self._spread(grads, self.input_slots, self.n_args))
        return self._gather(grad_input, self.input_slots, self.n_args, "grad_input")

    def _run_hooks(self, grad_input):
        for hook in list(self.module._backward_hooks.values()):
            result = hook(self.module, grad_input, self.grad_output)
            if result is not None:
                grad_input = self._spread(self._gather(result, self.input_slots, self.n_args,
                                                       "grad_input"),
                                          self.input_slots, self.n_args)
        return grad_input


class BackwardHookFunction(autograd.Function):
    """Identity on a module's inputs or outputs; its backward hands their gradients to
    ``report`` (which may replace them). Named as PyTorch's."""

    @staticmethod
    def forward(ctx, report, *tensors):
        ctx.report = report
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + tuple(ctx.report(grads))
