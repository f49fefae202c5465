"""``nn.linalg``, as ``torch.linalg``: ``vector_norm``, ``matrix_norm``, ``norm``,
``svdvals``, ``det``, ``inv``, ``solve`` and ``cholesky``.

The norms are composed of nn's differentiable reductions. The factorizations of small dense
matrices (determinant, inverse, solve, Cholesky, singular values) are computed by numpy on
the host, as they are small and not on hot paths; their backward functions are PyTorch's
analytic formulas written in nn's differentiable operators (products, ``inv``, ``solve``),
so they run on the tensor's device and can be differentiated again.
"""
from __future__ import annotations

import collections

import numpy as np

from . import functions as F
from .autograd import Function
from .functions.base import broadcast_shape
from .functions.base import torch_name
from .tensor import Tensor

__all__ = ["vector_norm", "matrix_norm", "norm", "svdvals", "det", "inv", "solve",
           "cholesky", "slogdet", "cross"]

INF = float("inf")


# ----------------------------------------------------------------------------- checks

def _at_least_2d(A, what):
    if A.ndim < 2:
        raise RuntimeError(f"linalg.{what}: The input tensor A must have at least 2 "
                           "dimensions.")


def _square(A, what):
    _at_least_2d(A, what)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.{what}: A must be batches of square matrices, but they "
                           f"are {A.shape[-2]} by {A.shape[-1]} matrices")


def _floating(A, what):
    if A.dtype not in ("float32", "float64"):
        raise RuntimeError(f"linalg.{what}: Expected a floating point or complex tensor as "
                           f"input. Got {torch_name(A.dtype)}")


def _host(t):
    """``t``'s values as a numpy array (a host copy of a GPU tensor)."""
    return t._data if isinstance(t._data, np.ndarray) else t._data.copy_to_host()


# ----------------------------------------------------------------------------- norms

def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The ``ord``-norm of ``x`` over ``dim`` (all dimensions by default), as a vector:
    ``ord`` 2, 1, inf, -inf, 0 or any number."""
    if isinstance(ord, str):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, "
                        f"not {type(ord).__name__}")
    return F.norm(x, ord, dim, keepdim, dtype)


def _pair(dim, ndim):
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(map(str, dim)) if isinstance(dim, (tuple, list)) else dim}")
    d0, d1 = (d % ndim for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, "
                           f"{dim[1]})")
    return d0, d1


def _drop(x, dims, keepdim):
    """``x`` (reduced with kept dimensions) without the ``dims`` unless ``keepdim``."""
    if keepdim:
        return x
    for d in sorted(dims, reverse=True):
        x = x.squeeze(d)
    return x


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The ``ord``-norm of the matrices of ``A`` over the two dimensions ``dim``: "fro",
    "nuc", 1, -1 (largest / smallest column sum), inf, -inf (row sums), 2, -2 (largest /
    smallest singular value)."""
    _at_least_2d(A, "matrix_norm")
    if dtype is not None:
        A = A.to(dtype)
    _floating(A, "matrix_norm")
    d0, d1 = _pair(dim, A.ndim)
    if ord == "fro":
        return F.norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        s = svdvals(A.movedim((d0, d1), (-2, -1)))
        out = s.sum(-1) if ord == "nuc" else s.amax(-1) if ord == 2 else s.amin(-1)
        if keepdim:
            for d in sorted((d0, d1)):
                out = out.unsqueeze(d)
        return out
    if ord not in (1, -1, INF, -INF):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    summed, extreme = (d0, d1) if ord in (1, -1) else (d1, d0)
    sums = A.abs().sum(summed, keepdim=True)
    out = sums.amax(extreme, keepdim=True) if ord > 0 else sums.amin(extreme, keepdim=True)
    return _drop(out, (d0, d1), keepdim)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector norm (``dim`` an int, or ``A`` 1-D) or a matrix norm (``dim`` a pair, or
    ``A`` 2-D with ``ord`` given); with neither ``ord`` nor ``dim``, the 2-norm of all of
    ``A``'s elements."""
    if dim is not None:
        if isinstance(dim, int) or len(dim) == 1:
            return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must "
                           f"be 1D or 2D. Got {A.ndim}D.")
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)


# ----------------------------------------------------------------------------- factorizations

class SvdVals(Function):
    """The singular values (descending); the gradient ``U diag(g) V^H`` (distinct values)."""
    host_only = True

    @staticmethod
    def forward(ctx, A):
        u, s, vh = np.linalg.svd(_host(A), full_matrices=False)
        ctx.save_for_backward(Tensor(np.ascontiguousarray(u)), Tensor(np.ascontiguousarray(vh)))
        return Tensor(np.ascontiguousarray(s))

    @staticmethod
    def backward(ctx, g):
        u, vh = ctx.saved_tensors
        return (u * g.unsqueeze(-2)) @ vh


SvdVals._node_cls.__name__ = "LinalgSvdBackward0"


def svdvals(A):
    """The singular values of the matrices of ``A``, in descending order."""
    _at_least_2d(A, "svd")
    _floating(A, "svd")
    return SvdVals.apply(A)


def _singular_message(what, A):
    """PyTorch's message for a singular matrix: the first zero pivot of LU (1-based)."""
    a = np.array(_host(A), dtype="float64").reshape((-1,) + A.shape[-2:])
    for batch, m in enumerate(a):
        n = m.shape[0]
        for k in range(n):
            pivot = k + int(np.argmax(np.abs(m[k:, k])))
            m[[k, pivot]] = m[[pivot, k]]
            if m[k, k] == 0:
                where = f"(Batch element {batch}): " if A.ndim > 2 else ""
                return (f"linalg.{what}: {where}The diagonal element {k + 1} is zero, the "
                        f"{'inversion' if what == 'inv' else 'solve'} could not be completed "
                        "because the input matrix is singular.")
            m[k + 1:] -= np.outer(m[k + 1:, k] / m[k, k], m[k])
    return f"linalg.{what}: The input matrix is singular."


class Det(Function):
    """The determinants; the gradient ``g det(A) A^{-H}``."""
    host_only = True

    @staticmethod
    def forward(ctx, A):
        out = Tensor(np.asarray(np.linalg.det(_host(A))).astype(A.dtype))
        ctx.save_for_backward(A, out)
        return out

    @staticmethod
    def backward(ctx, g):
        A, out = ctx.saved_tensors
        return (g * out).unsqueeze(-1).unsqueeze(-1) * inv(A).mT


Det._node_cls.__name__ = "LinalgDetBackward0"


def det(A):
    """The determinants of the square matrices of ``A``."""
    _square(A, "det")
    _floating(A, "det")
    return Det.apply(A)


class Inv(Function):
    """The inverses; the gradient ``-A^{-H} g A^{-H}``."""
    host_only = True

    @staticmethod
    def forward(ctx, A):
        try:
            out = Tensor(np.ascontiguousarray(np.linalg.inv(_host(A))).astype(A.dtype))
        except np.linalg.LinAlgError:
            raise RuntimeError(_singular_message("inv", A)) from None
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return -(out.mT @ g @ out.mT)


Inv._node_cls.__name__ = "LinalgInvExBackward0"


def inv(A):
    """The inverses of the square matrices of ``A``."""
    _square(A, "inv")
    _floating(A, "inv")
    return Inv.apply(A)


class Solve(Function):
    """``X`` with ``A X = B`` for matrices ``A`` (..., n, n) and ``B`` (..., n, k) of the same
    batch; the gradients ``gB = A^{-H} g`` (another solve) and ``gA = -gB X^H``."""
    host_only = True

    @staticmethod
    def forward(ctx, A, B):
        try:
            out = np.linalg.solve(_host(A), _host(B))
        except np.linalg.LinAlgError:
            raise RuntimeError(_singular_message("solve", A)) from None
        out = Tensor(np.ascontiguousarray(out).astype(A.dtype))
        ctx.save_for_backward(A, out)
        return out

    @staticmethod
    def backward(ctx, g):
        A, X = ctx.saved_tensors
        gB = Solve.apply(A.mT.contiguous(), g)
        need = ctx.needs_input_grad
        return (-(gB @ X.mT) if need[0] else None), (gB if need[1] else None)


Solve._node_cls.__name__ = "LinalgSolveExBackward0"


def _solve_left(A, B):
    """``A^{-1} B`` with PyTorch's rules: ``B`` a vector (or a batch of vectors) when it has
    one dimension less than ``A`` and ``A``'s leading shape; batch dimensions broadcast."""
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    if vector:
        B = B.unsqueeze(-1)
    if B.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"AX = B ({A.shape[-2]}x{A.shape[-1]} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    batch = broadcast_shape(A.shape[:-2], B.shape[:-2])
    if A.shape[:-2] != batch:
        A = A.expand(batch + A.shape[-2:])
    if B.shape[:-2] != batch:
        B = B.expand(batch + B.shape[-2:])
    X = Solve.apply(A, B)
    return X.squeeze(-1) if vector else X


def solve(A, B, *, left=True):
    """The solution ``X`` of ``A X = B`` (``X A = B`` when not ``left``), ``A`` square."""
    _square(A, "solve")
    _floating(A, "solve")
    if A.dtype != B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {torch_name(A.dtype)} and B of type {torch_name(B.dtype)} "
                           "instead")
    if left:
        return _solve_left(A, B)
    if B.ndim < 2:
        raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not "
                           "supported for left=False. In this case linalg.solve is "
                           "equivalent to B / A.squeeze(-1)")
    return _solve_left(A.mT, B.mT).mT


def _not_positive_definite(A):
    """PyTorch's message: the order of the first leading minor that is not positive-definite."""
    a = np.asarray(_host(A), dtype="float64").reshape((-1,) + A.shape[-2:])
    for batch, m in enumerate(a):
        for k in range(1, m.shape[0] + 1):
            try:
                np.linalg.cholesky(m[:k, :k])
            except np.linalg.LinAlgError:
                where = f"(Batch element {batch}): " if A.ndim > 2 else ""
                return (f"linalg.cholesky: {where}The factorization could not be completed "
                        f"because the input is not positive-definite (the leading minor of "
                        f"order {k} is not positive-definite).")
    return "linalg.cholesky: The input is not positive-definite."


class Cholesky(Function):
    """The lower Cholesky factor ``L`` (``A = L L^H``); the gradient is PyTorch's
    ``L^{-H} Φ(L^H g) L^{-1}``, Φ taking the lower triangle with its diagonal halved
    (symmetrized)."""
    host_only = True

    @staticmethod
    def forward(ctx, A):
        try:
            L = np.linalg.cholesky(_host(A))
        except np.linalg.LinAlgError:
            raise RuntimeError(_not_positive_definite(A)) from None
        out = Tensor(np.ascontiguousarray(L).astype(A.dtype))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (L,) = ctx.saved_tensors
        phi = (L.mT @ g).tril()
        phi = 0.5 * (phi + phi.tril(-1).mT)
        L_inv = inv(L)
        return L_inv.mT @ phi @ L_inv


Cholesky._node_cls.__name__ = "LinalgCholeskyExBackward0"


def cholesky(A, *, upper=False):
    """The Cholesky factor of the symmetric positive-definite matrices of ``A``: lower
    triangular ``L`` with ``A = L L^H``, or ``U = L^H`` when ``upper``."""
    _square(A, "cholesky")
    _floating(A, "cholesky")
    L = Cholesky.apply(A)
    return L.mT if upper else L


# ----------------------------------------------------------------------------- log-determinants

slogdet_result = collections.namedtuple("slogdet", ["sign", "logabsdet"])


class LogAbsDet(Function):
    """``log|det A|``; the gradient ``g A^{-H}``."""
    host_only = True

    @staticmethod
    def forward(ctx, A):
        _, logabs = np.linalg.slogdet(_host(A))
        ctx.save_for_backward(A)
        return Tensor(np.asarray(logabs).astype(A.dtype))

    @staticmethod
    def backward(ctx, g):
        (A,) = ctx.saved_tensors
        return g.unsqueeze(-1).unsqueeze(-1) * inv(A).mT


LogAbsDet._node_cls.__name__ = "LinalgSlogdetBackward0"


def slogdet(A):
    """(sign, logabsdet) of the determinants of the square matrices of ``A``: ``det(A) =
    sign * exp(logabsdet)``, without the overflow of ``det``."""
    _square(A, "slogdet")
    _floating(A, "slogdet")
    sign, _ = np.linalg.slogdet(_host(A))
    sign = Tensor(np.asarray(sign).astype(A.dtype)).to(A.device)
    return slogdet_result(sign, LogAbsDet.apply(A))


def logdet(A):
    """``log(det(A))``: NaN for a negative determinant, -inf for a zero one."""
    sign, logabsdet = slogdet(A)
    return F.where(sign < 0, float("nan"), logabsdet)    # no gradient where it is NaN


def inverse(A):
    """``torch.inverse``: ``inv``."""
    return inv(A)


def cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along ``dim``; ``input`` and ``other`` broadcast."""
    from .functions.linalg import _cross
    return _cross("linalg.cross", input, other, dim)


def cholesky_deprecated(A, upper=False):
    """``torch.cholesky(A, upper=False)`` (``linalg.cholesky``, ``upper`` positional)."""
    return cholesky(A, upper=upper)
