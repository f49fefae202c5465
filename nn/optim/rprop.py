"""``Rprop``, as ``torch.optim.Rprop``: resilient backpropagation, a per-element step size
grown by etaplus while the gradient keeps its sign and shrunk by etaminus when it flips, the
parameter moved by the step size against the gradient's sign; one fused kernel per parameter
(``nn.ops.optim.rprop_update``)."""
from __future__ import annotations

from nn.ops.optim import rprop_update

from .optimizer import Optimizer, check_nonnegative, no_differentiable

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """``Rprop(params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False,
    foreach=None, maximize=False, differentiable=False)``.

    State per parameter: ``step``, ``prev`` (the last gradient, zero where its sign flipped)
    and ``step_size`` (starting at ``lr``). ``foreach`` and ``capturable`` are kept in the
    groups for compatibility: every update here is one fused kernel.
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        check_nonnegative(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        no_differentiable(differentiable)
        defaults = dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes),
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def _update(self, p, grad, group):
        names = ["prev", "step_size"]
        fresh = not self.state[p]
        state, _ = self._step_state(p, names)
        if fresh:
            state["step_size"].fill_(float(group["lr"]))
        etaminus, etaplus = (float(e) for e in group["etas"])
        low, high = (float(s) for s in group["step_sizes"])
        self._run_update(rprop_update, p, grad, state, names, (etaminus, etaplus, low, high),
                         maximize=bool(group["maximize"]))
