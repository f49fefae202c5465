"""nn.quantized.Linear / Conv2d / LinearReLU / ConvReLU2d against torch 2.13's quantized
modules (fbgemm engine: the x86 engine's linear, and its conv on hosts without VNNI) with
the same integer weights and parameters: identical integers except at most 1 LSB at ties;
the integer mode exactly against a numpy gemmlowp reference; the non-VNNI paths forced."""
import numpy as np
import pytest
import torch
import torch.ao.nn.intrinsic.quantized as tnniq
import torch.ao.nn.quantized as tnnq

import nn
from nn.functions import base
from nn.quantized import qgemm
from qref import RNG, assert_lsb, gemmlowp_requant, qw, qx

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(autouse=True)
def fbgemm():
    old = torch.backends.quantized.engine
    torch.backends.quantized.engine = "fbgemm"
    yield
    torch.backends.quantized.engine = old


def _bias(n, scale=1.0):
    return RNG.normal(0, scale, n).astype("float32")


def _linear_pair(k, n, per_channel, bias=True, relu=False, scale=0.05, zp=77):
    w, tw = qw((n, k), per_channel)
    b = _bias(n) if bias else None
    ours = (nn.quantized.LinearReLU if relu else nn.quantized.Linear)(k, n, bias)
    theirs = (tnniq.LinearReLU if relu else tnnq.Linear)(k, n, bias)
    ours.set_weight_bias(w, None if b is None else nn.Tensor(b))
    theirs.set_weight_bias(tw, None if b is None else torch.from_numpy(b))
    ours.scale, ours.zero_point = scale, zp
    theirs.scale, theirs.zero_point = scale, zp
    return ours, theirs


@pytest.mark.parametrize("per_channel,relu", [(False, False), (True, False), (True, True)])
def test_linear_matches_torch(per_channel, relu):
    ours, theirs = _linear_pair(37, 21, per_channel, relu=relu)
    for scale, zp in ((0.031, 9), (0.0123, 100)):
        x, tx = qx((9, 37), scale, zp)
        assert_lsb(ours(x), theirs(tx))


def test_linear_no_bias_3d_input_and_ties_share():
    ours, theirs = _linear_pair(64, 48, False, bias=False, scale=0.1, zp=3)
    x, tx = qx((2, 5, 64), 0.02, 64)
    out = ours(x)
    assert out.shape == (2, 5, 48)
    assert_lsb(out, theirs(tx))


@pytest.mark.parametrize("per_channel,groups,stride,padding,dilation", [
    (False, 1, 1, 1, 1), (True, 2, 2, 1, 2), (True, 3, (1, 2), (2, 0), 1)])
def test_conv2d_matches_torch(per_channel, groups, stride, padding, dilation):
    cin, cout = 6, 12
    w, tw = qw((cout, cin // groups, 3, 2), per_channel)
    b = _bias(cout)
    args = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    ours = nn.quantized.Conv2d(cin, cout, (3, 2), **args)
    theirs = tnnq.Conv2d(cin, cout, (3, 2), **args)
    ours.set_weight_bias(w, nn.Tensor(b))
    theirs.set_weight_bias(tw, torch.from_numpy(b))
    ours.scale = theirs.scale = 0.04
    ours.zero_point = theirs.zero_point = 50
    x, tx = qx((2, cin, 8, 7), 0.025, 17)
    assert_lsb(ours(x), theirs(tx))
    assert ours.weight().shape == (cout, cin // groups, 3, 2)


def test_conv_relu2d_matches_torch():
    w, tw = qw((16, 8, 3, 3), True)
    b = _bias(16)
    ours, theirs = nn.quantized.ConvReLU2d(8, 16, 3, padding=1), tnniq.ConvReLU2d(8, 16, 3,
                                                                                   padding=1)
    ours.set_weight_bias(w, nn.Tensor(b))
    theirs.set_weight_bias(tw, torch.from_numpy(b))
    ours.scale = theirs.scale = 0.02
    ours.zero_point = theirs.zero_point = 128
    x, tx = qx((1, 8, 6, 6), 0.03, 40)
    out = ours(x)
    assert out.int_repr().numpy().min() >= 128
    assert_lsb(out, theirs(tx))


def test_weight_zero_points_use_the_row_sums():
    """qint8 weights with nonzero zero points (per channel): the activation row sums enter
    the correction; exact against the numpy product of (x - zx)(w - zw)."""
    w, _ = qw((5, 12), True, zp_range=(-3, 4))
    m = nn.quantized.Linear(12, 5, bias_=False)
    m.set_weight_bias(w, None)
    m.mode = "integer"
    m.scale, m.zero_point = 0.01, 10
    x, _ = qx((4, 12), 0.05, 30)
    acc = (x.int_repr().numpy().astype(np.int64) - 30) @ \
        (w.int_repr().numpy().astype(np.int64) - w.q_per_channel_zero_points().numpy()[:, None]).T
    real = 0.05 * w.q_per_channel_scales().numpy() / 0.01
    np.testing.assert_array_equal(m(x).int_repr().numpy(), gemmlowp_requant(acc, real, 10))


@pytest.mark.parametrize("relu", [False, True])
def test_integer_mode_exact_vs_gemmlowp_reference(relu):
    w, _ = qw((24, 40), True)
    b = _bias(24, 2.0)
    m = (nn.quantized.LinearReLU if relu else nn.quantized.Linear)(40, 24)
    m.set_weight_bias(w, nn.Tensor(b))
    m.mode = "integer"
    m.scale, m.zero_point = 0.07, 90
    x, _ = qx((6, 40), 0.02, 11, hi=256)
    sw = w.q_per_channel_scales().numpy()
    acc = (x.int_repr().numpy().astype(np.int64) - 11) @ w.int_repr().numpy().astype(np.int64).T
    acc = acc + np.rint(b.astype(np.float64) / (0.02 * sw)).astype(np.int64)
    np.testing.assert_array_equal(m(x).int_repr().numpy(),
                                  gemmlowp_requant(acc, 0.02 * sw / 0.07, 90, relu))


def test_conv_integer_mode_exact():
    w, tw = qw((4, 3, 3, 3), False)
    m = nn.quantized.Conv2d(3, 4, 3, padding=1)
    m.set_weight_bias(w, None)
    m.mode = "integer"
    m.scale, m.zero_point = 0.05, 20
    x, _ = qx((1, 3, 5, 5), 0.03, 7, hi=256)
    xt = torch.tensor(x.int_repr().numpy().astype(np.float64) - 7)
    acc = torch.nn.functional.conv2d(xt, torch.tensor(w.int_repr().numpy().astype(np.float64)),
                                     padding=1).numpy().round().astype(np.int64)
    real = np.full(4, 0.03 * w.q_scale() / 0.05)
    ref = gemmlowp_requant(np.moveaxis(acc, 1, -1), real, 20)
    np.testing.assert_array_equal(m(x).int_repr().numpy(), np.moveaxis(ref, -1, 1))


@pytest.mark.parametrize("path", [p for p in ("pmaddwd", "plain")
                                  if p in qgemm.available_paths()])
def test_other_paths_forced_match_torch(path):
    """The products without VNNI (``vpmaddwd`` on AVX-512BW, plain int32 elsewhere: what
    such hosts run) give the same integers; the weights are packed again for the path."""
    ours, theirs = _linear_pair(20, 18, True)
    old = qgemm.set_path(path)
    try:
        x, tx = qx((5, 20), 0.02, 3)
        assert_lsb(ours(x), theirs(tx))
        w, tw = qw((8, 2, 3, 3), False)
        c, tc = nn.quantized.Conv2d(4, 8, 3, groups=2), tnnq.Conv2d(4, 8, 3, groups=2)
        c.set_weight_bias(w, None)
        tc.set_weight_bias(tw, None)
        x, tx = qx((1, 4, 5, 6), 0.02, 3)
        assert_lsb(c(x), tc(tx))
        # the whole uint8 range (no int16 pair saturates): exact vs numpy, integer mode
        ours.mode = "integer"
        ours.set_weight_bias(ours.weight(), None)
        x, _ = qx((5, 20), 0.02, 3, hi=256)
        w = ours.weight()
        acc = (x.int_repr().numpy().astype(np.int64) - 3) @ \
            w.int_repr().numpy().astype(np.int64).T
        real = 0.02 * w.q_per_channel_scales().numpy() / ours.scale
        np.testing.assert_array_equal(ours(x).int_repr().numpy(),
                                      gemmlowp_requant(acc, real, ours.zero_point))
    finally:
        qgemm.set_path(old)


def test_set_path_refuses_unknown_paths():
    with pytest.raises(ValueError, match="path must be one of"):
        qgemm.set_path("avx2")


@pytest.mark.skipif(qgemm.PATH != "vnni", reason="the host has no AVX-512 VNNI")
def test_vnni_host_runs_vpdpbusd():
    from nn.ops import cpu
    from nn.ops import quantized as qops
    ours, _ = _linear_pair(16, 16, False)
    x, _ = qx((4, 16), 0.02, 3)
    ours(x)
    p = ours._packed
    f = cpu.build(qops.qlinear, [(4, 16), p.pack(4).shape, (5, 16), (2, 16), (2,)],
                  ["uint8", "int8", "int32", "float32", "float64"],
                  schedule=qgemm._schedule("vnni"), out_features=16, mode="float",
                  relu=False, has_wzp=False)
    assert "vpdpbusd" in f.module.get_source("asm")


def test_one_kernel_per_call():
    ours, _ = _linear_pair(8, 16, False)
    x, _ = qx((2, 8), 0.02, 3)
    before = sum(base.kernel_calls.values())
    ours(x)
    assert sum(base.kernel_calls.values()) - before == 1


def test_functional_linear_and_conv2d_match_torch():
    import torch.ao.nn.quantized.functional as tqF
    w, tw = qw((7, 10), False)
    b = _bias(7)
    x, tx = qx((3, 10), 0.03, 5)
    assert_lsb(nn.quantized.functional.linear(x, w, nn.Tensor(b), 0.05, 60),
               tqF.linear(tx, tw, torch.from_numpy(b), 0.05, 60))
    w, tw = qw((4, 2, 3, 3), True)
    x, tx = qx((1, 2, 6, 6), 0.03, 5)
    assert_lsb(nn.quantized.functional.conv2d(x, w, None, 1, 1, scale=0.05, zero_point=60),
               tqF.conv2d(tx, tw, None, 1, 1, scale=0.05, zero_point=60))


def _calibrated(ours_mod, theirs_mod, data, backend="x86"):
    """Both float modules with their backend's default qconfig and output observer, fed
    torch's outputs on ``data``."""
    from nn import quantization as tq
    ours_mod.qconfig = tq.get_default_qconfig(backend)
    theirs_mod.qconfig = torch.ao.quantization.get_default_qconfig(backend)
    if isinstance(theirs_mod, torch.nn.Sequential):     # fused: prepare gives mod[0] one too
        ours_mod[0].qconfig, theirs_mod[0].qconfig = ours_mod.qconfig, theirs_mod.qconfig
    ours_mod.activation_post_process = ours_mod.qconfig.activation()
    theirs_mod.activation_post_process = theirs_mod.qconfig.activation()
    with torch.no_grad():       # the same float outputs to both observers (our float layers
        y = theirs_mod(torch.from_numpy(data))      # differ from torch's in the last bits)
    ours_mod.activation_post_process(nn.Tensor(y.numpy()))
    theirs_mod.activation_post_process(y)


@pytest.mark.parametrize("backend", ["x86", "qnnpack"])
def test_linear_from_float_matches_torch(backend):
    w = RNG.normal(0, 0.3, (6, 10)).astype("float32")
    b = RNG.normal(0, 0.1, 6).astype("float32")
    ours, theirs = nn.Linear(10, 6), torch.nn.Linear(10, 6)
    ours.weight.data, ours.bias.data = nn.Tensor(w), nn.Tensor(b)
    theirs.weight.data, theirs.bias.data = torch.from_numpy(w), torch.from_numpy(b)
    _calibrated(ours, theirs, RNG.normal(0, 1, (32, 10)).astype("float32"), backend)
    q, tq_ = nn.quantized.Linear.from_float(ours), tnnq.Linear.from_float(theirs)
    np.testing.assert_array_equal(q.weight().int_repr().numpy(),
                                  tq_.weight().int_repr().numpy())
    assert (q.scale, q.zero_point) == (tq_.scale, tq_.zero_point)
    x, tx = qx((4, 10), 0.02, 60)
    assert_lsb(q(x), tq_(tx))


def test_conv_relu_from_fused_float_matches_torch():
    import torch.ao.nn.intrinsic as tnni
    w = RNG.normal(0, 0.3, (4, 3, 3, 3)).astype("float32")
    c, tc = nn.Conv2d(3, 4, 3), torch.nn.Conv2d(3, 4, 3)
    c.weight.data, tc.weight.data = nn.Tensor(w), torch.from_numpy(w)
    c.bias.data, tc.bias.data = nn.Tensor(np.zeros(4, "float32")), torch.zeros(4)
    ours, theirs = nn.intrinsic.ConvReLU2d(c, nn.ReLU()), tnni.ConvReLU2d(tc, torch.nn.ReLU())
    _calibrated(ours, theirs, RNG.normal(0, 1, (2, 3, 6, 6)).astype("float32"))
    import nn.intrinsic.quantized as nniq
    q = nniq.ConvReLU2d.from_float(ours)
    tq_ = tnniq.ConvReLU2d.from_float(theirs)
    np.testing.assert_array_equal(q.weight().int_repr().numpy(),
                                  tq_.weight().int_repr().numpy())
    x, tx = qx((1, 3, 6, 6), 0.02, 60)
    assert_lsb(q(x), tq_(tx))


def test_conv_chain_channels_last_then_flatten_into_linear():
    """A conv's output is an NCHW view of channels-last memory (as PyTorch's): the next conv
    reads it as it is, flatten / the linear copy it; all vs torch."""
    w1, tw1 = qw((8, 3, 3, 3), True)
    w2, tw2 = qw((4, 8, 3, 3), False)
    c1, tc1 = nn.quantized.Conv2d(3, 8, 3, padding=1), tnnq.Conv2d(3, 8, 3, padding=1)
    c2, tc2 = nn.quantized.Conv2d(8, 4, 3, stride=2), tnnq.Conv2d(8, 4, 3, stride=2)
    for m, tm, w, tw in ((c1, tc1, w1, tw1), (c2, tc2, w2, tw2)):
        m.set_weight_bias(w, None)
        tm.set_weight_bias(tw, None)
        m.scale, m.zero_point = 0.05, 20
        tm.scale, tm.zero_point = 0.05, 20
    x, tx = qx((2, 3, 9, 9), 0.02, 8)
    y1, ty1 = c1(x), tc1(tx)
    assert_lsb(y1, ty1)
    y2, ty2 = c2(y1), tc2(ty1)
    assert_lsb(y2, ty2)
    lw, tlw = qw((5, 4 * 4 * 4), True)
    lin, tlin = nn.quantized.Linear(64, 5), tnnq.Linear(64, 5)
    lin.set_weight_bias(lw, None)
    tlin.set_weight_bias(tlw, None)
    assert_lsb(lin(y2.flatten(1)), tlin(ty2.flatten(1)))
    assert_lsb(nn.quantized.ReLU()(y2)[:, 1:3], torch.relu(ty2)[:, 1:3], max_frac=0)
