"""Matrix products (TVM's ``topi.nn.dense``, ``batch_matmul``, ``matmul``)."""
from __future__ import annotations

from ...reduce import sum as _sum
from ...tensor import Tensor, TEError, compute, reduce_axis
from .. import tag as _tag
from ..utils import const_size


def _check(opname, arg, t, ndim):
    if not isinstance(t, Tensor):
        raise TEError(f"topi.nn.{opname}: {arg} must be a te tensor, got "
                      f"{type(t).__name__} {t!r}")
    if len(t.shape) != ndim:
        raise ValueError(f"topi.nn.{opname}: {arg} {t.name} must be {ndim}-D, got shape "
                         f"{tuple(t.shape)}")


def _same(a, b):
    a, b = const_size(a), const_size(b)
    return a is b or not isinstance(a, int) or not isinstance(b, int) or a == b


def _bias(opname, out, bias, out_dtype):
    if bias is None:
        return out
    _check(opname, "bias", bias, 1)
    n = out.shape[-1]
    if not _same(bias.shape[0], n):
        raise ValueError(f"topi.nn.{opname}: bias {bias.name} has {bias.shape[0]} entries but "
                         f"the output has {n} columns")
    return compute(out.shape, lambda *i: out[i] + bias[i[-1]].astype(out_dtype),
                   name="T_add", tag=_tag.BROADCAST)


def matmul(tensor_a, tensor_b, bias=None, out_dtype=None, transpose_a=False,
           transpose_b=False):
    """``a @ b`` (either read transposed) plus ``bias`` along the columns."""
    _check("matmul", "tensor_a", tensor_a, 2)
    _check("matmul", "tensor_b", tensor_b, 2)
    out_dtype = out_dtype or tensor_a.dtype
    m, ka = (tensor_a.shape[1], tensor_a.shape[0]) if transpose_a else tensor_a.shape
    kb, n = (tensor_b.shape[1], tensor_b.shape[0]) if transpose_b else tensor_b.shape
    if not _same(ka, kb):
        raise ValueError(f"topi.nn.matmul: the reduced sizes of tensor_a ({ka}) and tensor_b "
                         f"({kb}) differ")
    k = reduce_axis((0, ka), name="k")

    def body(i, j):
        a = tensor_a[k, i] if transpose_a else tensor_a[i, k]
        b = tensor_b[j, k] if transpose_b else tensor_b[k, j]
        return _sum(a.astype(out_dtype) * b.astype(out_dtype), axis=k)
    out = compute((m, n), body, name="T_matmul", tag="matmul",
                  attrs={"transpose_a": transpose_a, "transpose_b": transpose_b})
    return _bias("matmul", out, bias, out_dtype)


def dense(data, weight, bias=None, out_dtype=None):
    """``data @ weight.T (+ bias)``: data is (batch, in_dim), weight is (out_dim, in_dim)."""
    _check("dense", "data", data, 2)
    _check("dense", "weight", weight, 2)
    out_dtype = out_dtype or data.dtype
    batch, in_dim = data.shape
    out_dim, w_in = weight.shape
    if not _same(in_dim, w_in):
        raise ValueError(f"topi.nn.dense: data {data.name} has {in_dim} features (dimension "
                         f"1) but weight {weight.name} has {w_in}")
    k = reduce_axis((0, in_dim), name="k")
    out = compute((batch, out_dim),
                  lambda i, j: _sum(data[i, k].astype(out_dtype)
                                    * weight[j, k].astype(out_dtype), axis=k),
                  name="T_dense", tag="dense")
    return _bias("dense", out, bias, out_dtype)


def batch_matmul(tensor_a, tensor_b, oshape=None, out_dtype=None, transpose_a=False,
                 transpose_b=True):
    """``a[b] @ b[b]`` for each batch ``b`` (a batch of 1 broadcasts). As TVM's, ``tensor_b``
    is read transposed by default: (batch, N, K)."""
    _check("batch_matmul", "tensor_a", tensor_a, 3)
    _check("batch_matmul", "tensor_b", tensor_b, 3)
    out_dtype = out_dtype or tensor_a.dtype
    ba, m, ka = (tensor_a.shape[0], tensor_a.shape[2], tensor_a.shape[1]) if transpose_a \
        else tensor_a.shape
    bb, n, kb = tensor_b.shape if transpose_b else \
        (tensor_b.shape[0], tensor_b.shape[2], tensor_b.shape[1])
    if not _same(ka, kb):
        raise ValueError(f"topi.nn.batch_matmul: the reduced sizes of tensor_a ({ka}) and "
                         f"tensor_b ({kb}) differ (transpose_a={transpose_a}, "
                         f"transpose_b={transpose_b})")
    sa, sb = const_size(ba), const_size(bb)
    if sa != 1 and sb != 1 and not _same(ba, bb):
        raise ValueError(f"topi.nn.batch_matmul: the batch sizes of tensor_a ({ba}) and "
                         f"tensor_b ({bb}) differ and neither is 1")
    batch = bb if sa == 1 else ba
    if oshape is not None and [const_size(d) for d in oshape] != \
            [const_size(d) for d in (batch, m, n)]:
        raise ValueError(f"topi.nn.batch_matmul: oshape {tuple(oshape)} is not the output "
                         f"shape {(batch, m, n)}")
    k = reduce_axis((0, ka), name="k")

    def body(b, i, j):
        x = 0 if sa == 1 else b
        y = 0 if sb == 1 else b
        a = tensor_a[x, k, i] if transpose_a else tensor_a[x, i, k]
        w = tensor_b[y, j, k] if transpose_b else tensor_b[y, k, j]
        return _sum(a.astype(out_dtype) * w.astype(out_dtype), axis=k)
    return compute((batch, m, n), body, name="T_batch_matmul_NT", tag="batch_matmul")
