"""Quantized tensors (nn.quantize_per_tensor / per_channel) against PyTorch, and
nn.quantization.requantize against its references: the float mode against a numpy float32
formula (exactly) and torch (within 1 LSB, only near ties), the integer mode exactly against
a plain-Python gemmlowp reference written here."""
import math
import warnings

import numpy as np
import pytest
import torch

import nn
from nn import quantization as tq

warnings.filterwarnings("ignore", message=".*quantized tensor creation.*")

TORCH_DTYPES = {"quint8": torch.quint8, "qint8": torch.qint8, "qint32": torch.qint32}
QDTYPES = [nn.quint8, nn.qint8, nn.qint32]


def _values(rng, n=512):
    """Random values with many exact ties of x / scale for the scales used below."""
    x = rng.standard_normal(n).astype("float32") * 4
    halves = (rng.integers(-600, 600, n // 4) + 0.5).astype("float32")
    return np.concatenate([x[: n - n // 4], halves * np.float32(0.25)])


def _torch_q(x, scale, zp, dtype):
    return torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, TORCH_DTYPES[dtype])


@pytest.mark.parametrize("dtype", QDTYPES)
@pytest.mark.parametrize("scale, zp", [(0.25, 0), (0.05, 3), (0.5, -7), (1.0, 10),
                                       (0.0137, 1)])
def test_quantize_per_tensor_matches_torch(dtype, scale, zp):
    if dtype == nn.quint8:
        zp = abs(zp) + 100
    x = _values(np.random.default_rng(0))
    q = nn.quantize_per_tensor(nn.tensor(x), scale, zp, dtype)
    t = _torch_q(x, scale, zp, str(dtype))
    np.testing.assert_array_equal(q.int_repr().numpy(), t.int_repr().numpy())
    np.testing.assert_array_equal(q.dequantize().numpy(), t.dequantize().numpy())
    assert q.q_scale() == t.q_scale() and q.q_zero_point() == t.q_zero_point()
    assert q.qscheme() is nn.per_tensor_affine and q.is_quantized
    assert q.dtype == dtype and q.int_repr().dtype == dtype.storage


def test_quantize_ties_round_half_to_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5], "float32")
    q = nn.quantize_per_tensor(nn.tensor(x), 1.0, 0, nn.qint8)
    np.testing.assert_array_equal(q.int_repr().numpy(), np.rint(x).astype("int8"))


@pytest.mark.parametrize("dtype", QDTYPES)
def test_quantize_saturates_and_special_values_as_torch(dtype):
    x = np.array([1e10, -1e10, 3e7 + 4, 16777217.0, 2.2e9, -2.2e9, np.inf, -np.inf, np.nan,
                  0.0, 1.0, -1.0], "float32")
    zp = 5 if dtype != nn.qint32 else 5
    q = nn.quantize_per_tensor(nn.tensor(x), 1.0, zp, dtype)
    t = _torch_q(x, 1.0, zp, str(dtype))
    np.testing.assert_array_equal(q.int_repr().numpy(), t.int_repr().numpy())


def test_quantize_per_channel_matches_torch():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 3, 5)).astype("float32")
    for axis in range(3):
        n = w.shape[axis]
        scales = rng.uniform(0.01, 0.2, n)
        zps = rng.integers(-20, 20, n)
        q = nn.quantize_per_channel(nn.tensor(w), nn.tensor(scales), nn.tensor(zps), axis,
                                    nn.qint8)
        t = torch.quantize_per_channel(torch.from_numpy(w), torch.from_numpy(scales),
                                       torch.from_numpy(zps), axis, torch.qint8)
        np.testing.assert_array_equal(q.int_repr().numpy(), t.int_repr().numpy())
        np.testing.assert_array_equal(q.dequantize().numpy(), t.dequantize().numpy())
        np.testing.assert_array_equal(q.q_per_channel_scales().numpy(), scales)
        np.testing.assert_array_equal(q.q_per_channel_zero_points().numpy(), zps)
        assert q.q_per_channel_axis() == axis and q.qscheme() is nn.per_channel_affine


def test_shape_ops_keep_qparams():
    x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype("float32")
    q = nn.quantize_per_tensor(nn.tensor(x), 0.1, 4, nn.qint8)
    ints = q.int_repr().numpy()
    for r, expect in [(q.flatten(), ints.reshape(-1)), (q.flatten(1), ints.reshape(2, 12)),
                      (q.reshape(6, 4), ints.reshape(6, 4)), (q.view(4, -1), ints.reshape(4, 6)),
                      (q[1], ints[1]), (q[:, 1:3], ints[:, 1:3]), (q[..., ::2], ints[..., ::2])]:
        np.testing.assert_array_equal(r.int_repr().numpy(), expect)
        assert (r.q_scale(), r.q_zero_point(), r.dtype) == (0.1, 4, nn.qint8)
    assert q.shape == (2, 3, 4) and q.size() == (2, 3, 4) and q.size(1) == 3
    assert q.numel() == 24 and q.dim() == 3 and len(q) == 2


def test_per_channel_slicing_and_flatten():
    w = np.random.default_rng(3).standard_normal((4, 2, 3)).astype("float32")
    scales, zps = np.array([0.1, 0.2, 0.3, 0.4]), np.array([0, 1, -2, 3])
    q = nn.quantize_per_channel(nn.tensor(w), scales, zps, 0, nn.qint8)
    flat = q.flatten(1)
    assert flat.shape == (4, 6) and flat.q_per_channel_axis() == 0
    np.testing.assert_array_equal(flat.dequantize().numpy(),
                                  q.dequantize().numpy().reshape(4, 6))
    part = q[1:3]
    np.testing.assert_array_equal(part.q_per_channel_scales().numpy(), scales[1:3])
    np.testing.assert_array_equal(part.dequantize().numpy(), q.dequantize().numpy()[1:3])
    row = q[2]          # an int on the channel axis: per tensor, as PyTorch
    assert row.qscheme() is nn.per_tensor_affine and row.q_scale() == 0.3
    col = q[:, 1]
    assert col.q_per_channel_axis() == 0
    np.testing.assert_array_equal(col.dequantize().numpy(), q.dequantize().numpy()[:, 1])
    with pytest.raises(RuntimeError, match="channel axis"):
        q.flatten()


def test_nn_cat_of_quantized_tensors_as_torch():
    rng = np.random.default_rng(4)
    a, b = (rng.standard_normal((2, 8)).astype("float32") for _ in range(2))
    qa = nn.quantize_per_tensor(nn.tensor(a), 0.05, 100, nn.quint8)
    qb = nn.quantize_per_tensor(nn.tensor(b), 0.05, 100, nn.quint8)
    same = nn.cat([qa, qb], 1)
    np.testing.assert_array_equal(same.int_repr().numpy(), np.concatenate(
        [qa.int_repr().numpy(), qb.int_repr().numpy()], 1))
    assert (same.q_scale(), same.q_zero_point()) == (0.05, 100)
    qc = nn.quantize_per_tensor(nn.tensor(b), 0.03, 120, nn.quint8)
    mixed = nn.cat([qa, qc])
    t = torch.cat([_torch_q(a, 0.05, 100, "quint8"), _torch_q(b, 0.03, 120, "quint8")])
    assert (mixed.q_scale(), mixed.q_zero_point()) == (t.q_scale(), t.q_zero_point())
    diff = np.abs(mixed.int_repr().numpy().astype(int) - t.int_repr().numpy().astype(int))
    assert diff.max() <= 1
    np.testing.assert_array_equal(nn.cat([nn.tensor(a), nn.tensor(b)]).numpy(),
                                  np.concatenate([a, b]))      # float tensors as before


# ----------------------------------------------------------------------------- requantize

def _round_half_away(x: float) -> int:
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


def ref_quantize_multiplier(real):
    """TFLite's QuantizeMultiplier, written out."""
    if real == 0:
        return 0, 0
    q, shift = math.frexp(real)
    fixed = _round_half_away(q * (1 << 31))
    if fixed == 1 << 31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if shift > 30:
        return (1 << 31) - 1, 30
    return fixed, shift


def _c_div(a, b):
    """C's integer division (toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def ref_srdhm(a, b):
    if a == b == -2 ** 31:
        return 2 ** 31 - 1
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return _c_div(ab + nudge, 1 << 31)


def ref_rdbpot(x, exponent):
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def _sat32(v):
    return max(-2 ** 31, min(2 ** 31 - 1, v))


def ref_multiply_by_quantized_multiplier(x, m, shift):
    left, right = max(shift, 0), max(-shift, 0)
    return ref_rdbpot(ref_srdhm(_sat32(_sat32(x) * (1 << left)), m), right)


def ref_requantize_integer(ints, in_scale, in_zp, scale, zp, dtype):
    m, shift = ref_quantize_multiplier(in_scale / scale)
    out = [ref_multiply_by_quantized_multiplier(int(v) - in_zp, m, shift) + zp for v in ints]
    lo, hi = dtype.qmin, dtype.qmax
    return np.array([min(hi, max(lo, v)) for v in out])


def test_quantize_multiplier_matches_reference():
    rng = np.random.default_rng(5)
    for real in list(rng.uniform(1e-6, 40, 200)) + [1.0, 0.5, 2.0 ** -31, 2.0 ** -33, 3e9,
                                                     0.9999999999]:
        assert tq.quantize_multiplier(float(real)) == ref_quantize_multiplier(float(real))


@pytest.mark.parametrize("src, dst", [("quint8", "quint8"), ("qint8", "qint8"),
                                      ("qint32", "qint8"), ("qint32", "quint8"),
                                      ("quint8", "qint8")])
def test_requantize_integer_mode_exact_gemmlowp(src, dst):
    rng = np.random.default_rng(6)
    src_t, dst_t = getattr(nn, src), getattr(nn, dst)
    for _ in range(12):
        in_scale = float(rng.uniform(0.001, 0.2))
        scale = float(in_scale * rng.choice([rng.uniform(0.05, 20), 0.5, 2.0, 1.0, 1 / 3]))
        in_zp = int(rng.integers(src_t.qmin, src_t.qmax + 1)) if src != "qint32" else \
            int(rng.integers(-1000, 1000))
        zp = int(rng.integers(dst_t.qmin, dst_t.qmax + 1))
        x = rng.standard_normal(256).astype("float32") * 64 * in_scale
        q = nn.quantize_per_tensor(nn.tensor(x), in_scale, in_zp, src_t)
        r = tq.requantize(q, scale, zp, dst_t, mode="integer")
        expect = ref_requantize_integer(q.int_repr().numpy(), in_scale, in_zp, scale, zp,
                                        dst_t)
        np.testing.assert_array_equal(r.int_repr().numpy(), expect)
        assert (r.q_scale(), r.q_zero_point(), r.dtype) == (scale, zp, dst_t)


def test_requantize_float_mode_formula_and_torch():
    """Exactly ``zp + rint(f32(q - zq) * f32(sq / s))`` (PyTorch's requantize_from_int); and
    torch.quantize_per_tensor(q.dequantize(), s, zp) within 1 LSB, differing only where the
    exact value (q - zq) * sq / s lies within 1e-4 of a tie."""
    rng = np.random.default_rng(7)
    mismatches = ties = 0
    for k in range(20):
        in_scale = float(rng.uniform(0.005, 0.1))
        scale = float(in_scale * (rng.uniform(0.2, 5) if k % 2 else rng.choice([0.5, 2, 0.25])))
        in_zp, zp = int(rng.integers(0, 256)), int(rng.integers(0, 256))
        x = rng.standard_normal(256).astype("float32") * 100 * in_scale
        q = nn.quantize_per_tensor(nn.tensor(x), in_scale, in_zp, nn.quint8)
        r = tq.requantize(q, scale, zp).int_repr().numpy().astype(np.int64)
        src = q.int_repr().numpy().astype(np.int64) - in_zp
        formula = zp + np.rint(src.astype(np.float32) * np.float32(in_scale / scale))
        np.testing.assert_array_equal(r, np.clip(formula, 0, 255))
        t = torch.quantize_per_tensor(torch.from_numpy(q.dequantize().numpy()), scale, zp,
                                      torch.quint8).int_repr().numpy().astype(np.int64)
        exact = src * (in_scale / scale)
        differ = r != t
        assert np.abs(r - t).max() <= 1
        near_tie = np.abs(np.abs(exact - np.floor(exact)) - 0.5) < 1e-4
        assert np.all(near_tie[differ]), exact[differ]
        mismatches += int(differ.sum())
        ties += int(near_tie.sum())
    print(f"float requantize vs torch's dequantize + quantize: {mismatches} of 5120 values "
          f"differ by 1, all within 1e-4 of a tie ({ties} such values)")
    assert mismatches <= ties


def test_requantize_keeps_dtype_by_default():
    q = nn.quantize_per_tensor(nn.tensor(np.linspace(-1, 1, 9, dtype="float32")), 0.01, 0,
                               nn.qint8)
    r = tq.requantize(q, 0.02, 3)
    assert r.dtype == nn.qint8
    np.testing.assert_array_equal(
        r.int_repr().numpy(), np.clip(3 + np.rint(q.int_repr().numpy() * np.float32(0.5)),
                                      -128, 127))


def _fixed_point_kernel(x, p):
    from nn.quantized import kernels
    import te
    return te.compute(x.shape, lambda i: kernels.fixed_point_multiply(
        x[i].astype("int64"), p[0].astype("int64"), p[1].astype("int64")), name="fpm")


def test_fixed_point_multiply_edges_exact():
    """The te fixed-point multiply on int32 extremes, exact ties of the rounding shift and
    every shift from -31 to 30, against the reference (gemmlowp's own formulas)."""
    from nn.ops import cpu
    rng = np.random.default_rng(8)
    x = np.concatenate([[0, 1, -1, 2 ** 31 - 1, -2 ** 31, 2 ** 30, -2 ** 30, 3, -3, 5, -5],
                        rng.integers(-2 ** 31, 2 ** 31, 53)]).astype("int32")
    x = np.concatenate([x, (rng.integers(-2 ** 20, 2 ** 20, 64) * 2 + 1) << 7]).astype("int32")
    f = cpu.build(_fixed_point_kernel, [x.shape, (2,)], ["int32", "float64"])
    for shift in range(-31, 31):
        for m in (2 ** 30, 2 ** 31 - 1, int(rng.integers(2 ** 30, 2 ** 31)), 0):
            got = f(x, np.array([m, shift], "float64"))
            want = [ref_multiply_by_quantized_multiplier(int(v), m, shift) for v in x]
            np.testing.assert_array_equal(got, want, err_msg=f"m={m} shift={shift}")


def test_quantized_dtypes_and_schemes_as_torch():
    for name in ("quint8", "qint8", "qint32"):
        ours, theirs = getattr(nn, name), getattr(torch, name)
        assert ours == name and repr(ours) == f"nn.{name}"
        assert ours.itemsize == theirs.itemsize
        assert ours.is_floating_point == theirs.is_floating_point
    assert (nn.quint8.storage, nn.qint8.storage, nn.qint32.storage) == ("uint8", "int8",
                                                                       "int32")
    for name in ("per_tensor_affine", "per_channel_affine", "per_tensor_symmetric",
                 "per_channel_symmetric"):
        assert repr(getattr(nn, name)) == repr(getattr(torch, name)).replace("torch", "nn")
    assert not nn.zeros(2).is_quantized


def test_every_step_is_a_te_kernel():
    from nn.functions.base import kernel_calls
    before = dict(kernel_calls)
    q = nn.quantize_per_tensor(nn.tensor(np.ones(8, "float32")), 0.1, 3, nn.qint8)
    q.dequantize()
    tq.requantize(q, 0.2, 0)
    nn.quantized.QFunctional().add(q, q)
    for name in ("quantize", "dequantize", "requantize", "quantized_add"):
        assert kernel_calls[name] == before.get(name, 0) + 1, name
