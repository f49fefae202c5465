"""``einsum`` for one or two operands, and ``baddbmm`` / ``addbmm``, as torch has them,
composed from differentiable operators.

An einsum of two operands is one batched matrix product: indices in one operand only (and
not in the output) are summed first; those left are batch indices (in both and in the
output), contracted ones (in both, not in the output) and each operand's free ones. Each
operand is permuted and reshaped to (batch, free, contracted) / (batch, contracted, free),
multiplied by ``bmm``, and the result reshaped and permuted to the output's order. A subscript
repeated within one operand (``"ii->i"``, ``"bii->bi"``) first takes that operand's diagonal.
"""
from __future__ import annotations

import string

from . import linalg
from .shape import diagonal

__all__ = ["einsum", "baddbmm", "addbmm"]

_LETTERS = set(string.ascii_letters)


def _parse(equation, operands):
    """(input subscripts per operand, output subscripts), ``...`` expanded to fresh letters."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(operands):
        raise RuntimeError(f"einsum(): {len(inputs)} operands in the equation but "
                           f"{len(operands)} given")
    used = set(equation) & _LETTERS
    fresh = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in used]
    n_ell = max([op.ndim - len(s.replace("...", "")) for s, op in zip(inputs, operands)
                 if "..." in s] or [0])
    ell = "".join(fresh[:n_ell])
    subs = []
    for s, op in zip(inputs, operands):
        if "..." in s:
            k = op.ndim - len(s.replace("...", ""))
            s = s.replace("...", ell[n_ell - k:])
        if len(s) != op.ndim or not set(s) <= _LETTERS:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(s)}) "
                               f"does not match the number of dimensions ({op.ndim}) for "
                               "an operand")
        subs.append(s)
    if arrow:
        out = rhs.replace("...", ell)
    else:       # implicit output: ellipsis, then the letters that appear once, sorted
        counts = {}
        for s in inputs:
            for c in s.replace("...", ""):
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    return subs, out


def _diagonals(x, sub, k):
    """``x`` with each subscript repeated in ``sub`` reduced to its diagonal (one axis, last),
    and the subscripts left."""
    for c in dict.fromkeys(sub):
        while sub.count(c) > 1:
            i = sub.index(c)
            j = sub.index(c, i + 1)
            if x.shape[i] != x.shape[j]:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {k} but "
                                   f"the sizes don't match, {x.shape[i]} != {x.shape[j]}")
            x = diagonal(x, 0, i, j)
            sub = sub[:i] + sub[i + 1:j] + sub[j + 1:] + c
    return x, sub


def _sum_out(x, sub, keep):
    """``x`` with the subscripts of ``sub`` not in ``keep`` summed away."""
    dims = tuple(i for i, c in enumerate(sub) if c not in keep)
    if dims:
        x = x.sum(dims)
        sub = "".join(c for c in sub if c in keep)
    return x, sub


def _permute(x, sub, order):
    perm = tuple(sub.index(c) for c in order)
    return x if perm == tuple(range(len(perm))) else x.permute(*perm)


def einsum(equation, *operands):
    """Einstein summation over one or two operands: ``einsum("bij,bjk->bik", a, b)``; the
    operands may also come as one list."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    subs, out = _parse(equation, operands)
    if len(operands) in (1, 2):
        pairs = [_diagonals(x, s, k) for k, (x, s) in enumerate(zip(operands, subs))]
        operands, subs = tuple(x for x, _ in pairs), [s for _, s in pairs]
    if len(operands) == 1:
        x, sub = _sum_out(operands[0], subs[0], out)
        return _permute(x, sub, out)
    if len(operands) != 2:
        raise NotImplementedError("einsum(): only one or two operands are supported")
    (a, b), (sa, sb) = operands, subs
    a, sa = _sum_out(a, sa, set(out) | set(sb))
    b, sb = _sum_out(b, sb, set(out) | set(sa))
    size = {}
    for x, s in ((a, sa), (b, sb)):
        for c, n in zip(s, x.shape):
            if c in size and size[c] != n:
                if size[c] == 1:
                    size[c] = n
                elif n != 1:
                    raise RuntimeError(f"einsum(): operands do not broadcast with remapped "
                                       f"shapes for subscript {c!r}: {size[c]} and {n}")
            else:
                size.setdefault(c, n)
    batch = [c for c in out if c in sa and c in sb]
    contract = [c for c in sa if c in sb and c not in out]
    free_a = [c for c in sa if c not in sb]
    free_b = [c for c in sb if c not in sa]
    a = _expand(_permute(a, sa, batch + free_a + contract), batch + free_a + contract, size)
    b = _expand(_permute(b, sb, batch + contract + free_b), batch + contract + free_b, size)
    B, M, K, N = (_prod(size[c] for c in cs) for cs in (batch, free_a, contract, free_b))
    y = linalg.bmm(a.reshape(B, M, K), b.reshape(B, K, N))
    order = batch + free_a + free_b
    y = y.reshape(*[size[c] for c in order])
    return _permute(y, "".join(order), out)


def _expand(x, sub, size):
    shape = tuple(size[c] for c in sub)
    return x if tuple(x.shape) == shape else x.expand(*shape)


def _prod(values):
    n = 1
    for v in values:
        n *= v
    return n


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * (batch1 @ batch2)`` over (b, n, m) @ (b, m, p)."""
    prod = linalg.bmm(batch1, batch2)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod
    return prod + (input if beta == 1 else input * beta)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``: (n, p) from (b, n, m) and
    (b, m, p)."""
    prod = linalg.bmm(batch1, batch2).sum(0)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod
    return prod + (input if beta == 1 else input * beta)
