"""What the quantized-module tests share: our quantized tensors and torch's with the same
integers and parameters, the 1-LSB-at-ties comparison, and a numpy gemmlowp reference."""
import numpy as np
import torch

import nn

RNG = np.random.default_rng(18)


def qx(shape, scale, zp, lo=0, hi=128):
    """A quint8 tensor (ours, torch's) of random integers in [lo, hi) (below 128: fbgemm's
    AVX2 path saturates u8 x s8 pairs past int16, so torch on a host without VNNI is exact
    only there)."""
    ints = RNG.integers(lo, hi, shape).astype("uint8")
    ours = nn.quantized.QTensor(nn.Tensor(ints), nn.quint8, scale, zp)
    theirs = torch._make_per_tensor_quantized_tensor(torch.from_numpy(ints), scale, zp)
    return ours, theirs


def qw(shape, per_channel, zp_range=(0, 1)):
    """A qint8 weight (ours, torch's): per tensor or per output channel."""
    ints = RNG.integers(-128, 128, shape).astype("int8")
    if per_channel:
        scales = RNG.uniform(0.002, 0.02, shape[0])
        zps = RNG.integers(*zp_range, shape[0]).astype("int64")
        ours = nn.quantized.QTensor(nn.Tensor(ints), nn.qint8, scales=scales,
                                    zero_points=zps, axis=0)
        theirs = torch._make_per_channel_quantized_tensor(
            torch.from_numpy(ints), torch.from_numpy(scales), torch.from_numpy(zps), 0)
        return ours, theirs
    scale, zp = float(RNG.uniform(0.002, 0.02)), int(RNG.integers(*zp_range))
    ours = nn.quantized.QTensor(nn.Tensor(ints), nn.qint8, scale, zp)
    theirs = torch._make_per_tensor_quantized_tensor(torch.from_numpy(ints), scale, zp)
    return ours, theirs


def assert_lsb(ours, theirs, max_frac=0.01):
    """Same parameters; integers equal except at most 1 LSB on a small share (ties)."""
    a = ours.int_repr().numpy().astype(np.int64)
    b = theirs.int_repr().numpy().astype(np.int64)
    assert a.shape == b.shape
    assert ours.q_scale() == theirs.q_scale() and ours.q_zero_point() == theirs.q_zero_point()
    diff = np.abs(a - b)
    assert diff.max(initial=0) <= 1, f"max difference {diff.max()} LSB"
    assert (diff > 0).mean() <= max_frac, f"{(diff > 0).sum()} of {diff.size} differ"
    return int((diff > 0).sum())


def quantize_multiplier(real):
    m, e = np.frexp(real)
    fixed = int(np.floor(m * 2.0 ** 31 + 0.5))
    if fixed == 2 ** 31:
        fixed //= 2
        e += 1
    return fixed, int(e)


def gemmlowp_requant(acc, real, zp, relu=False):
    """TFLite's MultiplyByQuantizedMultiplier(acc, real) + zp, clamped to quint8; numpy
    int64 arithmetic, written from gemmlowp's definitions."""
    out = np.empty(acc.shape, np.int64)
    for c in range(acc.shape[-1]):
        m, shift = quantize_multiplier(float(real[c]))
        left, right = max(shift, 0), max(-shift, 0)
        x = np.clip(acc[..., c].astype(np.int64), -2 ** 31, 2 ** 31 - 1)
        x = np.clip(x * 2 ** left, -2 ** 31, 2 ** 31 - 1)
        prod = x * m
        nudge = np.where(prod >= 0, 1 << 30, 1 - (1 << 30))
        hi = (prod + nudge) // 2 ** 31
        hi = np.where((prod + nudge < 0) & ((prod + nudge) % 2 ** 31 != 0), hi + 1, hi)
        mask = (1 << right) - 1
        rem = hi & mask
        thr = (mask >> 1) + (hi < 0)
        out[..., c] = (hi >> right) + (rem > thr)
    out += zp
    return np.clip(out, zp if relu else 0, 255)
