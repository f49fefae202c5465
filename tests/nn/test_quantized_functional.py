"""nn.quantized.QFunctional / FloatFunctional against PyTorch 2.13's
torch.ao.nn.quantized.QFunctional (x86): add, add_relu, cat within 1 LSB and only near rounding
ties (the seeds' integer Add and Concat against PyTorch's float arithmetic), mul, add_scalar
and mul_scalar identical; the integer mode Add exactly against a plain-Python TFLite Add."""
import warnings

import numpy as np
import pytest
import torch
from torch.ao.nn.quantized import QFunctional as TorchQFunctional

import nn
from test_quantization import ref_multiply_by_quantized_multiplier, ref_quantize_multiplier

warnings.filterwarnings("ignore", message=".*quantized tensor creation.*")

TORCH = {"quint8": torch.quint8, "qint8": torch.qint8}
SHAPE = (4, 64)


def _case(rng, dtype):
    """Two random quantized inputs of different scales and zero points, and output qparams."""
    qdtype = getattr(nn, dtype)
    lo, hi = qdtype.qmin, qdtype.qmax
    scales = rng.uniform(0.005, 0.1, 3)
    zps = rng.integers(lo + 20, hi - 20, 3)
    pair = []
    for s, z in zip(scales[:2], zps[:2]):
        x = (rng.standard_normal(SHAPE) * 60 * s).astype("float32")
        pair.append((nn.quantize_per_tensor(nn.tensor(x), float(s), int(z), qdtype),
                     torch.quantize_per_tensor(torch.from_numpy(x), float(s), int(z),
                                               TORCH[dtype])))
    return pair, float(scales[2]), int(zps[2])


def _functionals(scale, zero_point, mode="float"):
    ours, theirs = nn.quantized.QFunctional(), TorchQFunctional()
    ours.scale, ours.zero_point, ours.mode = scale, zero_point, mode
    theirs.scale, theirs.zero_point = scale, zero_point
    return ours, theirs


def _ints(q):
    return (q.int_repr().numpy() if isinstance(q, nn.quantized.QTensor)
            else q.int_repr().numpy()).astype(np.int64)


def _near_tie(exact, tol=1e-3):
    return np.abs(np.abs(exact - np.floor(exact)) - 0.5) < tol


def _near_tie_f32(exact):
    """Near a tie within torch's float32 error: a few float32 ulps of the value (qint32
    values reach 10**6 LSB, where float32 resolves only about 0.1 LSB)."""
    return _near_tie(exact, 1e-3 + np.abs(exact) * 2.5e-7)


@pytest.mark.parametrize("dtype", ["quint8", "qint8"])
@pytest.mark.parametrize("op", ["add", "add_relu"])
def test_add_matches_torch_but_ties(dtype, op):
    rng = np.random.default_rng(10)
    differ_total = 0
    for _ in range(25):
        ((a, ta), (b, tb)), scale, zp = _case(rng, dtype)
        ours, theirs = _functionals(scale, zp)
        r, t = getattr(ours, op)(a, b), getattr(theirs, op)(ta, tb)
        assert (r.q_scale(), r.q_zero_point()) == (t.q_scale(), t.q_zero_point())
        got, want = _ints(r), _ints(t)
        exact = (a.q_scale() * (_ints(a) - a.q_zero_point()) +
                 b.q_scale() * (_ints(b) - b.q_zero_point())) / scale + zp
        differ = got != want
        assert np.abs(got - want).max(initial=0) <= 1
        assert np.all(_near_tie(exact)[differ]), exact[differ]
        differ_total += int(differ.sum())
    print(f"{op} {dtype}: {differ_total} of {25 * 256} outputs differ from torch by 1 LSB, "
          "all at rounding ties")
    assert differ_total <= 25 * 256 // 100


@pytest.mark.parametrize("dtype", ["quint8", "qint8"])
def test_mul_identical_to_torch(dtype):
    rng = np.random.default_rng(11)
    for _ in range(20):
        ((a, ta), (b, tb)), scale, zp = _case(rng, dtype)
        scale *= 20         # a product needs a wider output range
        ours, theirs = _functionals(scale, zp)
        r, t = ours.mul(a, b), theirs.mul(ta, tb)
        np.testing.assert_array_equal(_ints(r), _ints(t))
        assert (r.q_scale(), r.q_zero_point()) == (t.q_scale(), t.q_zero_point())


@pytest.mark.parametrize("dtype", ["quint8", "qint8"])
def test_cat_matches_torch_but_ties(dtype):
    rng = np.random.default_rng(12)
    differ_total = 0
    for k in range(20):
        ((a, ta), (b, tb)), scale, zp = _case(rng, dtype)
        if k % 4 == 0:      # the output's qparams equal a's: a is copied as it is
            scale, zp = a.q_scale(), a.q_zero_point()
        ours, theirs = _functionals(scale, zp)
        r, t = ours.cat([a, b], 1), theirs.cat([ta, tb], 1)
        assert r.shape == (4, 128) and (r.q_scale(), r.q_zero_point()) == (scale, zp)
        got, want = _ints(r), _ints(t)
        exact = np.concatenate([a.q_scale() * (_ints(a) - a.q_zero_point()),
                                b.q_scale() * (_ints(b) - b.q_zero_point())], 1) / scale + zp
        differ = got != want
        assert np.abs(got - want).max(initial=0) <= 1
        assert np.all(_near_tie(exact)[differ])
        if k % 4 == 0:
            np.testing.assert_array_equal(got[:, :64], _ints(a))
        differ_total += int(differ.sum())
    print(f"cat {dtype}: {differ_total} of {20 * 512} outputs differ by 1 LSB, at ties")


@pytest.mark.parametrize("dtype", ["quint8", "qint8"])
@pytest.mark.parametrize("c", [0.3, -0.3, 2.0, -2.0, 0.0, 7.5, -7.5, 0.01])
def test_scalar_ops_identical_to_torch(dtype, c):
    rng = np.random.default_rng(13)
    x = (rng.standard_normal(SHAPE) * 2).astype("float32")
    zp = 100 if dtype == "quint8" else -10
    a = nn.quantize_per_tensor(nn.tensor(x), 0.05, zp, getattr(nn, dtype))
    ta = torch.quantize_per_tensor(torch.from_numpy(x), 0.05, zp, TORCH[dtype])
    ours, theirs = _functionals(1.0, 0)
    for op in ("add_scalar", "mul_scalar"):
        r, t = getattr(ours, op)(a, c), getattr(theirs, op)(ta, c)
        np.testing.assert_array_equal(_ints(r), _ints(t), err_msg=op)
        assert r.q_zero_point() == t.q_zero_point(), op
        assert r.q_scale() == pytest.approx(t.q_scale(), rel=1e-12), op


def _ref_tflite_add(a, b, scale, zp, relu):
    """TFLite's reference 8-bit Add, written out in Python integers."""
    sa, sb = a.q_scale(), b.q_scale()
    twice_max = 2 * max(sa, sb)
    m1, m2, mo = (ref_quantize_multiplier(r) for r in
                  (sa / twice_max, sb / twice_max, twice_max / ((1 << 20) * scale)))
    lo, hi = a.dtype.qmin, a.dtype.qmax
    if relu:
        lo = max(lo, zp)
    out = []
    for x, y in zip(_ints(a).ravel(), _ints(b).ravel()):
        xs = ref_multiply_by_quantized_multiplier((int(x) - a.q_zero_point()) << 20, *m1)
        ys = ref_multiply_by_quantized_multiplier((int(y) - b.q_zero_point()) << 20, *m2)
        v = ref_multiply_by_quantized_multiplier(xs + ys, *mo) + zp
        out.append(min(hi, max(lo, v)))
    return np.array(out).reshape(a.shape)


@pytest.mark.parametrize("dtype", ["quint8", "qint8"])
@pytest.mark.parametrize("op", ["add", "add_relu"])
def test_integer_mode_add_exact_tflite(dtype, op):
    rng = np.random.default_rng(14)
    for _ in range(6):
        ((a, _ta), (b, _tb)), scale, zp = _case(rng, dtype)
        ours, _ = _functionals(scale, zp, mode="integer")
        r = getattr(ours, op)(a, b)
        np.testing.assert_array_equal(_ints(r), _ref_tflite_add(a, b, scale, zp,
                                                                op == "add_relu"))


def test_integer_mode_mul_and_cat_exact():
    rng = np.random.default_rng(15)
    ((a, _), (b, _)), scale, zp = _case(rng, "quint8")
    ours, _ = _functionals(scale * 20, zp, mode="integer")
    m = ref_quantize_multiplier(a.q_scale() * b.q_scale() / (scale * 20))
    prod = (_ints(a) - a.q_zero_point()) * (_ints(b) - b.q_zero_point())
    expect = [min(255, max(0, ref_multiply_by_quantized_multiplier(int(p), *m) + zp))
              for p in prod.ravel()]
    np.testing.assert_array_equal(_ints(ours.mul(a, b)).ravel(), expect)
    joined = ours.cat([a, b])
    expect_b = nn.quantization.requantize(b, scale * 20, zp, mode="integer")
    np.testing.assert_array_equal(_ints(joined)[4:], _ints(expect_b))


def test_broadcast_add_and_float_functional():
    rng = np.random.default_rng(16)
    x, y = rng.standard_normal((3, 5)).astype("float32"), rng.standard_normal(5).astype(
        "float32")
    qx = nn.quantize_per_tensor(nn.tensor(x), 0.02, 128, nn.quint8)
    qy = nn.quantize_per_tensor(nn.tensor(y), 0.03, 120, nn.quint8)
    f = nn.quantized.QFunctional()
    f.scale, f.zero_point = 0.04, 125
    t = TorchQFunctional()
    t.scale, t.zero_point = 0.04, 125
    tx = torch.quantize_per_tensor(torch.from_numpy(x), 0.02, 128, torch.quint8)
    ty = torch.quantize_per_tensor(torch.from_numpy(y), 0.03, 120, torch.quint8)
    got, want = _ints(f.add(qx, qy)), _ints(t.add(tx, ty))
    assert got.shape == (3, 5) and np.abs(got - want).max() <= 1
    ff = nn.quantized.FloatFunctional()
    a, b = nn.tensor(x), nn.tensor(y)
    np.testing.assert_allclose(ff.add(a, b).numpy(), x + y, rtol=1e-6)
    np.testing.assert_allclose(ff.add_relu(a, b).numpy(), np.maximum(x + y, 0), rtol=1e-6)
    np.testing.assert_allclose(ff.mul(a, b).numpy(), x * y, rtol=1e-6)
    np.testing.assert_allclose(ff.add_scalar(a, 1.5).numpy(), x + 1.5, rtol=1e-6)
    np.testing.assert_allclose(ff.mul_scalar(a, 1.5).numpy(), x * 1.5, rtol=1e-6)
    np.testing.assert_array_equal(ff.cat([a, a], 1).numpy(), np.concatenate([x, x], 1))
    with pytest.raises(RuntimeError, match="forward"):
        ff(a)
    assert "scale=0.04, zero_point=125" in repr(f)


@pytest.mark.parametrize("scales", [(0.1, 0.3, 0.2), (0.5, 0.25, 1.0), (0.05, 0.15, 0.1)])
def test_add_on_decimal_and_dyadic_scales(scales):
    """Scales whose exact sums fall on ties often: at most 1 LSB, only at those ties."""
    rng = np.random.default_rng(17)
    sa, sb, so = scales
    ints_a, ints_b = rng.integers(0, 256, (2, 512)).astype("uint8")
    a = nn.quantized.QTensor(nn.tensor(ints_a), nn.quint8, sa, 128)
    b = nn.quantized.QTensor(nn.tensor(ints_b), nn.quint8, sb, 100)
    ta = torch._make_per_tensor_quantized_tensor(torch.from_numpy(ints_a), sa, 128)
    tb = torch._make_per_tensor_quantized_tensor(torch.from_numpy(ints_b), sb, 100)
    ours, theirs = _functionals(so, 120)
    got, want = _ints(ours.add(a, b)), _ints(theirs.add(ta, tb))
    exact = (sa * (ints_a.astype(np.int64) - 128) + sb * (ints_b.astype(np.int64) - 100)) / so
    differ = got != want
    assert np.abs(got - want).max() <= 1
    assert np.all(_near_tie(exact + 120)[differ])
    print(f"add with scales {scales}: {int(differ.sum())} of 512 differ by 1 LSB "
          f"({int(_near_tie(exact).sum())} ties)")


def test_qint32_float_mode_matches_torch():
    """qint32 inputs (accumulators): add / add_relu / mul / cat within 1 LSB of torch, at ties
    only (float mode; the Add accumulates in int64)."""
    rng = np.random.default_rng(18)
    for _ in range(5):
        x, y = (rng.standard_normal(SHAPE).astype("float32") * 100 for _ in range(2))
        sa, sb, so = (float(v) for v in rng.uniform(0.001, 0.01, 3))
        za, zb, zo = (int(v) for v in rng.integers(-50, 50, 3))
        a, b = (nn.quantize_per_tensor(nn.tensor(v), s, z, nn.qint32)
                for v, s, z in ((x, sa, za), (y, sb, zb)))
        ta, tb = (torch.quantize_per_tensor(torch.from_numpy(v), s, z, torch.qint32)
                  for v, s, z in ((x, sa, za), (y, sb, zb)))
        ours, theirs = _functionals(so, zo)
        exact_a = sa * (_ints(a) - za) / so
        exact_b = sb * (_ints(b) - zb) / so
        for op, exact in (("add", exact_a + exact_b), ("add_relu", exact_a + exact_b),
                          ("cat", np.concatenate([exact_a, exact_b]))):
            r = ours.cat([a, b]) if op == "cat" else getattr(ours, op)(a, b)
            t = theirs.cat([ta, tb]) if op == "cat" else getattr(theirs, op)(ta, tb)
            got, want = _ints(r), _ints(t)
            differ = got != want
            assert np.abs(got - want).max() <= 1, op
            assert np.all(_near_tie_f32(exact)[differ]), op
        sm = so * 500
        ours.scale, theirs.scale = sm, sm
        # torch multiplies qint32 in int32 and wraps; ours in int64: compare where it fits
        fits = np.abs((_ints(a) - za) * (_ints(b) - zb)) < 2 ** 31
        assert fits.mean() > 0.5
        got, want = _ints(ours.mul(a, b)), _ints(theirs.mul(ta, tb))
        # 8-bit products are identical (test_mul_identical_to_torch); qint32 ones, whose
        # float32 conversion rounds, differ by 1 LSB near ties, from torch's own rounding
        exact = (_ints(a) - za) * (_ints(b) - zb) * (sa * sb / sm)
        differ = (got != want) & fits
        assert np.abs(got - want)[fits].max() <= 1
        assert np.all(_near_tie_f32(exact)[differ])
