"""More of torch's tensor functions, each against torch 2.13: shape helpers (select, ravel,
tensor_split, rot90, diag, block_diag, cartesian_prod...), products (tensordot, kron, cross,
addmv), reductions (trace, nansum, cummax/cummin, logcumsumexp, aminmax, cov, corrcoef,
quantile), elementwise (fmax, hypot, xlogy, frexp...), index helpers (take_along_dim,
index_copy, masked_scatter, bincount, histc, searchsorted), the top-level linear algebra
aliases and the default dtype; with gradients where torch has them."""
import warnings

import numpy as np
import pytest
import torch

import nn

RNG = np.random.default_rng(11)


def _close(ours, theirs, rtol=1e-4, atol=1e-6):
    ours = ours.detach().cpu().numpy() if isinstance(ours, nn.Tensor) else np.asarray(ours)
    theirs = theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else theirs
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, equal_nan=True)


def _pair(array, grad=False):
    return (nn.tensor(array, requires_grad=grad), torch.tensor(array, requires_grad=grad))


def _same(fn_nn, fn_torch, *arrays, grad=True, rtol=1e-4):
    """Values of ``fn_nn`` and ``fn_torch`` on ``arrays`` agree, and so do the gradients of
    ``(out * w).sum()`` for a random ``w``, when ``grad``."""
    ours = [nn.tensor(a, requires_grad=grad) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=grad) for a in arrays]
    a, b = fn_nn(*ours), fn_torch(*theirs)
    _close(a, b, rtol)
    if grad:
        w = RNG.standard_normal(b.shape).astype(str(b.dtype).replace("torch.", ""))
        (a * nn.tensor(w)).sum().backward()
        (b * torch.tensor(w)).sum().backward()
        for x, y in zip(ours, theirs):
            _close(x.grad, y.grad, rtol)


def f64(*shape):
    return RNG.standard_normal(shape)


def f32(*shape):
    return RNG.standard_normal(shape).astype("float32")


# ----------------------------------------------------------------------------- shapes

def test_numel_is_floating_point_t_ravel():
    x = nn.zeros(2, 3)
    assert nn.numel(x) == 6 and nn.is_floating_point(x) and not nn.is_floating_point(nn.arange(2))
    assert nn.t(x).shape == (3, 2) and nn.t(nn.zeros(3)).shape == (3,)
    _same(lambda a: nn.ravel(a.t()), lambda a: torch.ravel(a.t()), f32(2, 3))


@pytest.mark.parametrize("dim,index", [(0, 1), (1, -1), (-1, 0)])
def test_select(dim, index):
    _same(lambda a: nn.select(a, dim, index), lambda a: torch.select(a, dim, index), f32(2, 3))


@pytest.mark.parametrize("spec", [3, 4, [1, 4], [1, 5, 3, -1], [0]])
def test_tensor_split(spec):
    ours, theirs = _pair(f32(7, 2), True)
    a, b = nn.tensor_split(ours, spec), torch.tensor_split(theirs, spec)
    assert [p.shape for p in a] == [tuple(p.shape) for p in b]
    w = [RNG.standard_normal(p.shape).astype("float32") for p in b]
    sum((p * nn.tensor(v)).sum() for p, v in zip(a, w)).backward()
    sum((p * torch.tensor(v)).sum() for p, v in zip(b, w)).backward()
    _close(ours.grad, theirs.grad)


def test_hsplit_vsplit_dsplit():
    x = f32(4, 6, 2)
    for name, arg in [("hsplit", 3), ("hsplit", [1, 4]), ("vsplit", 2), ("dsplit", 2)]:
        a, b = getattr(nn, name)(nn.tensor(x), arg), getattr(torch, name)(torch.tensor(x), arg)
        assert len(a) == len(b)
        for p, q in zip(a, b):
            _close(p, q)
    _close(nn.hsplit(nn.tensor(x[0, :, 0]), 2)[1], torch.hsplit(torch.tensor(x[0, :, 0]), 2)[1])


def test_dstack_column_stack_hstack_vstack():
    a, b, c = f32(3), f32(3), f32(3, 2)
    _same(lambda p, q: nn.dstack([p, q]), lambda p, q: torch.dstack([p, q]), a, b)
    _same(lambda p, q: nn.column_stack([p, q]), lambda p, q: torch.column_stack([p, q]), a, c)
    _same(lambda p, q: nn.hstack([p, q]), lambda p, q: torch.hstack([p, q]), a, b)
    _same(lambda p, q: nn.vstack([p, q]), lambda p, q: torch.vstack([p, q]), a, b)


@pytest.mark.parametrize("k,dims", [(1, (0, 1)), (2, (0, 1)), (3, (1, 2)), (-1, (0, 2)),
                                    (0, (0, 1))])
def test_rot90(k, dims):
    _same(lambda a: nn.rot90(a, k, dims), lambda a: torch.rot90(a, k, dims), f32(2, 3, 4))


@pytest.mark.parametrize("shape,offset", [((3,), 0), ((3,), 2), ((3,), -1), ((3, 4), 1),
                                          ((4, 3), -2)])
def test_diag(shape, offset):
    _same(lambda a: nn.diag(a, offset), lambda a: torch.diag(a, offset), f32(*shape))


@pytest.mark.parametrize("offset,dim1,dim2", [(0, -2, -1), (1, 0, 2), (-1, 2, 0)])
def test_diag_embed(offset, dim1, dim2):
    _same(lambda a: nn.diag_embed(a, offset, dim1, dim2),
          lambda a: torch.diag_embed(a, offset, dim1, dim2), f32(2, 3))


def test_block_diag():
    _same(lambda *t: nn.block_diag(*t), lambda *t: torch.block_diag(*t), f32(2, 2), f32(3),
          f32(), f32(1, 3))


def test_cartesian_prod_and_combinations():
    _same(lambda a, b: nn.cartesian_prod(a, b), lambda a, b: torch.cartesian_prod(a, b),
          f32(3), f32(2))
    for r in (1, 2, 3):
        for rep in (False, True):
            _same(lambda a: nn.combinations(a, r, rep),
                  lambda a: torch.combinations(a, r, rep), f32(4))
    assert nn.combinations(nn.arange(1), 2).shape == (0, 2)


# ----------------------------------------------------------------------------- products

@pytest.mark.parametrize("dims", [1, 2, ([0, 2], [1, 0]), 0])
def test_tensordot(dims):
    b = f64(3, 4, 2) if dims in (1, 2) else f64(4, 2, 5)
    _same(lambda p, q: nn.tensordot(p, q, dims), lambda p, q: torch.tensordot(p, q, dims),
          f64(4, 2, 3) if dims == 1 else f64(2, 3, 4) if dims == 2 else f64(2, 3, 4), b)


def test_kron():
    _same(nn.kron, torch.kron, f32(2, 3), f32(3, 2))
    _same(nn.kron, torch.kron, f32(2), f32(2, 2, 3))


def test_cross():
    _same(lambda a, b: nn.cross(a, b, dim=1), lambda a, b: torch.cross(a, b, dim=1),
          f32(4, 3), f32(1, 3))
    _same(nn.linalg.cross, torch.linalg.cross, f32(2, 3), f32(2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(nn.cross(nn.tensor(np.eye(3)), nn.tensor(np.ones((3, 3)))),
               torch.cross(torch.tensor(np.eye(3)), torch.tensor(np.ones((3, 3)))))


def test_addmv():
    _same(lambda i, m, v: nn.addmv(i, m, v, beta=0.5, alpha=2),
          lambda i, m, v: torch.addmv(i, m, v, beta=0.5, alpha=2), f32(2), f32(2, 3), f32(3))


# ----------------------------------------------------------------------------- reductions

def test_trace_count_nonzero_nansum():
    _same(nn.trace, torch.trace, f32(3, 4))
    assert nn.trace(nn.arange(6).reshape(2, 3)).item() == 4
    x = np.array([[1.0, 0, np.nan], [0, 2, 3]], "float32")
    assert nn.count_nonzero(nn.tensor(x)).item() == 4
    _close(nn.count_nonzero(nn.tensor(x), 0), torch.count_nonzero(torch.tensor(x), 0))
    _same(lambda a: nn.nansum(a, 1), lambda a: torch.nansum(a, 1), x)
    assert nn.nansum(nn.tensor([1, 2])).dtype == nn.int64


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin(name):
    x = np.array([[1, 3, 3, 2, np.nan, 5], [4, 1, 1, 0, 0, 7]], "float32")
    for dim in (0, 1):
        a, b = getattr(nn, name)(nn.tensor(x), dim), getattr(torch, name)(torch.tensor(x), dim)
        _close(a.values, b.values)
        np.testing.assert_array_equal(a.indices.numpy(), b.indices.numpy())
    _same(lambda t: getattr(nn, name)(t, 1).values, lambda t: getattr(torch, name)(t, 1).values,
          f64(3, 5))
    ints = nn.tensor([3, 1, 4, 1, 5])
    assert getattr(nn, name)(ints, 0).values.tolist() == \
        getattr(torch, name)(torch.tensor([3, 1, 4, 1, 5]), 0).values.tolist()


def test_logcumsumexp():
    x = f64(3, 4) * 30
    _same(lambda a: nn.logcumsumexp(a, 1), lambda a: torch.logcumsumexp(a, 1), x)
    _same(lambda a: nn.logcumsumexp(a, 0), lambda a: torch.logcumsumexp(a, 0), f32(4, 2))


def test_aminmax_dist_renorm():
    x = f32(3, 4)
    a, b = nn.aminmax(nn.tensor(x), dim=1, keepdim=True), torch.aminmax(torch.tensor(x), dim=1,
                                                                       keepdim=True)
    _close(a.min, b.min)
    _close(a.max, b.max)
    _close(nn.aminmax(nn.tensor(x)).max, torch.aminmax(torch.tensor(x)).max)
    for p in (1, 2, 3.5, float("inf")):
        _same(lambda u, v: nn.dist(u, v, p), lambda u, v: torch.dist(u, v, p), x, f32(4))
    _same(lambda u: nn.renorm(u, 2, 0, 1.5), lambda u: torch.renorm(u, 2, 0, 1.5), x * 2)
    _same(lambda u: nn.renorm(u, 1, 1, 2.0), lambda u: torch.renorm(u, 1, 1, 2.0), x)


def test_cov_corrcoef():
    x = f64(3, 7)
    _same(nn.cov, torch.cov, x)
    _same(lambda a: nn.cov(a, correction=0), lambda a: torch.cov(a, correction=0), x)
    _same(nn.cov, torch.cov, f64(7))
    fw, aw = RNG.integers(1, 4, 7), RNG.random(7)
    _same(lambda a: nn.cov(a, fweights=nn.tensor(fw), aweights=nn.tensor(aw)),
          lambda a: torch.cov(a, fweights=torch.tensor(fw), aweights=torch.tensor(aw)), x)
    _same(nn.corrcoef, torch.corrcoef, x)


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile(name, interpolation):
    x = f32(3, 6)
    x[1, 2] = np.nan
    for q in (0.3, np.array([0.0, 0.25, 1.0], "float32")):
        for dim, keepdim in ((None, False), (1, True), (0, False), (None, True)):
            a = getattr(nn, name)(nn.tensor(x), nn.tensor(q) if isinstance(q, np.ndarray) else q,
                                  dim, keepdim, interpolation=interpolation)
            b = getattr(torch, name)(torch.tensor(x), torch.tensor(q) if isinstance(
                q, np.ndarray) else q, dim, keepdim, interpolation=interpolation)
            _close(a, b)
    _same(lambda t: getattr(nn, name)(t, 0.4, 1, interpolation=interpolation),
          lambda t: getattr(torch, name)(t, 0.4, 1, interpolation=interpolation), f64(3, 5))


# ----------------------------------------------------------------------------- elementwise

@pytest.mark.parametrize("name", ["fmax", "fmin", "hypot", "xlogy", "float_power"])
def test_binary(name):
    nan = np.nan
    a = np.array([1.0, nan, 2.0, nan, 3.0, -0.5, 0.0, 0.5], "float32")
    b = np.array([0.0, 1.0, 2.0, nan, 5.0, -1.0, 0.5, 0.25], "float32")
    if name in ("hypot", "float_power", "xlogy"):
        a, b = np.abs(f32(8)) + 0.1, np.abs(f32(8)) + 0.1
    _same(getattr(nn, name), getattr(torch, name), a, b)


def test_xlogy_at_zero_and_integers():
    _close(nn.xlogy(nn.tensor([0.0, 0.0, 2.0]), nn.tensor([0.0, np.nan, 3.0])),
           torch.xlogy(torch.tensor([0.0, 0.0, 2.0]), torch.tensor([0.0, np.nan, 3.0])))
    _close(nn.xlogy(2, nn.tensor([1, 3])), torch.xlogy(2, torch.tensor([1, 3])))


def test_heaviside_sgn_ldexp_float_power_dtype():
    _close(nn.heaviside(nn.tensor([-1.0, 0, 2]), nn.tensor([0.5])),
           torch.heaviside(torch.tensor([-1.0, 0, 2]), torch.tensor([0.5])))
    assert nn.sgn(nn.tensor([-2, 0, 3])).tolist() == [-1, 0, 1]
    _close(nn.ldexp(nn.tensor([1, 3]), nn.tensor([1, 2])),
           torch.ldexp(torch.tensor([1, 3]), torch.tensor([1, 2])))
    assert nn.float_power(nn.tensor([2]), 2).dtype == nn.float64


def test_frexp():
    x = np.array([1.0, 0.0, -3.5, 8.0, 0.1, 1e-30, np.inf, -np.inf, np.nan, 1e30, 0.75],
                 "float32")
    x = np.concatenate([x, (f32(200) * np.exp(f32(200) * 10)).astype("float32")])
    a, b = nn.frexp(nn.tensor(x)), torch.frexp(torch.tensor(x))
    np.testing.assert_array_equal(a.mantissa.numpy(), b.mantissa.numpy())
    np.testing.assert_array_equal(a.exponent.numpy(), b.exponent.numpy())
    assert a.exponent.dtype == nn.int32


# ----------------------------------------------------------------------------- indexing

def test_take_along_dim():
    x, i = f32(3, 4), RNG.integers(0, 4, (3, 2))
    _same(lambda a: nn.take_along_dim(a, nn.tensor(i), 1),
          lambda a: torch.take_along_dim(a, torch.tensor(i), 1), x)
    _same(lambda a: nn.take_along_dim(a, nn.tensor(i[:1]), 1),
          lambda a: torch.take_along_dim(a, torch.tensor(i[:1]), 1), x)
    _same(lambda a: nn.take_along_dim(a, nn.tensor(i)),
          lambda a: torch.take_along_dim(a, torch.tensor(i)), x)


def test_argwhere():
    x = np.array([[1, 0], [0, 3]])
    assert nn.argwhere(nn.tensor(x)).tolist() == torch.argwhere(torch.tensor(x)).tolist()


def test_index_copy():
    _same(lambda a, s: nn.index_copy(a, 1, nn.tensor([3, 0]), s),
          lambda a, s: torch.index_copy(a, 1, torch.tensor([3, 0]), s), f32(3, 4), f32(3, 2))
    x = nn.zeros(3, 4)
    x.index_copy_(0, nn.tensor([2]), nn.ones(1, 4))
    assert x.sum().item() == 4 and x[2].tolist() == [1, 1, 1, 1]


def test_masked_scatter():
    mask = RNG.random((1, 4)) > 0.4
    _same(lambda a, s: nn.masked_scatter(a, nn.tensor(mask), s),
          lambda a, s: torch.masked_scatter(a, torch.tensor(mask), s), f32(3, 4), f32(13))
    x = nn.zeros(2, 2)
    x.masked_scatter_(nn.tensor([[True, False], [False, True]]), nn.tensor([5.0, 6.0]))
    assert x.tolist() == [[5, 0], [0, 6]]


def test_bincount_histc():
    b = np.array([1, 3, 3, 0, 7])
    assert nn.bincount(nn.tensor(b)).tolist() == torch.bincount(torch.tensor(b)).tolist()
    w = f32(5)
    a, t = nn.bincount(nn.tensor(b), nn.tensor(w), 10), torch.bincount(torch.tensor(b),
                                                                          torch.tensor(w), 10)
    _close(a, t)
    assert a.dtype == nn.float32
    y = f32(100)
    _close(nn.histc(nn.tensor(y), 7), torch.histc(torch.tensor(y), 7))
    _close(nn.histc(nn.tensor(y), 5, -1, 1), torch.histc(torch.tensor(y), 5, -1, 1))
    _close(nn.histc(nn.tensor([2.0, 2.0]), 4), torch.histc(torch.tensor([2.0, 2.0]), 4))


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_bucketize(right):
    b = np.sort(f64(3, 6), -1)
    v = f64(3, 4)
    v[0, 0] = b[0, 2]
    np.testing.assert_array_equal(
        nn.searchsorted(nn.tensor(b), nn.tensor(v), right=right).numpy(),
        torch.searchsorted(torch.tensor(b), torch.tensor(v), right=right).numpy())
    np.testing.assert_array_equal(
        nn.bucketize(nn.tensor(v), nn.tensor(b[0]), right=right).numpy(),
        torch.bucketize(torch.tensor(v), torch.tensor(b[0]), right=right).numpy())
    assert nn.searchsorted(nn.tensor([1.0, 2.0]), 1.5).shape == ()
    assert nn.searchsorted(nn.tensor([1.0, 2.0]), nn.tensor([2.0]), side="right",
                           out_int32=True).dtype == nn.int32


# ----------------------------------------------------------------------------- linalg, dtypes

@pytest.mark.parametrize("name", ["det", "inverse", "logdet"])
def test_linalg_aliases(name):
    _same(getattr(nn, name), getattr(torch, name), f64(2, 3, 3))
    A = f64(3, 3) + 3 * np.eye(3)
    _close(getattr(nn.tensor(A), name)(), getattr(torch.tensor(A), name)())


def test_slogdet_and_cholesky():
    _same(lambda a: nn.slogdet(a).logabsdet, lambda a: torch.slogdet(a).logabsdet, f64(2, 3, 3))
    A = f64(3, 3)
    _close(nn.linalg.slogdet(nn.tensor(A)).sign, torch.linalg.slogdet(torch.tensor(A)).sign)
    S = A @ A.T + np.eye(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(nn.cholesky(nn.tensor(S), True), torch.cholesky(torch.tensor(S), True))


def test_default_dtype():
    assert nn.get_default_dtype() == nn.float32
    nn.set_default_dtype(nn.float64)
    try:
        assert nn.get_default_dtype() == nn.float64
        assert nn.tensor([1.5]).dtype == nn.float64
        assert nn.zeros(2).dtype == nn.ones(2).dtype == nn.rand(2).dtype == nn.float64
        assert nn.arange(0, 1, 0.5).dtype == nn.float64
        assert (nn.tensor([1]) * 1.5).dtype == nn.float64
        assert nn.ones(1).float().dtype == nn.float32
    finally:
        nn.set_default_dtype(nn.float32)
    assert nn.tensor([1.5]).dtype == nn.float32
    with pytest.raises(TypeError, match="only floating-point types"):
        nn.set_default_dtype(nn.int64)


def test_methods():
    """The tensor-method forms give torch's values, shapes and dtypes."""
    data = f32(3, 4)
    x, t = nn.tensor(data), torch.tensor(data)
    for ours, theirs in [
            (x.ravel(), t.ravel()), (x.select(1, 0), t.select(1, 0)), (x.diag(), t.diag()),
            (x.cummax(1).values, t.cummax(1).values), (x.cummax(1).indices, t.cummax(1).indices),
            (x.nansum(), t.nansum()), (x.aminmax().min, t.aminmax().min),
            (x.aminmax().max, t.aminmax().max), (x.quantile(0.5), t.quantile(0.5)),
            (x.fmax(x * 0.5), t.fmax(t * 0.5))]:
        assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
        _close(ours, theirs)


# ----------------------------------------------------------------------------- cuda

def test_small_cases_on_cuda():
    x = nn.tensor(f32(3, 3), device="cuda")
    _close(nn.trace(x), torch.trace(torch.tensor(x.cpu().numpy())))
    _close(nn.diag(x, 1), torch.diag(torch.tensor(x.cpu().numpy()), 1))
    y = nn.tensor(f32(3, 3), device="cuda")
    out = nn.linalg.cross(x, y)
    assert out.is_cuda
    _close(out, torch.linalg.cross(torch.tensor(x.cpu().numpy()), torch.tensor(y.cpu().numpy())))
    _close(nn.fmax(x, y), torch.fmax(torch.tensor(x.cpu().numpy()), torch.tensor(y.cpu().numpy())))


# ----------------------------------------------------------------------------- special functions

@pytest.mark.parametrize("name", ["lgamma", "digamma"])
def test_lgamma_digamma(name):
    x = np.concatenate([np.linspace(-7.3, 10, 401), [0.0, -1.0, -2.0, 1.0, 2.0, 0.5, 1e-8,
                                                     -1e-8, 100.0, 1e5, -6.0025]])
    ours, theirs = getattr(nn, name)(nn.tensor(x)), getattr(torch, name)(torch.tensor(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-10)
    x32 = x.astype("float32")
    _close(getattr(nn, name)(nn.tensor(x32)), getattr(torch, name)(torch.tensor(x32)),
           rtol=1e-5, atol=1e-5)
    _same(getattr(nn, name), getattr(torch, name), np.array([-2.5, 0.3, 1.7, 4.2, 12.0]),
          rtol=1e-8)
    assert getattr(nn, name)(nn.tensor([3])).dtype == nn.float32


def test_erfinv():
    y = np.concatenate([np.linspace(-0.999, 0.999, 401), [1.0, -1.0, 1.5, 0.0]])
    ours, theirs = nn.erfinv(nn.tensor(y)), torch.erfinv(torch.tensor(y))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-14)
    y32 = np.linspace(-1, 1, 401).astype("float32")
    _close(nn.erfinv(nn.tensor(y32)), torch.erfinv(torch.tensor(y32)), rtol=1e-5)
    _same(nn.erfinv, torch.erfinv, np.array([-0.9, -0.2, 0.1, 0.7, 0.99]), rtol=1e-10)
    x = nn.tensor([0.5])
    x.erfinv_()
    _close(x, torch.erfinv(torch.tensor([0.5])))


def test_size():
    s = nn.Size([2, 3])
    assert s == (2, 3) == nn.zeros(2, 3).shape and s.numel() == 6
    assert nn.zeros(s).shape == (2, 3) and repr(s) == "nn.Size([2, 3])"


def test_default_dtype_reaches_the_parameters_of_layers():
    """As torch: set_default_dtype(float64) makes layers' parameters float64 too."""
    previous = nn.get_default_dtype()
    nn.set_default_dtype(nn.float64)
    try:
        layers = [nn.Linear(3, 2), nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.GRU(3, 2),
                  nn.LayerNorm(3), nn.Embedding(4, 3)]
        for layer in layers:
            assert all(p.dtype == "float64" for p in layer.parameters()), layer
        x = nn.randn(2, 1, 5, 5)
        assert layers[2](layers[1](x)).dtype == "float64"
        assert layers[0](nn.randn(4, 3)).dtype == "float64"
    finally:
        nn.set_default_dtype(previous)
    assert nn.Linear(3, 2).weight.dtype == "float32"
