"""te declarations of the optimizers' fused updates, and their CPU schedule.

Each declaration takes the flattened parameter, its gradient, the optimizer's state buffers
for it and a small vector ``h`` of hyper-parameters, and returns the new parameter and the new
state buffers as the outputs of ONE compute: one loop reads every input once and writes every
output once. The hyper-parameters that a scheduler or the step count changes (the learning
rate, Adam's bias corrections, ...) come in ``h`` at run time, so a kernel is compiled once
per shape and dtype; only the choices that change the arithmetic (maximize, weight decay on or
off, nesterov, amsgrad, centered, momentum) are compile-time keywords.

    declaration      inputs (then h)                      outputs
    ---------------  -----------------------------------  ------------------------------------
    sgd_update       p, g [, momentum_buffer]             p [, momentum_buffer]
    adam_update      p, g, exp_avg, exp_avg_sq            p, exp_avg, exp_avg_sq
                     [, max_exp_avg_sq]                   [, max_exp_avg_sq]
    adagrad_update   p, g, sum                            p, sum
    rmsprop_update   p, g, square_avg [, momentum_buffer] p, square_avg [, momentum_buffer]
                     [, grad_avg]                         [, grad_avg]
    adamax_update    p, g, exp_avg, exp_inf               p, exp_avg, exp_inf
    adadelta_update  p, g, square_avg, acc_delta          p, square_avg, acc_delta
    nadam_update     p, g, exp_avg, exp_avg_sq            p, exp_avg, exp_avg_sq
    radam_update     p, g, exp_avg, exp_avg_sq            p, exp_avg, exp_avg_sq
    rprop_update     p, g, prev, step_size                p, prev, step_size
    asgd_update      p, g, ax                             p, ax

``h`` holds, in order: sgd (-lr, weight_decay, momentum applied to the buffer, 1 - dampening,
momentum); adam (-lr / bias_correction1, 1 - beta1, beta2, 1 - beta2, sqrt(bias_correction2),
eps, weight_decay, 1 - lr * weight_decay); adagrad (-clr, weight_decay, eps); rmsprop (-lr,
alpha, 1 - alpha, eps, weight_decay, momentum); adamax (-lr / bias_correction1, 1 - beta1,
beta2, eps, weight_decay); adadelta (-lr, rho, 1 - rho, eps, weight_decay); nadam (-lr * (1 -
mu) / (1 - mu_product), 1 - beta1, beta2, 1 - beta2, bias_correction2, eps, weight_decay,
1 - lr * weight_decay, -lr * mu_next / (1 - mu_product_next)); radam (-lr, 1 - beta1, beta2,
1 - beta2, bias_correction1, sqrt(bias_correction2), eps, weight_decay, 1 - lr *
weight_decay, rect); rprop (etaminus, etaplus, step_size_min, step_size_max); asgd (1 - lambd *
eta, -eta, weight_decay, mu). The arithmetic follows PyTorch's single-tensor
implementations operation by operation (``addcdiv`` as ``p + value * (a / b)``, ``lerp`` as
``a + w * (b - a)``).
"""
from __future__ import annotations

import te
from te import dtypes

from . import cpu
from .cpu_util import num_elements, schedule_rows

__all__ = ["sgd_update", "adam_update", "adagrad_update", "rmsprop_update", "adamax_update",
           "adadelta_update", "nadam_update", "radam_update", "rprop_update", "asgd_update",
           "schedule_update"]


def _gradient(p, g, i, h, weight_decay_at, maximize, weight_decay):
    """The gradient as the update sees it: negated to maximize, plus L2 weight decay."""
    grad = -g[i] if maximize else g[i]
    if weight_decay:
        grad = grad + h[weight_decay_at] * p[i]
    return grad


def _decayed(p, i, h, at, weight_decay):
    """The parameter a decoupled weight decay scales first (``p * (1 - lr * wd)``, h[at])."""
    return p[i] * h[at] if weight_decay == "decoupled" else p[i]


def _first_moment(exp_avg, i, grad, h):
    """Adam's first moment ``lerp(m, g, 1 - beta1)`` (1 - beta1 in h[1])."""
    return exp_avg[i] + h[1] * (grad - exp_avg[i])


def _moments(exp_avg, exp_avg_sq, i, grad, h):
    """Adam's moments ``m = lerp(m, g, 1 - beta1)`` and ``v = beta2 * v + (1 - beta2) * g *
    g`` (h[1], h[2], h[3], as Adam, NAdam and RAdam lay out ``h``)."""
    return _first_moment(exp_avg, i, grad, h), exp_avg_sq[i] * h[2] + h[3] * grad * grad


def sgd_update(p, g, *rest, weight_decay=False, momentum=False, nesterov=False,
               maximize=False):
    """SGD: ``buf = momentum * buf + (1 - dampening) * g``; ``p += -lr * (g + momentum * buf
    if nesterov else buf)``. The first step passes a zero buffer, momentum 0 and 1 - dampening
    1, so the buffer becomes the gradient itself, as PyTorch's ``clone``."""
    h = rest[-1]

    def body(i):
        grad = _gradient(p, g, i, h, 1, maximize, weight_decay)
        if not momentum:
            return (p[i] + h[0] * grad,)
        buf = rest[0][i] * h[2] + grad * h[3]
        step = grad + h[4] * buf if nesterov else buf
        return p[i] + h[0] * step, buf
    return _outputs(p, body, "sgd_update")


def adam_update(p, g, exp_avg, exp_avg_sq, *rest, weight_decay="none", amsgrad=False,
                maximize=False):
    """Adam and AdamW: ``weight_decay`` is "none", "l2" (Adam: added to the gradient) or
    "decoupled" (AdamW: the parameter is first scaled by 1 - lr * weight_decay)."""
    h = rest[-1]

    def body(i):
        grad = _gradient(p, g, i, h, 6, maximize, weight_decay == "l2")
        param = _decayed(p, i, h, 7, weight_decay)
        m, v = _moments(exp_avg, exp_avg_sq, i, grad, h)
        outs = [m, v]
        if amsgrad:
            v = te.max(rest[0][i], v)
            outs.append(v)
        denom = te.sqrt(v) / h[4] + h[5]
        return (param + h[0] * (m / denom), *outs)
    return _outputs(p, body, "adam_update")


def adagrad_update(p, g, state_sum, h, *, weight_decay=False, maximize=False):
    """Adagrad: ``sum += g * g``; ``p += -clr * g / (sqrt(sum) + eps)``."""
    def body(i):
        grad = _gradient(p, g, i, h, 1, maximize, weight_decay)
        total = state_sum[i] + grad * grad
        return p[i] + h[0] * (grad / (te.sqrt(total) + h[2])), total
    return _outputs(p, body, "adagrad_update")


def rmsprop_update(p, g, square_avg, *rest, weight_decay=False, momentum=False,
                   centered=False, maximize=False):
    """RMSprop: ``square_avg = alpha * square_avg + (1 - alpha) * g * g``; centered, the
    running mean of g is subtracted under the root; with momentum the step goes through a
    buffer."""
    h = rest[-1]

    def body(i):
        grad = _gradient(p, g, i, h, 4, maximize, weight_decay)
        sq = square_avg[i] * h[1] + h[2] * grad * grad
        outs = [sq]
        if centered:
            mean = rest[-2][i] + h[2] * (grad - rest[-2][i])
            avg = te.sqrt(sq - mean * mean) + h[3]
        else:
            avg = te.sqrt(sq) + h[3]
        if momentum:
            buf = rest[0][i] * h[5] + grad / avg
            outs.append(buf)
            new = p[i] + h[0] * buf
        else:
            new = p[i] + h[0] * (grad / avg)
        if centered:
            outs.append(mean)
        return (new, *outs)
    return _outputs(p, body, "rmsprop_update")


def adamax_update(p, g, exp_avg, exp_inf, h, *, weight_decay=False, maximize=False):
    """Adamax: ``m = lerp(m, g, 1 - beta1)``, ``u = max(beta2 * u, |g| + eps)``;
    ``p += -clr * m / u``."""
    def body(i):
        grad = _gradient(p, g, i, h, 4, maximize, weight_decay)
        m = _first_moment(exp_avg, i, grad, h)
        u = te.max(exp_inf[i] * h[2], te.abs(grad) + h[3])
        return p[i] + h[0] * (m / u), m, u
    return _outputs(p, body, "adamax_update")


def adadelta_update(p, g, square_avg, acc_delta, h, *, weight_decay=False, maximize=False):
    """Adadelta: ``sq = rho * sq + (1 - rho) * g * g``, ``delta = sqrt(acc + eps) /
    sqrt(sq + eps) * g``, ``acc = rho * acc + (1 - rho) * delta * delta``; ``p += -lr *
    delta``."""
    def body(i):
        grad = _gradient(p, g, i, h, 4, maximize, weight_decay)
        sq = square_avg[i] * h[1] + h[2] * grad * grad
        delta = te.sqrt(acc_delta[i] + h[3]) / te.sqrt(sq + h[3]) * grad
        acc = acc_delta[i] * h[1] + h[2] * delta * delta
        return p[i] + h[0] * delta, sq, acc
    return _outputs(p, body, "adadelta_update")


def nadam_update(p, g, exp_avg, exp_avg_sq, h, *, weight_decay="none", maximize=False):
    """NAdam: Adam's moments, then ``p += c_g * g / denom + c_m * m / denom`` with
    ``denom = sqrt(v / bias_correction2) + eps`` and the momentum-schedule coefficients
    ``c_g``, ``c_m`` (h[0], h[8]) from the host."""
    def body(i):
        grad = _gradient(p, g, i, h, 6, maximize, weight_decay == "l2")
        param = _decayed(p, i, h, 7, weight_decay)
        m, v = _moments(exp_avg, exp_avg_sq, i, grad, h)
        denom = te.sqrt(v / h[4]) + h[5]
        return param + h[0] * (grad / denom) + h[8] * (m / denom), m, v
    return _outputs(p, body, "nadam_update")


def radam_update(p, g, exp_avg, exp_avg_sq, h, *, weight_decay="none", rectify=False,
                 maximize=False):
    """RAdam: Adam's moments; ``p += m / bias_correction1 * -lr * (sqrt(bias_correction2) /
    (sqrt(v) + eps) * rect`` when ``rectify``, the variance being tractable)."""
    def body(i):
        grad = _gradient(p, g, i, h, 7, maximize, weight_decay == "l2")
        param = _decayed(p, i, h, 8, weight_decay)
        m, v = _moments(exp_avg, exp_avg_sq, i, grad, h)
        step = m / h[4] * h[0]
        if rectify:
            step = step * (h[5] / (te.sqrt(v) + h[6])) * h[9]
        return param + step, m, v
    return _outputs(p, body, "radam_update")


def rprop_update(p, g, prev, step_size, h, *, maximize=False):
    """Rprop: the step size times etaplus where the gradient kept its sign, times etaminus
    where it flipped (and that gradient then counts as 0), clamped to [step_size_min,
    step_size_max]; ``p -= sign(g) * step_size``; ``prev`` becomes the (zeroed) gradient."""
    def body(i):
        grad = -g[i] if maximize else g[i]
        prod = grad * prev[i]
        one, zero = te.const(1.0, p.dtype), te.const(0.0, p.dtype)
        factor = te.select(prod > zero, h[1], te.select(prod < zero, h[0], one))
        step = te.min(te.max(step_size[i] * factor, h[2]), h[3])
        kept = te.select(prod < zero, zero, grad)
        sign = te.select(kept > zero, one, te.select(kept < zero, -one, zero))
        return p[i] - sign * step, kept, step
    return _outputs(p, body, "rprop_update")


def asgd_update(p, g, ax, h, *, weight_decay=False, maximize=False, average=True):
    """ASGD: ``p = p * (1 - lambd * eta) - eta * g``; the average ``ax += mu * (p - ax)``
    (``average``), or ``ax = p`` while mu is 1, as PyTorch's."""
    def body(i):
        grad = _gradient(p, g, i, h, 2, maximize, weight_decay)
        param = p[i] * h[0] + h[1] * grad
        return param, (ax[i] + (param - ax[i]) * h[3]) if average else param
    return _outputs(p, body, "asgd_update")


def _outputs(p, body, name):
    """All outputs of ``body`` from one compute (a tuple, also for a single output)."""
    result = te.compute(p.shape, body, name=name, tag="elemwise")
    return tuple(result) if isinstance(result, list) else (result,)


def schedule_update(outs):
    """One loop over the (1-d) outputs: 16-lane vectors, parallel when large, streaming
    stores when the outputs are much larger than the caches (as ``cpu.schedule_injective``)."""
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    s = te.create_schedule(outs[0].op)
    outer, _ = schedule_rows(s, outs[0], list(s[outs[0]].op.axis))
    total = num_elements(outs[0].shape)
    if outer is not None and total * dtypes.bits(outs[0].dtype) // 8 >= cpu.STREAM_BYTES:
        s[outs[0]].pragma(outer, "nontemporal")
    return s
