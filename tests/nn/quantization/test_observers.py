"""Observers and QConfigs vs torch.ao.quantization: the same data gives bit-identical
``(scale, zero_point)`` (values and dtypes), ``min_val`` / ``max_val`` and histograms."""
import warnings

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import nn
from nn import quantization as nq

TORCH_DTYPES = {"quint8": torch.quint8, "qint8": torch.qint8}
TORCH_SCHEMES = {nn.per_tensor_affine: torch.per_tensor_affine,
                 nn.per_tensor_symmetric: torch.per_tensor_symmetric,
                 nn.per_channel_affine: torch.per_channel_affine,
                 nn.per_channel_symmetric: torch.per_channel_symmetric}
PER_CHANNEL = {nn.per_tensor_affine: nn.per_channel_affine,
               nn.per_tensor_symmetric: nn.per_channel_symmetric}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # reduce_range's deprecation warning
        yield


def torch_kwargs(kwargs):
    out = dict(kwargs)
    if "dtype" in out:
        out["dtype"] = TORCH_DTYPES[str(out["dtype"])]
    if "qscheme" in out:
        out["qscheme"] = TORCH_SCHEMES[out["qscheme"]]
    return out


def batches(seed, n=3, shape=(4, 3, 5, 5), relu=False):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        x = rng.standard_normal(shape) * rng.uniform(0.1, 10) + rng.uniform(-3, 3)
        out.append(np.maximum(x, 0).astype(np.float32) if relu else x.astype(np.float32))
    return out


def observe(ours, theirs, data):
    for x in data:
        assert ours(nn.tensor(x)) is not None
        theirs(torch.from_numpy(x))


def assert_same_qparams(ours, theirs):
    s1, z1 = ours.calculate_qparams()
    s2, z2 = theirs.calculate_qparams()
    np.testing.assert_array_equal(s1.numpy(), s2.numpy())
    np.testing.assert_array_equal(z1.numpy(), z2.numpy())
    assert s1.dtype == str(s2.dtype).split(".")[-1]
    assert z1.dtype == str(z2.dtype).split(".")[-1]


CONFIGS = [dict(dtype=nn.quint8, qscheme=nn.per_tensor_affine, reduce_range=False),
           dict(dtype=nn.quint8, qscheme=nn.per_tensor_affine, reduce_range=True),
           dict(dtype=nn.qint8, qscheme=nn.per_tensor_symmetric, reduce_range=False),
           dict(dtype=nn.qint8, qscheme=nn.per_tensor_affine, reduce_range=True),
           dict(dtype=nn.quint8, qscheme=nn.per_tensor_symmetric, reduce_range=False),
           dict(quant_min=0, quant_max=127),
           dict(quant_min=0, quant_max=255, reduce_range=True),
           dict(quant_min=0, quant_max=200, qscheme=nn.per_tensor_symmetric)]


@pytest.mark.parametrize("kwargs", CONFIGS)
@pytest.mark.parametrize("name", ["MinMaxObserver", "MovingAverageMinMaxObserver"])
def test_per_tensor_observers_match_torch(name, kwargs):
    for seed in range(3):
        extra = {"averaging_constant": 0.1} if name.startswith("Moving") else {}
        ours = getattr(nq, name)(**kwargs, **extra)
        theirs = getattr(tq, name)(**torch_kwargs(kwargs), **extra)
        observe(ours, theirs, batches(seed))
        np.testing.assert_array_equal(ours.min_val.numpy(), theirs.min_val.numpy())
        np.testing.assert_array_equal(ours.max_val.numpy(), theirs.max_val.numpy())
        assert (ours.quant_min, ours.quant_max) == (theirs.quant_min, theirs.quant_max)
        assert_same_qparams(ours, theirs)


@pytest.mark.parametrize("kwargs", CONFIGS[:5])
@pytest.mark.parametrize("name", ["PerChannelMinMaxObserver",
                                  "MovingAveragePerChannelMinMaxObserver"])
@pytest.mark.parametrize("ch_axis", [0, 1])
def test_per_channel_observers_match_torch(name, kwargs, ch_axis):
    kwargs = dict(kwargs, qscheme=PER_CHANNEL[kwargs["qscheme"]], ch_axis=ch_axis)
    ours, theirs = getattr(nq, name)(**kwargs), getattr(tq, name)(**torch_kwargs(kwargs))
    observe(ours, theirs, batches(ch_axis + 7))
    np.testing.assert_array_equal(ours.min_val.numpy(), theirs.min_val.numpy())
    np.testing.assert_array_equal(ours.max_val.numpy(), theirs.max_val.numpy())
    assert_same_qparams(ours, theirs)


@pytest.mark.parametrize("kwargs", CONFIGS[:4] + CONFIGS[5:6])
@pytest.mark.parametrize("kind", ["normal", "relu", "growing", "constant_first"])
def test_histogram_observer_matches_torch(kwargs, kind):
    rng = np.random.default_rng(sum(map(ord, kind)))
    data = []
    for b in range(4):
        x = (rng.standard_normal(3000) * rng.uniform(0.05, 20) + rng.uniform(-2, 2))
        if kind == "relu":
            x = np.maximum(x, 0)
        if kind == "growing":
            x = rng.exponential(1.0, 3000) * (b + 1)
        if kind == "constant_first" and b == 0:
            x = np.full(3000, 0.5)
        data.append(x.astype(np.float32))
    ours = nq.HistogramObserver(**kwargs)
    theirs = tq.HistogramObserver(**torch_kwargs(kwargs))
    observe(ours, theirs, data)
    np.testing.assert_array_equal(ours.histogram.numpy(), theirs.histogram.numpy())
    np.testing.assert_array_equal(ours.min_val.numpy(), theirs.min_val.numpy())
    np.testing.assert_array_equal(ours.max_val.numpy(), theirs.max_val.numpy())
    assert_same_qparams(ours, theirs)


def test_unobserved_gives_default_qparams_as_torch():
    for ours, theirs in [(nq.MinMaxObserver(), tq.MinMaxObserver()),
                         (nq.HistogramObserver(), tq.HistogramObserver()),
                         (nq.PerChannelMinMaxObserver(), tq.PerChannelMinMaxObserver())]:
        s1, z1 = ours.calculate_qparams()
        s2, z2 = theirs.calculate_qparams()
        assert s1.tolist() == s2.tolist() and z1.tolist() == z2.tolist()


def test_observer_passes_input_through_and_ignores_empty():
    obs = nq.MinMaxObserver()
    x = nn.tensor(np.array([1.0, -2.0], np.float32))
    assert obs(x) is x
    obs(nn.tensor(np.zeros((0,), np.float32)))
    assert obs.min_val.item() == -2.0 and obs.max_val.item() == 1.0
    obs.reset_min_max_vals()
    assert obs.min_val.item() == np.inf


def test_state_dict_keys_match_torch():
    for name in ["MinMaxObserver", "PerChannelMinMaxObserver", "HistogramObserver"]:
        ours, theirs = getattr(nq, name)(), getattr(tq, name)()
        assert list(ours.state_dict()) == list(theirs.state_dict())
    ours, theirs = nq.FakeQuantize(), tq.FakeQuantize()
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())


def test_per_channel_state_dict_round_trip():
    obs = nq.PerChannelMinMaxObserver(dtype=nn.qint8, qscheme=nn.per_channel_symmetric)
    obs(nn.tensor(np.arange(12, dtype=np.float32).reshape(3, 4) - 5))
    fresh = nq.PerChannelMinMaxObserver(dtype=nn.qint8, qscheme=nn.per_channel_symmetric)
    fresh.load_state_dict(obs.state_dict())
    np.testing.assert_array_equal(fresh.calculate_qparams()[0].numpy(),
                                  obs.calculate_qparams()[0].numpy())


def test_with_args_and_attributes():
    make = nq.MinMaxObserver.with_args(dtype=nn.qint8).with_args(
        qscheme=nn.per_tensor_symmetric)
    a, b = make(), make()
    assert a is not b and a.dtype == nn.qint8 and a.qscheme is nn.per_tensor_symmetric
    assert (a.quant_min, a.quant_max, a.reduce_range) == (-128, 127, False)


@pytest.mark.parametrize("backend", ["x86", "fbgemm", "qnnpack", "onednn"])
def test_default_qconfigs_as_torch(backend):
    for ours_q, theirs_q in [(nq.get_default_qconfig(backend), tq.get_default_qconfig(backend)),
                             (nq.get_default_qat_qconfig(backend),
                              tq.get_default_qat_qconfig(backend)),
                             (nq.get_default_qat_qconfig(backend, 0),
                              tq.get_default_qat_qconfig(backend, 0))]:
        for role in ("activation", "weight"):
            ours, theirs = getattr(ours_q, role)(), getattr(theirs_q, role)()
            assert type(ours).__name__ == type(theirs).__name__
            assert str(ours.dtype) == str(theirs.dtype).split(".")[-1]
            assert repr(ours.qscheme).split(".")[-1] == str(theirs.qscheme).split(".")[-1]
            assert (ours.quant_min, ours.quant_max) == (theirs.quant_min, theirs.quant_max)
            inner = getattr(ours, "activation_post_process", ours)
            inner_t = getattr(theirs, "activation_post_process", theirs)
            assert type(inner).__name__ == type(inner_t).__name__
            assert inner.reduce_range == inner_t.reduce_range
    for ours_q, theirs_q in [(nq.default_qconfig, tq.default_qconfig),
                             (nq.default_qat_qconfig, tq.default_qat_qconfig)]:
        a, w = ours_q.activation(), ours_q.weight()
        assert (a.quant_min, a.quant_max) == (theirs_q.activation().quant_min,
                                              theirs_q.activation().quant_max)
        assert str(w.dtype) == str(theirs_q.weight().dtype).split(".")[-1]


def test_observer_state_dict_saves_a_calibration():
    model = nn.Sequential(nq.QuantStub(), nn.Conv2d(2, 3, 3), nn.Linear(4, 2),
                          nq.DeQuantStub()).eval()
    model.qconfig = nq.get_default_qconfig("x86")
    prepared = nq.prepare(model)
    prepared(nn.tensor(batches(0, 1, (2, 2, 6, 6))[0]))
    saved = nq.get_observer_state_dict(prepared)
    assert saved and all("activation_post_process" in k for k in saved)
    fresh = nq.prepare(model)
    nq.load_observer_state_dict(fresh, saved)
    for a, b in zip([prepared[0], prepared[1], prepared[2]], [fresh[0], fresh[1], fresh[2]]):
        s1, z1 = a.activation_post_process.calculate_qparams()
        s2, z2 = b.activation_post_process.calculate_qparams()
        assert s1.tolist() == s2.tolist() and z1.tolist() == z2.tolist()
    with pytest.raises(Exception, match="Missing keys for observer"):
        nq.load_observer_state_dict(fresh, {})


def test_histogram_observer_ignores_inf_as_torch():
    x = np.array([1.0, -2.0, np.inf, 0.5, -np.inf, 3.0], np.float32)
    ours, theirs = nq.HistogramObserver(), tq.HistogramObserver()
    observe(ours, theirs, [x, x * 2])
    np.testing.assert_array_equal(ours.histogram.numpy(), theirs.histogram.numpy())
    assert_same_qparams(ours, theirs)


@pytest.mark.parametrize("name", ["default_histogram_observer",
                                  "weight_observer_range_neg_127_to_127",
                                  "per_channel_weight_observer_range_neg_127_to_127",
                                  "default_histogram_fake_quant",
                                  "fused_wt_fake_quant_range_neg_127_to_127",
                                  "fused_per_channel_wt_fake_quant_range_neg_127_to_127",
                                  "default_symmetric_fixed_qparams_fake_quant",
                                  "default_affine_fixed_qparams_observer"])
def test_more_defaults_match_torch(name):
    ours, theirs = getattr(nq, name)(), getattr(tq, name)()
    assert type(ours).__name__ == type(theirs).__name__
    assert (ours.quant_min, ours.quant_max) == (theirs.quant_min, theirs.quant_max)
    x = batches(3, 1, (4, 6))[0]
    observe(ours, theirs, [x, x * 3])
    if hasattr(theirs, "eps"):
        assert ours.eps.tolist() == theirs.eps.tolist()
    assert_same_qparams(ours, theirs)


def test_qconfig_equals_as_torch():
    assert nq.qconfig_equals(nq.get_default_qconfig("x86"), nq.get_default_qconfig("fbgemm"))
    assert tq.qconfig_equals(tq.get_default_qconfig("x86"), tq.get_default_qconfig("fbgemm"))
    assert not nq.qconfig_equals(nq.get_default_qconfig("x86"),
                                 nq.get_default_qconfig("qnnpack"))
    assert nq.qconfig_equals(nq.get_default_qat_qconfig(), nq.get_default_qat_qconfig())
    assert nq.qconfig_equals(None, None) and not nq.qconfig_equals(nq.default_qconfig, None)


def test_float32_sum_order_as_torch():
    from nn.quantization.histogram import torch_sum
    rng = np.random.default_rng(0)
    for n in (2048, 5000, 100, 65, 17):
        for _ in range(5):
            a = (rng.standard_normal(n) * 10 ** rng.uniform(-3, 6)).astype(np.float32)
            assert torch_sum(a) == torch.from_numpy(a).sum().item()


def test_histogram_observer_on_a_large_calibration_matches_torch():
    """1.2M values: the bins' counts become fractional (upscaled histograms) beyond float32's
    exact integers, so the total and the error sums depend on PyTorch's summation order."""
    rng = np.random.default_rng(99)
    ours, theirs = nq.HistogramObserver(reduce_range=True), tq.HistogramObserver(
        reduce_range=True)
    for _ in range(2):          # the second draw of the generator is the case that needs it
        data = []
        for _ in range(6):
            x = rng.standard_normal(200000) * rng.uniform(0.1, 5) + rng.uniform(-1, 1)
            data.append(np.maximum(x, 0).astype(np.float32))
    observe(ours, theirs, data)
    np.testing.assert_array_equal(ours.histogram.numpy(), theirs.histogram.numpy())
    assert_same_qparams(ours, theirs)
