"""``SGD``: stochastic gradient descent with momentum, dampening, weight decay, Nesterov
momentum and maximize, as ``torch.optim.SGD``; one fused kernel per parameter
(``nn.ops.optim.sgd_update``)."""
from __future__ import annotations

from nn.ops.optim import sgd_update

from ..tensor import zeros_like
from .optimizer import Optimizer, check_nonnegative, check_numbers, no_differentiable

__all__ = ["SGD"]


class SGD(Optimizer):
    """``SGD(params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
    maximize=False, foreach=None, differentiable=False, fused=None)``.

    The momentum buffer starts as the first gradient (PyTorch's ``clone``), then
    ``buf = momentum * buf + (1 - dampening) * g``. ``foreach`` and ``fused`` are kept in the
    groups for compatibility: every update here is one fused kernel.
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        check_nonnegative(lr=lr, momentum=momentum, weight_decay=weight_decay)
        check_numbers(dampening=dampening)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        no_differentiable(differentiable)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def _update(self, p, grad, group):
        momentum = float(group["momentum"])
        names, state = [], {}
        buffer_momentum, grad_scale = momentum, 1.0 - float(group["dampening"])
        if momentum != 0:           # as PyTorch's, SGD without momentum keeps no state
            names, state = ["momentum_buffer"], self.state[p]
            if state.get("momentum_buffer") is None:
                # the first buffer is the gradient itself: 0 * zeros + 1 * g
                state["momentum_buffer"] = zeros_like(p)
                buffer_momentum, grad_scale = 0.0, 1.0
        hyper = (-float(group["lr"]), float(group["weight_decay"]), buffer_momentum,
                 grad_scale, momentum)
        self._run_update(sgd_update, p, grad, state, names, hyper,
                     weight_decay=group["weight_decay"] != 0, momentum=momentum != 0,
                     nesterov=bool(group["nesterov"]), maximize=bool(group["maximize"]))

