"""nn against PyTorch 2.13 where they used to differ (issue 16, kind 14): what a node saves for
backward (an in-place write to a tensor that backward does not read is allowed, one to a tensor
it reads is refused, as in PyTorch), atan2 on signed zeros and infinities, median / nanmedian
with NaN, clamp with NaN bounds, unique with NaN, lgamma / digamma at their poles and
infinities, floor_divide / remainder / fmod at infinities and signed zeros, and the gradient of
std and var at zero variance. Every expectation is torch's own output on the same input."""
import itertools
import warnings

import numpy as np
import pytest
import torch

import nn

NAN, INF = float("nan"), float("inf")


def _numpy(t):
    return np.asarray(t.detach().numpy())


def _same(got, want):
    """Equal values, NaN where NaN, and the same sign on every zero (and infinity)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_array_equal(got, want)
    if want.dtype.kind == "f":
        signed = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(want[signed]))


def _lib_tensor(lib, values, **kw):
    return lib.tensor(values, **kw)


# ----------------------------------------------------------------------------- saved tensors

def _outcome(lib, op, mutate, w_grad):
    """('ok', x.grad, w.grad) or ('error', kind) for ``op(y, w)`` with ``y = x * 1.0`` (a
    non-leaf), after an in-place ``add_(1)`` on y, w or the result before backward."""
    x = lib.tensor([[0.5, 1.5, 2.0], [1.0, -0.75, 3.0]], requires_grad=True)
    w0 = lib.tensor([[1.25, 0.75, 3.0], [2.0, 0.5, -1.5]], requires_grad=w_grad)
    y = x * 1.0
    w = w0 * 1.0 if w_grad else w0
    out = op(lib, y, w)
    {"y": y, "w": w, "out": out}[mutate].add_(1)
    try:
        out.sum().backward()
    except RuntimeError as e:
        message = str(e)
        if "modified by an inplace operation" in message:
            return ("error", "inplace")
        assert "is not implemented" in message, message
        return ("error", message.split(" is not implemented")[0])
    grads = tuple(None if t.grad is None else _numpy(t.grad) for t in (x, w0))
    return ("ok",) + grads


def _linear(lib, y, w):
    functional = lib.nn.functional if lib is torch else lib.functional
    return functional.linear(y, w, w[:, 0])


SAVES = {
    # a Python number as operand: no tensor the user sees is saved
    "y * 2": lambda L, y, w: y * 2, "2 * y": lambda L, y, w: 2 * y,
    "y * 1.5": lambda L, y, w: y * 1.5, "y / 2": lambda L, y, w: y / 2,
    "2 / y": lambda L, y, w: 2 / y, "y + 2": lambda L, y, w: y + 2,
    "2 - y": lambda L, y, w: 2 - y, "y - 2": lambda L, y, w: y - 2,
    "y ** 2": lambda L, y, w: y ** 2, "2 ** y": lambda L, y, w: 2 ** y,
    "y % 2": lambda L, y, w: y % 2, "fmod(y, 2)": lambda L, y, w: L.fmod(y, 2),
    "-y": lambda L, y, w: -y, "lerp(y, w, 0.3)": lambda L, y, w: L.lerp(y, w, 0.3),
    "clamp(y, 0.7, 1.8)": lambda L, y, w: L.clamp(y, 0.7, 1.8),
    # no derivative: backward raises, as PyTorch's
    "2 % y": lambda L, y, w: 2 % y, "y // 2": lambda L, y, w: y // 2,
    # tensor operands: each saved only for the other's gradient (or always, as torch)
    "y * w": lambda L, y, w: y * w, "y / w": lambda L, y, w: y / w,
    "y + w": lambda L, y, w: y + w, "add(y, w, alpha=2)": lambda L, y, w: L.add(y, w, alpha=2),
    "y % w": lambda L, y, w: y % w, "fmod(y, w)": lambda L, y, w: L.fmod(y, w),
    "y ** w": lambda L, y, w: y.abs() ** w, "lerp(y, w, w)": lambda L, y, w: L.lerp(y, w, w),
    "atan2(y, w)": lambda L, y, w: L.atan2(y, w), "maximum(y, w)": lambda L, y, w: L.maximum(y, w),
    "ldexp(y, w)": lambda L, y, w: L.ldexp(y, w), "addcmul": lambda L, y, w: L.addcmul(y, w, w),
    "clamp(y, w)": lambda L, y, w: L.clamp(y, min=w),
    "y @ w.T": lambda L, y, w: y @ w.t(), "w.T @ y": lambda L, y, w: w.t() @ y,
    "linear": _linear, "bmm": lambda L, y, w: L.bmm(y[None], w.t()[None]),
    "dot": lambda L, y, w: L.dot(y[0], w[0]), "mv": lambda L, y, w: L.mv(y, w[0]),
    # unary: the input, the output, or nothing, as torch's
    "exp": lambda L, y, w: y.exp(), "relu": lambda L, y, w: y.relu(),
    "reciprocal": lambda L, y, w: y.reciprocal(), "sin": lambda L, y, w: y.sin(),
    "log": lambda L, y, w: y.abs().log(), "abs": lambda L, y, w: y.abs(),
    "square": lambda L, y, w: y.square(), "sign": lambda L, y, w: y.sign(),
    "floor": lambda L, y, w: y.floor(), "frac": lambda L, y, w: y.frac(),
    "sqrt": lambda L, y, w: y.abs().sqrt(), "sigmoid": lambda L, y, w: y.sigmoid(),
    # reductions
    "var": lambda L, y, w: y.var(1), "std": lambda L, y, w: y.std(1),
    "median()": lambda L, y, w: y.median(), "median(1)": lambda L, y, w: y.median(1)[0],
}


def test_multiplying_by_a_number_saves_nothing_that_an_inplace_write_invalidates():
    for lib in (torch, nn):      # the example: accepted by both, same gradient
        x = lib.ones(3, requires_grad=True)
        y = x * 1.0
        z = y * 2
        y.add_(1)
        z.sum().backward()
        np.testing.assert_array_equal(_numpy(x.grad), [2.0, 2.0, 2.0])


@pytest.mark.parametrize("name", list(SAVES))
def test_inplace_after_forward_is_accepted_or_refused_as_in_pytorch(name):
    for w_grad, mutate in itertools.product((False, True), ("y", "w", "out")):
        want = _outcome(torch, SAVES[name], mutate, w_grad)
        got = _outcome(nn, SAVES[name], mutate, w_grad)
        assert got[0] == want[0] and len(got) == len(want), (mutate, w_grad, got, want)
        if want[0] == "error":
            assert got[1] == want[1], (mutate, w_grad, got, want)
            continue
        for g, t in zip(got[1:], want[1:]):
            assert (g is None) == (t is None), (mutate, w_grad)
            if t is not None:
                np.testing.assert_allclose(g, t, rtol=1e-5, atol=1e-6, err_msg=f"{mutate} "
                                           f"{w_grad}")


def test_number_divided_by_a_tensor_is_its_reciprocal_times_the_number():
    x = np.random.RandomState(0).uniform(0.1, 10, 256).astype("float32")
    for number in (3, 2.5, True):
        _same(_numpy(number / nn.tensor(x)), _numpy(number / torch.tensor(x)))
    _same(_numpy(3 / nn.tensor([1, 0, -2])), _numpy(3 / torch.tensor([1, 0, -2])))


def test_negation_keeps_the_sign_of_zero():
    values = [0.0, -0.0, 1.5, -INF]
    _same(_numpy(-nn.tensor(values)), _numpy(-torch.tensor(values)))


# ----------------------------------------------------------------------------- atan2

_ATAN2_VALUES = [0.0, -0.0, INF, -INF, 1.5, -1.5, NAN, 1e-20, -1e-30, 1e20]
_PAIRS = list(itertools.product(_ATAN2_VALUES, repeat=2))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_atan2_on_signed_zeros_infinities_and_nan_matches_pytorch(dtype):
    a = np.array([p[0] for p in _PAIRS], dtype)
    b = np.array([p[1] for p in _PAIRS], dtype)
    got = _numpy(nn.atan2(nn.tensor(a), nn.tensor(b)))
    want = _numpy(torch.atan2(torch.tensor(a), torch.tensor(b)))
    special = np.array([not (np.isfinite(p) and np.isfinite(q) and p != 0 and q != 0)
                        for p, q in zip(a, b)])
    _same(got[special], want[special])          # zeros, infinities, NaN: exactly
    # both finite and nonzero: torch's vectorized float32 atan2 is within 1 ulp
    np.testing.assert_allclose(got[~special], want[~special], rtol=2e-7 if dtype == "float32"
                               else 0)


def test_atan2_gradients_at_the_origin_and_at_infinity_match_pytorch():
    a = np.array([p[0] for p in _PAIRS], "float32")
    b = np.array([p[1] for p in _PAIRS], "float32")
    grads = []
    for lib in (nn, torch):
        y, x = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        lib.atan2(y, x).sum().backward()
        grads.append((_numpy(y.grad), _numpy(x.grad)))
    for got, want in zip(*grads):
        _same(got, want)


# ----------------------------------------------------------------------------- median

_MEDIAN_DATA = [[1.0, NAN, 3.0, 2.0], [4.0, 0.0, 2.0, 5.0], [NAN, NAN, 1.0, 7.0],
                [6.0, NAN, NAN, NAN]]


@pytest.mark.parametrize("name", ["median", "nanmedian"])
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
def test_median_and_nanmedian_with_nan_match_pytorch(name, dim):
    for keepdim in (False, True):
        results, grads = [], []
        for lib in (nn, torch):
            x = lib.tensor(_MEDIAN_DATA, requires_grad=True)
            out = getattr(x, name)() if dim is None else getattr(x, name)(dim, keepdim)
            values = out if dim is None else out.values
            weights = lib.arange(1.0, values.numel() + 1).reshape(values.shape)
            (values * weights).sum().backward()
            results.append(out)
            grads.append(_numpy(x.grad))
        got, want = results
        if dim is None:
            _same(_numpy(got), _numpy(want))
            assert got.grad_fn.name() == want.grad_fn.name()
        else:
            assert type(got).__name__ == type(want).__name__.split(".")[-1]
            _same(_numpy(got.values), _numpy(want.values))
            _same(_numpy(got.indices), _numpy(want.indices))
        _same(grads[0], grads[1])


@pytest.mark.parametrize("values", [[1.0, 2.0, 2.0, 3.0], [1.0, 2.0, NAN, NAN], [NAN], [5.0],
                                    [3.0, 1.0, 2.0, 2.0, 2.0]])
def test_median_of_all_elements_shares_its_gradient_as_pytorch(values):
    for name in ("median", "nanmedian"):
        out = []
        for lib in (nn, torch):
            x = lib.tensor(values, requires_grad=True)
            m = getattr(x, name)()
            m.backward()
            out.append((_numpy(m), _numpy(x.grad)))
        _same(out[0][0], out[1][0])
        _same(out[0][1], out[1][1])


def test_median_of_integers_and_of_an_empty_dimension_as_pytorch():
    _same(_numpy(nn.tensor([3, 1, 2]).median()), _numpy(torch.tensor([3, 1, 2]).median()))
    _same(_numpy(nn.tensor([[3, 1, 2]]).median(1).indices),
          _numpy(torch.tensor([[3, 1, 2]]).median(1).indices))
    with pytest.raises(IndexError) as want:
        torch.empty(2, 0).median(1)
    with pytest.raises(IndexError) as got:
        nn.empty(2, 0).nanmedian(1)
    assert str(got.value) == str(want.value)


# ----------------------------------------------------------------------------- clamp

_CLAMP_X = [1.0, -2.0, NAN, 5.0, -INF, INF, 0.5]


@pytest.mark.parametrize("bounds", [dict(min=NAN), dict(max=NAN), dict(min=NAN, max=1.0),
                                    dict(min=0.0, max=NAN), dict(min=2.0, max=1.0),
                                    dict(min=0.0, max=1.0)])
def test_clamp_with_a_nan_number_bound_is_nan_as_pytorch(bounds):
    _same(_numpy(nn.clamp(nn.tensor(_CLAMP_X), **bounds)),
          _numpy(torch.clamp(torch.tensor(_CLAMP_X), **bounds)))


_TRIPLES = list(itertools.product([0.0, 1.0, 2.0, NAN], repeat=3))


@pytest.mark.parametrize("which", ["both", "min", "max", "number", "number_nan"])
def test_clamp_with_nan_in_tensor_bounds_values_and_gradients_match_pytorch(which):
    results = []
    for lib in (nn, torch):
        x, low, high = (lib.tensor([t[k] for t in _TRIPLES], requires_grad=True)
                        for k in range(3))
        out = {"both": lambda: lib.clamp(x, low, high), "min": lambda: lib.clamp(x, min=low),
               "max": lambda: lib.clamp(x, max=high), "number": lambda: lib.clamp(x, 1.0, 1.0),
               "number_nan": lambda: lib.clamp(x, min=NAN)}[which]()
        out.sum().backward()
        results.append([_numpy(out)] + [None if t.grad is None else _numpy(t.grad)
                                        for t in (x, low, high)])
    for got, want in zip(*results):
        assert (got is None) == (want is None)
        if want is not None:
            _same(got, want)


# ----------------------------------------------------------------------------- unique

@pytest.mark.parametrize("kwargs", [{}, dict(return_inverse=True, return_counts=True),
                                    dict(sorted=False, return_inverse=True, return_counts=True),
                                    dict(return_counts=True)])
def test_unique_keeps_each_nan_distinct_as_pytorch(kwargs):
    values = [2.0, NAN, 1.0, NAN, 2.0, INF, -0.0, 0.0, NAN]
    got, want = nn.unique(nn.tensor(values), **kwargs), torch.unique(torch.tensor(values),
                                                                      **kwargs)
    got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple)
                                                              else (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(_numpy(g), _numpy(w))


def test_unique_rows_with_nan_are_distinct_as_pytorch():
    rows = [[1.0, NAN], [1.0, NAN], [2.0, 0.0], [2.0, 0.0]]
    got = nn.unique(nn.tensor(rows), dim=0, return_inverse=True, return_counts=True)
    want = torch.unique(torch.tensor(rows), dim=0, return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(_numpy(g), _numpy(w))


# ----------------------------------------------------------------------------- lgamma, digamma

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lgamma_and_digamma_at_poles_zeros_and_infinities_match_pytorch(dtype):
    special = np.array([INF, -INF, NAN, 0.0, -0.0, -1.0, -2.0, -1e30], dtype)
    for name, extra in (("lgamma", [1.0, 2.0]), ("digamma", [])):
        x = np.concatenate([special, np.array(extra, dtype)])
        _same(_numpy(getattr(nn, name)(nn.tensor(x))), _numpy(getattr(torch, name)(
            torch.tensor(x))))
    # finite values near the poles and far out: within rounding
    finite = np.array([1.0, 2.0, 1e30, 1e-30, -1e-30, 0.5, -0.5, -2.5], dtype)
    for name in ("lgamma", "digamma"):
        np.testing.assert_allclose(_numpy(getattr(nn, name)(nn.tensor(finite))),
                                   _numpy(getattr(torch, name)(torch.tensor(finite))),
                                   rtol=1e-6 if dtype == "float32" else 1e-12,
                                   atol=1e-7 if dtype == "float32" else 0)


def test_lgamma_and_digamma_elsewhere_are_close_to_pytorch():
    x = np.random.RandomState(0).uniform(-20, 20, 500).astype("float32")
    for name, tolerance in (("lgamma", 3e-7), ("digamma", 1e-4)):
        got = _numpy(getattr(nn, name)(nn.tensor(x)))
        want = _numpy(getattr(torch, name)(torch.tensor(x)))
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=1e-5)


# ----------------------------------------------------------------------------- floor_divide

_DIVISIONS = [(2.0, -INF), (2.0, INF), (-2.0, INF), (-2.0, -INF), (0.0, -INF), (-0.0, INF),
              (INF, 2.0), (INF, -2.0), (-INF, 2.0), (INF, INF), (NAN, 1.0), (1.0, 0.0),
              (-1.0, 0.0), (1.0, -0.0), (0.0, 0.0), (0.0, 5.0), (-0.0, 5.0), (0.0, -5.0),
              (5.0, 5.0), (-5.0, 5.0), (-6.0, 4.0), (6.0, -4.0), (1e30, 3.0), (7.5, 2.5),
              (-7.5, 2.5), (0.3, 0.1), (-1e-30, 1.0), (1e-30, -1.0)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_floor_divide_remainder_fmod_at_infinities_and_signed_zeros_match_pytorch(dtype):
    a = np.array([p[0] for p in _DIVISIONS], dtype)
    b = np.array([p[1] for p in _DIVISIONS], dtype)
    for name in ("floor_divide", "remainder", "fmod"):
        _same(_numpy(getattr(nn, name)(nn.tensor(a), nn.tensor(b))),
              _numpy(getattr(torch, name)(torch.tensor(a), torch.tensor(b))))
    _same(_numpy(nn.div(nn.tensor(a), nn.tensor(b), rounding_mode="floor")),
          _numpy(torch.div(torch.tensor(a), torch.tensor(b), rounding_mode="floor")))
    _same(_numpy(nn.tensor(a) // -INF), _numpy(torch.tensor(a) // -INF))
    _same(_numpy(nn.tensor(a) % -5.0), _numpy(torch.tensor(a) % -5.0))
    _same(_numpy(2.0 // nn.tensor(b)), _numpy(2.0 // torch.tensor(b)))


def test_floor_divide_and_remainder_of_random_floats_match_pytorch_exactly():
    rng = np.random.RandomState(1)
    a = (rng.standard_normal(512) * 100).astype("float32")
    b = np.where(rng.rand(512) < 0.5, -1, 1) * rng.uniform(0.01, 10, 512).astype("float32")
    for name in ("floor_divide", "remainder", "fmod"):
        _same(_numpy(getattr(nn, name)(nn.tensor(a), nn.tensor(b))),
              _numpy(getattr(torch, name)(torch.tensor(a), torch.tensor(b))))


def test_floor_divide_result_requires_grad_and_its_backward_raises_as_pytorch():
    for lib in (torch, nn):
        y = lib.tensor([1.5, -2.5], requires_grad=True) * 1.0
        out = y // 2
        assert out.requires_grad
        with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not "
                                               "implemented"):
            out.sum().backward()


# ----------------------------------------------------------------------------- std, var

_SPREADS = {
    "std()": lambda x: x.std(), "std(1)": lambda x: x.std(1), "std(0)": lambda x: x.std(0),
    "std(correction=0)": lambda x: x.std(correction=0),
    "std(1, correction=0)": lambda x: x.std(1, correction=0),
    "std(1, unbiased=False)": lambda x: x.std(1, unbiased=False),
    "std(1, keepdim=True)": lambda x: x.std(1, keepdim=True),
    "std(1, correction=2)": lambda x: x.std(1, correction=2),
    "std(1, correction=4)": lambda x: x.std(1, correction=4),
    "var(1)": lambda x: x.var(1), "var(1, correction=0)": lambda x: x.var(1, correction=0),
    "var(1, correction=3)": lambda x: x.var(1, correction=3),
}


@pytest.mark.parametrize("name", list(_SPREADS))
def test_std_and_var_gradient_at_zero_variance_is_zero_as_pytorch(name):
    data = [[2.0, 2.0, 2.0], [1.0, 2.0, 4.0], [5.0, 5.0, 5.0]]
    results = []
    for lib in (nn, torch):
        x = lib.tensor(data, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = _SPREADS[name](x)
        out.sum().backward()
        results.append((_numpy(out), _numpy(x.grad)))
    (got, got_grad), (want, want_grad) = results
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_array_equal(np.isnan(got_grad), np.isnan(want_grad))
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-5, atol=0)
    zero_rows = [k for k in (0, 2) if want_grad.ndim == 2 and not np.isnan(want_grad[k]).any()]
    for k in zero_rows:         # the constant rows: exactly 0, not NaN
        _same(got_grad[k], want_grad[k])


@pytest.mark.parametrize("shape", [(1,), (1, 1)])
def test_std_and_var_of_a_single_element_match_pytorch(shape):
    for name, f in (("std", lambda x: x.std()), ("std c0", lambda x: x.std(correction=0)),
                    ("std(0) c0", lambda x: x.std(0, correction=0)), ("var", lambda x: x.var()),
                    ("var c0", lambda x: x.var(correction=0))):
        results = []
        for lib in (nn, torch):
            x = lib.full(shape, 3.0, requires_grad=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = f(x)
            out.sum().backward()
            results.append((_numpy(out), _numpy(x.grad)))
        _same(results[0][0], results[1][0])
        _same(results[0][1], results[1][1])


def test_the_gpu_kernels_follow_the_same_edge_cases():
    """The same declarations on the GPU (numba's simulator in CI): the edge cases above."""
    a = [2.0, INF, -5.0, 1.0, 7.5, 0.0, NAN, -0.0, 1.5]
    b = [-INF, 2.0, 5.0, 0.0, 2.5, -0.0, 1.0, -1.5, NAN]
    for name in ("floor_divide", "remainder", "fmod", "atan2"):
        got = getattr(nn, name)(nn.tensor(a, device="cuda"), nn.tensor(b, device="cuda"))
        _same(got.cpu().numpy(), _numpy(getattr(torch, name)(torch.tensor(a),
                                                             torch.tensor(b))))
    _same((-nn.tensor(a, device="cuda")).cpu().numpy(), _numpy(-torch.tensor(a)))
    _same(nn.clamp(nn.tensor(a, device="cuda"), min=nn.tensor(b, device="cuda")).cpu().numpy(),
          _numpy(torch.clamp(torch.tensor(a), min=torch.tensor(b))))
