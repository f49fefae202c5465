"""Fake quantization vs torch: forward values, the straight-through gradient (zero outside
the clamp range), and the FakeQuantize modules' observed scale / zero point."""
import warnings

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import nn
from nn import quantization as nq
from nn.functions import base


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def values(seed, shape=(3, 4, 5)):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    x.reshape(-1)[:6] = [0.25, -0.25, 0.75, 10.0, -10.0, 0.0]     # ties and clamps
    return x


@pytest.mark.parametrize("scale,zp,qmin,qmax", [(0.05, 0, -128, 127), (0.1, 3, 0, 127),
                                                (0.05, 128, 0, 255), (0.1, -2, -64, 63)])
def test_per_tensor_forward_backward_match_torch(scale, zp, qmin, qmax):
    x = values(0)
    g = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)
    xt = torch.from_numpy(x).requires_grad_()
    yt = torch.fake_quantize_per_tensor_affine(xt, scale, zp, qmin, qmax)
    yt.backward(torch.from_numpy(g))
    xn = nn.tensor(x, requires_grad=True)
    before = base.kernel_calls["fake_quantize_kernel"]
    y = nq.fake_quantize_per_tensor_affine(xn, scale, zp, qmin, qmax)
    assert base.kernel_calls["fake_quantize_kernel"] == before + 1
    y.backward(nn.tensor(g))
    np.testing.assert_array_equal(y.detach().numpy(), yt.detach().numpy())
    np.testing.assert_array_equal(xn.grad.numpy(), xt.grad.numpy())
    assert (xn.grad.numpy() == 0).any()         # some values were clamped


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_per_channel_forward_backward_match_torch(axis):
    x = values(2)
    c = x.shape[axis]
    rng = np.random.default_rng(axis)
    scale = rng.uniform(0.05, 0.5, c).astype(np.float32)
    zp = rng.integers(-5, 5, c).astype(np.int32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    xt = torch.from_numpy(x).requires_grad_()
    yt = torch.fake_quantize_per_channel_affine(xt, torch.from_numpy(scale),
                                                torch.from_numpy(zp), axis, -20, 20)
    yt.backward(torch.from_numpy(g))
    xn = nn.tensor(x, requires_grad=True)
    y = nq.fake_quantize_per_channel_affine(xn, nn.tensor(scale), nn.tensor(zp), axis, -20, 20)
    y.backward(nn.tensor(g))
    np.testing.assert_array_equal(y.detach().numpy(), yt.detach().numpy())
    np.testing.assert_array_equal(xn.grad.numpy(), xt.grad.numpy())


@pytest.mark.parametrize("make", ["default_fake_quant", "default_weight_fake_quant",
                                  "default_per_channel_weight_fake_quant",
                                  "default_fused_act_fake_quant", "default_fused_wt_fake_quant",
                                  "default_fused_per_channel_wt_fake_quant"])
def test_fake_quantize_modules_match_torch(make):
    ours, theirs = getattr(nq, make)(), getattr(tq, make)()
    for step in range(3):
        x = values(10 + step) * (step + 1)
        y = ours(nn.tensor(x))
        yt = theirs(torch.from_numpy(x))
        np.testing.assert_array_equal(ours.scale.numpy(), theirs.scale.numpy())
        np.testing.assert_array_equal(ours.zero_point.numpy(), theirs.zero_point.numpy())
        np.testing.assert_array_equal(y.numpy(), yt.detach().numpy())


def test_switches():
    fq = nq.FakeQuantize()
    x = values(3)
    fq.disable_fake_quant()
    np.testing.assert_array_equal(fq(nn.tensor(x)).numpy(), x)     # observed, not rounded
    scale = fq.scale.item()
    assert scale != 1.0
    fq.disable_observer()
    fq.enable_fake_quant()
    fq(nn.tensor(x * 10))
    assert fq.scale.item() == scale
    model = nn.Sequential(nq.FakeQuantize(), nn.ReLU())
    model.apply(nq.disable_observer)
    assert model[0].observer_enabled.item() == 0


@pytest.mark.parametrize("make", ["default_fused_act_fake_quant", "default_fused_wt_fake_quant",
                                  "default_fused_per_channel_wt_fake_quant"])
def test_fused_fake_quantize_edge_ranges_match_torch(make):
    """fbgemm's ChooseQuantizationParams: tiny ranges (the 6.1e-5 scale floor), one-signed
    and constant data, symmetric and affine."""
    rng = np.random.default_rng(5)
    cases = [rng.standard_normal((4, 6)) * 1e-6, np.abs(rng.standard_normal((4, 6))) + 0.5,
             -np.abs(rng.standard_normal((4, 6))) * 3, np.full((4, 6), 0.25),
             rng.standard_normal((4, 6)) * 100]
    for x in cases:
        ours, theirs = getattr(nq, make)(), getattr(tq, make)()
        x = x.astype(np.float32)
        y = ours(nn.tensor(x))
        yt = theirs(torch.from_numpy(x))
        np.testing.assert_array_equal(ours.scale.numpy(), theirs.scale.numpy())
        np.testing.assert_array_equal(ours.zero_point.numpy(), theirs.zero_point.numpy())
        np.testing.assert_array_equal(y.numpy(), yt.detach().numpy())


def test_fake_quantize_gradient_flows_to_the_weight_in_qat_linear():
    nn.manual_seed(0)
    lin = nn.Linear(5, 3)
    lin.qconfig = nq.get_default_qat_qconfig("x86")
    qat = nn.qat.Linear.from_float(lin)
    assert qat.weight is lin.weight
    torch_lin = torch.nn.Linear(5, 3)
    torch_lin.weight.data = torch.from_numpy(lin.weight.detach().numpy().copy())
    torch_lin.bias.data = torch.from_numpy(lin.bias.detach().numpy().copy())
    torch_lin.qconfig = tq.get_default_qat_qconfig("x86")
    tqat = torch.ao.nn.qat.Linear.from_float(torch_lin)
    x = values(4, (4, 5))
    y = qat(nn.tensor(x))
    yt = tqat(torch.from_numpy(x))
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-6, atol=1e-6)
    y.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(qat.weight.grad.numpy(), tqat.weight.grad.numpy(), rtol=1e-6,
                               atol=1e-6)


def test_fixed_qparams_fake_quant_and_special_modules_in_qat_as_torch():
    ours = nq.default_fixed_qparams_range_0to1_fake_quant()
    theirs = tq.default_fixed_qparams_range_0to1_fake_quant()
    x = values(6) / 4
    np.testing.assert_array_equal(ours(nn.tensor(x)).numpy(),
                                  theirs(torch.from_numpy(x)).detach().numpy())
    assert ours.scale.tolist() == theirs.scale.tolist()
    tanh = nq.default_fixed_qparams_range_neg1to1_fake_quant()
    assert tanh.zero_point.tolist() == [128] and tanh.scale.item() == 2.0 / 256
    model = nn.Sequential(nq.QuantStub(), nn.Linear(4, 3), nn.Sigmoid(), nn.Tanh(),
                          nq.DeQuantStub()).train()
    tmodel = torch.nn.Sequential(tq.QuantStub(), torch.nn.Linear(4, 3), torch.nn.Sigmoid(),
                                 torch.nn.Tanh(), tq.DeQuantStub()).train()
    for m, lib in ((model, nq), (tmodel, tq)):
        m.qconfig = lib.get_default_qat_qconfig("x86")
        lib.prepare_qat(m, inplace=True)
    for k in ("2", "3"):
        mine = model.get_submodule(k).activation_post_process
        ref = tmodel.get_submodule(k).activation_post_process
        assert type(mine).__name__ == type(ref).__name__ == "FixedQParamsFakeQuantize"
        assert mine.scale.tolist() == ref.scale.tolist()


def test_fake_quantize_and_observers_on_gpu_tensors():
    """On CUDA tensors (numba's simulator in the test suite): the same values and
    straight-through gradients as on the CPU, results on the GPU."""
    x = values(7, (4, 6))
    results = []
    for where in ("cpu", "cuda"):
        xn = nn.tensor(x).to(where).requires_grad_()
        per_tensor = nq.default_fake_quant()
        per_channel = nq.default_per_channel_weight_fake_quant()
        y = per_tensor(xn) + per_channel(xn)
        assert y.device == where
        y.sum().backward()
        obs = nq.HistogramObserver()
        obs(xn)
        results.append((y.detach().cpu().numpy(), xn.grad.cpu().numpy(),
                        obs.calculate_qparams()[0].numpy()))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
