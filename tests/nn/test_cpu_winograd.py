"""nn.ops.cpu_winograd: F(2x2, 3x3) and F(4x4, 3x3) convolutions against a float64 direct
convolution, at sizes that leave partial tiles everywhere, and conv2d_nchw's choice of it."""
import numpy as np
import pytest

import te
from nn.ops import cpu
from nn.ops import cpu_winograd as W
from te.testing import conv2d_nchw_python, verify_schedule

RNG = np.random.default_rng(7)


def build(x_shape, w_shape, padding, tile, dtype="float32", bias=False):
    X = te.placeholder(x_shape, dtype, name="x")
    K = te.placeholder(w_shape, dtype, name="w")
    B = te.placeholder((w_shape[0],), dtype, name="b") if bias else None
    out = cpu.conv2d_nchw(X, K, padding=padding, tile=tile, algorithm="winograd", bias=B)
    args = [X, K] + ([B] if bias else []) + [out]
    return te.build(cpu.schedule_conv2d_nchw(out), args), out


# (N, C, H, W, F, padding): odd sizes (partial tiles), batches whose tile rows cross images,
# output channels that do not fill the 8-channel register tile, rows narrower than a vector
CASES = [
    (1, 16, 9, 11, 16, (1, 1, 1, 1)),
    (2, 17, 13, 10, 21, (1, 1, 1, 1)),
    (3, 16, 6, 7, 19, (0, 0, 0, 0)),
    (1, 24, 20, 37, 16, (2, 0, 1, 3)),
    (1, 32, 30, 30, 40, (1, 1, 1, 1)),
]


# every case with one tile, each tile on cases of every kind (a Winograd build lowers for
# 10-20 s: the ten pairs took three minutes of the suite)
PAIRS = [(CASES[0], 2), (CASES[1], 4), (CASES[2], 4), (CASES[2], 2), (CASES[3], 4),
         (CASES[4], 2)]


@pytest.mark.parametrize("case, tile", PAIRS,
                         ids=lambda v: "x".join(map(str, v[:5])) if isinstance(v, tuple) else
                         f"F{v}")
def test_winograd_matches_direct_convolution(case, tile):
    n, c, h, w, f, padding = case
    x = RNG.uniform(-1, 1, (n, c, h, w)).astype("float32")
    k = RNG.uniform(-1, 1, (f, c, 3, 3)).astype("float32")
    fn, _ = build(x.shape, k.shape, padding, tile)
    want = conv2d_nchw_python(x, k, padding=padding)
    out = np.empty(want.shape, "float32")
    fn(x, k, out)
    # F(4x4, 3x3)'s transforms multiply by up to 8 and 1/24: a few float32 ulps more error
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=2e-4 if tile == 4 else 5e-5)


def test_winograd_float64_with_bias_is_exact_to_rounding():
    x = RNG.standard_normal((2, 16, 10, 9))
    k = RNG.standard_normal((18, 16, 3, 3))
    b = RNG.standard_normal(18)
    fn, _ = build(x.shape, k.shape, (1, 1, 1, 1), 4, "float64", bias=True)
    out = np.empty((2, 18, 10, 9))
    fn(x, k, b, out)
    np.testing.assert_allclose(out, conv2d_nchw_python(x, k, padding=1, bias=b), rtol=1e-11, atol=1e-11)


def test_winograd_through_the_interpreter():
    """The reference interpreter runs the same lowered program: a wrong answer in codegen
    alone shows up as a mismatch between the two."""
    x = RNG.uniform(-1, 1, (1, 16, 5, 6)).astype("float32")
    k = RNG.uniform(-1, 1, (16, 16, 3, 3)).astype("float32")
    X, K = te.placeholder(x.shape, name="x"), te.placeholder(k.shape, name="w")
    out = cpu.conv2d_nchw(X, K, padding=1, algorithm="winograd", tile=2)
    verify_schedule(cpu.schedule_conv2d_nchw(out), [X, K, out], [x, k],
                    [np.empty((1, 16, 5, 6), "float32")],
                    lambda a, b: conv2d_nchw_python(a, b, padding=1), rtol=1e-4, atol=1e-4)


def test_conv2d_nchw_chooses_winograd_for_3x3_stride_1():
    X = te.placeholder((1, 64, 56, 56), name="x")
    tags = lambda out: {getattr(t.op, "tag", "") for t in out.op.input_tensors()}
    assert "winograd_inverse" in tags(cpu.conv2d_nchw(X, te.placeholder((64, 64, 3, 3)),
                                                      padding=1))
    for kw in (dict(stride=2), dict(dilation=2), dict(tile=(4, 1, 64)),
               dict(algorithm="direct")):
        out = cpu.conv2d_nchw(X, te.placeholder((64, 64, 3, 3)), padding=1, **kw)
        assert "winograd_inverse" not in tags(out), kw
    # the GPU's default schedule is for the direct convolution
    with te.target.Target("cuda"):
        out = cpu.conv2d_nchw(X, te.placeholder((64, 64, 3, 3)), padding=1)
    assert "winograd_inverse" not in tags(out)
    with te.target.Target("llvm"):
        out = cpu.conv2d_nchw(X, te.placeholder((64, 64, 3, 3)), padding=1)
    assert "winograd_inverse" in tags(out)
    # few channels: the transforms would cost more than the products they save
    out = cpu.conv2d_nchw(te.placeholder((1, 3, 56, 56)), te.placeholder((64, 3, 3, 3)))
    assert "winograd_inverse" not in tags(out)


def test_default_tile_follows_the_cost_model():
    assert W.default_tile(1, 64, 64, 56, 56) == 4
    assert W.default_tile(8, 256, 256, 14, 14) == 4
    # one 14x14 image: 16 tiles of 4x4 fill half a register tile, and U is 36 x 256 x 256
    assert W.default_tile(1, 256, 256, 14, 14) is None
    assert W.default_tile(1, 512, 512, 7, 7) is None
    # 14 x 14 tiles of 4x4 (224 columns); rows of 15 phase columns fill half a vector
    assert W.cost(4, 1, 64, 64, 56, 56) == (36 * 224 * 64 * 64 + W.TRANSFORM_COST * 36 * 224
                                            * 128 + W.KERNEL_COST * 36 * 64 * 64
                                            + W.PAD_COST * 2 * 64 * 58 * 4 * 15)
    # the tutorial's input gradient (50 images, 64 -> 32 channels, 15x15): direct
    assert W.default_tile(50, 64, 32, 15, 15) is None
    assert W.applies((3, 3), (1, 1), (1, 1), 1, 16, 16)
    assert not W.applies((3, 3), (1, 1), (1, 1), 1, 8, 64)
    assert not W.applies((5, 5), (1, 1), (1, 1), 1, 64, 64)
