"""The AVX2 product (``pmaddwd256``: the bytes widened to int16, two 256-bit ``vpmaddwd`` per
16 lanes), forced with ``qgemm.set_path``: Linear and Conv2d against torch's fbgemm modules
and exactly against the host's other paths and a numpy gemmlowp reference; the kernel built
for an AVX2-only CPU (``-mcpu=haswell``: no zmm register in its code) runs and gives numpy's
integers."""
import numpy as np
import pytest
import torch
import torch.ao.nn.quantized as tnnq

import nn
import te
from nn.ops import quantized as qops
from nn.quantized import qgemm
from qref import RNG, assert_lsb, gemmlowp_requant, qw, qx

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.skipif("pmaddwd256" not in qgemm.available_paths(),
                                 reason="the host has no AVX2")]


@pytest.fixture(autouse=True)
def fbgemm():
    old = torch.backends.quantized.engine
    torch.backends.quantized.engine = "fbgemm"
    yield
    torch.backends.quantized.engine = old


@pytest.fixture
def avx2():
    old = qgemm.set_path("pmaddwd256")
    yield
    qgemm.set_path(old)


def _linear(k, n, per_channel, zp_range=(0, 1)):
    w, tw = qw((n, k), per_channel, zp_range)
    b = RNG.normal(0, 1, n).astype("float32")
    ours, theirs = nn.quantized.Linear(k, n), tnnq.Linear(k, n)
    ours.set_weight_bias(w, nn.Tensor(b))
    theirs.set_weight_bias(tw, torch.from_numpy(b))
    ours.scale = theirs.scale = 0.05
    ours.zero_point = theirs.zero_point = 77
    return ours, theirs


def _other_path(module, x, path):
    old = qgemm.set_path(path)
    try:
        return module(x).int_repr().numpy()
    finally:
        qgemm.set_path(old)


@pytest.mark.parametrize("per_channel", [False, True])
def test_linear_matches_torch_and_pmaddwd(avx2, per_channel):
    ours, theirs = _linear(37, 40, per_channel)    # K odd, channels not whole 16-lane blocks
    x, tx = qx((6, 37), 0.02, 3)
    got = ours(x)
    assert_lsb(got, theirs(tx))
    for path in set(qgemm.available_paths()) - {"pmaddwd256"}:
        np.testing.assert_array_equal(got.int_repr().numpy(), _other_path(ours, x, path))


def test_linear_full_range_exact_integer_mode(avx2):
    """The whole uint8 x int8 range, weight zero points not 0: no int16 pair saturates."""
    ours, _ = _linear(50, 24, True, zp_range=(-3, 4))
    ours.mode = "integer"
    ours.set_weight_bias(ours.weight(), None)
    x, _ = qx((5, 50), 0.02, 3, hi=256)
    w = ours.weight()
    acc = (x.int_repr().numpy().astype(np.int64) - 3) @ \
        (w.int_repr().numpy().astype(np.int64) -
         w.q_per_channel_zero_points().numpy()[:, None]).T
    real = 0.02 * w.q_per_channel_scales().numpy() / ours.scale
    np.testing.assert_array_equal(ours(x).int_repr().numpy(),
                                  gemmlowp_requant(acc, real, ours.zero_point))


@pytest.mark.parametrize("groups,stride,padding", [(1, 1, 1), (2, 2, 0)])
def test_conv2d_matches_torch_and_pmaddwd(avx2, groups, stride, padding):
    w, tw = qw((8, 6 // groups, 3, 3), True)
    c = nn.quantized.Conv2d(6, 8, 3, stride=stride, padding=padding, groups=groups)
    tc = tnnq.Conv2d(6, 8, 3, stride=stride, padding=padding, groups=groups)
    b = RNG.normal(0, 1, 8).astype("float32")
    c.set_weight_bias(w, nn.Tensor(b))
    tc.set_weight_bias(tw, torch.from_numpy(b))
    c.scale = tc.scale = 0.1
    c.zero_point = tc.zero_point = 60
    x, tx = qx((2, 6, 7, 9), 0.02, 3)
    got = c(x)
    assert_lsb(got, tc(tx))
    for path in qgemm.available_paths()[:2]:
        np.testing.assert_array_equal(got.int_repr().numpy(), _other_path(c, x, path))


def test_built_for_avx2_cpu_has_no_zmm_and_runs():
    """qlinear scheduled for ``pmaddwd256`` and compiled for Haswell (AVX2, no AVX-512; the
    feature named, as codegen_llvm checks an intrinsic against ``-mattr`` only): its
    code uses ymm ``vpmaddwd`` only; run here, exact against numpy (integer mode)."""
    ours, _ = _linear(40, 32, True)
    ours.set_weight_bias(ours.weight(), None)
    packed = ours._packed
    x, _ = qx((8, 40), 0.02, 3, hi=256)
    ich, fch = packed.epilogue(0.02, 0.05, "integer")
    arrays = [x.int_repr().numpy(), packed.pack(2), ich, fch,
              np.array([3, 77], "float64")]
    dts = ["uint8", "int8", "int32", "float32", "float64"]
    inputs = [te.placeholder(a.shape, d, name=f"x{i}") for i, (a, d) in
              enumerate(zip(arrays, dts))]
    out = qops.qlinear(*inputs, out_features=32, mode="integer")
    s = qops.schedule_qgemm(out, path="pmaddwd256")
    mod = te.build(s, inputs + [out], target="llvm -mcpu=haswell -mattr=+avx2",
                   name="qlinear_avx2")
    asm = mod.get_source("asm")
    assert "vpmaddwd" in asm and "ymm" in asm
    assert "zmm" not in asm
    res = np.empty(tuple(d.value for d in out.shape), "uint8")
    mod(*arrays, res)
    w = ours.weight()
    acc = (arrays[0].astype(np.int64) - 3) @ w.int_repr().numpy().astype(np.int64).T
    real = 0.02 * w.q_per_channel_scales().numpy() / 0.05
    np.testing.assert_array_equal(res[:, :32], gemmlowp_requant(acc, real, 77))


def test_host_features_select_the_path():
    """Zen 2 / 3, Haswell .. Comet Lake, Alder Lake (AVX2, no AVX-512) get ``pmaddwd256``;
    AVX-512 hosts their AVX-512 paths first."""
    assert qops.host_paths({"avx", "avx2", "fma"}) == ("pmaddwd256", "plain")
    assert qops.host_paths({"avx2", "avxvnni"}) == ("pmaddwd256", "plain")
    assert qops.host_paths({"avx2", "avx512f", "avx512bw"}) == \
        ("pmaddwd", "pmaddwd256", "plain")
    assert qops.host_paths({"avx2", "avx512f", "avx512bw", "avx512vl", "avx512vnni"}) == \
        qops.PATHS
    assert qops.host_paths({"sse4.2"}) == ("plain",)
