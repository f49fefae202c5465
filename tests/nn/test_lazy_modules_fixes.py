"""Lazy modules against PyTorch's: a lazy batch norm's running statistics are
``UninitializedBuffer``s, so ``load_state_dict`` checks (and materializes) them like any
other tensor and stays all or nothing; lazy convolutions draw nothing when built;
ConvTranspose3d lives with the other transposed convolutions."""
import numpy as np
import pytest
import torch

import nn
from nn.modules import conv_transpose

rng = np.random.default_rng(0)


def _values(module):
    """Every initialized tensor of ``module``'s state_dict, copied; the uninitialized ones
    by their type."""
    out = {}
    for key, value in module.state_dict(keep_vars=True).items():
        if isinstance(value, (nn.UninitializedParameter, nn.UninitializedBuffer)):
            out[key] = type(value)
        else:
            out[key] = value.detach().numpy().copy()
    return out


def _assert_same(before, after):
    assert list(before) == list(after)
    for key, value in before.items():
        if isinstance(value, type):
            assert after[key] is value, key
        else:
            np.testing.assert_array_equal(after[key], value, err_msg=key)


def _bn_state(num_features):
    """A trained-looking batch norm state_dict, as ours and as torch's tensors."""
    values = {"weight": rng.standard_normal(num_features).astype("float32"),
              "bias": rng.standard_normal(num_features).astype("float32"),
              "running_mean": rng.standard_normal(num_features).astype("float32"),
              "running_var": rng.uniform(0.5, 2.0, num_features).astype("float32"),
              "num_batches_tracked": np.array(7, "int64")}
    return ({k: nn.tensor(v) for k, v in values.items()},
            {k: torch.tensor(v) for k, v in values.items()})


def test_lazy_batch_norm_statistics_are_uninitialized_buffers():
    bn = nn.LazyBatchNorm1d()
    assert isinstance(bn.running_mean, nn.UninitializedBuffer)
    assert isinstance(bn.running_var, nn.UninitializedBuffer)
    assert repr(bn.running_mean) == "<UninitializedBuffer>"
    assert bn.has_uninitialized_params()
    assert repr(bn) == repr(torch.nn.LazyBatchNorm1d())
    assert list(bn.state_dict()) == list(torch.nn.LazyBatchNorm1d().state_dict())
    with pytest.raises(RuntimeError, match="Call the module's forward once"):
        bn.running_mean.shape
    # no statistics tracked: plain None buffers, as torch's
    plain = nn.LazyBatchNorm1d(track_running_stats=False)
    assert plain.running_mean is None and plain.num_batches_tracked is None


@pytest.mark.parametrize("assign", [False, True])
def test_failed_load_with_a_lazy_batch_norm_changes_nothing(assign):
    nn.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 2), nn.LazyBatchNorm1d())
    before = _values(model)
    partial = {"0.weight": nn.full((2, 2), 5.0), "0.bias": nn.full((2,), 5.0)}
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "1.weight"'):
        model.load_state_dict(partial, assign=assign)
    _assert_same(before, _values(model))
    # a shape mismatch elsewhere leaves the lazy batch norm uninitialized too
    state, _ = _bn_state(3)
    full = dict(partial, **{"1." + k: v for k, v in state.items()})
    full["0.bias"] = nn.zeros(3)
    with pytest.raises(RuntimeError, match="size mismatch for 0.bias"):
        model.load_state_dict(full, assign=assign)
    _assert_same(before, _values(model))
    assert isinstance(model[1].running_var, nn.UninitializedBuffer)


@pytest.mark.parametrize("lazy, eager, shape", [
    (nn.LazyBatchNorm1d, torch.nn.LazyBatchNorm1d, (4, 3)),
    (nn.LazyBatchNorm1d, torch.nn.LazyBatchNorm1d, (4, 3, 5)),
    (nn.LazyBatchNorm2d, torch.nn.LazyBatchNorm2d, (2, 3, 2, 2))])
def test_loaded_lazy_batch_norm_matches_torch(lazy, eager, shape):
    ours_state, torch_state = _bn_state(shape[1])
    ours, ref = lazy(), eager()
    assert ours.load_state_dict(ours_state) is not None
    ref.load_state_dict(torch_state)
    assert not ours.has_uninitialized_params()
    x = rng.standard_normal(shape).astype("float32")
    ours.eval(), ref.eval()
    np.testing.assert_allclose(ours(nn.tensor(x)).detach().numpy(),
                               ref(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    assert ours.num_features == shape[1]
    # training: the batch statistics, and the loaded running ones updated alike
    ours.train(), ref.train()
    np.testing.assert_allclose(ours(nn.tensor(x)).detach().numpy(),
                               ref(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    for name in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(getattr(ours, name).detach().numpy(),
                                   getattr(ref, name).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_lazy_batch_norm_partial_load_keeps_the_loaded_values():
    state, _ = _bn_state(3)
    bn = nn.LazyBatchNorm1d()
    result = bn.load_state_dict({"weight": state["weight"]}, strict=False)
    assert result.missing_keys == ["bias", "running_mean", "running_var", "num_batches_tracked"]
    assert isinstance(bn.running_mean, nn.UninitializedBuffer)
    bn(nn.ones(2, 3))
    np.testing.assert_array_equal(bn.weight.detach().numpy(), state["weight"].numpy())
    np.testing.assert_array_equal(bn.bias.detach().numpy(), np.zeros(3, "float32"))
    assert type(bn) is nn.BatchNorm1d and bn.num_features == 3


@pytest.mark.parametrize("make", [lambda: nn.LazyConv1d(4, 3), lambda: nn.LazyConv2d(4, 3),
                                  lambda: nn.LazyConv3d(4, 2, groups=2),
                                  lambda: nn.LazyBatchNorm2d(), lambda: nn.LazyLinear(3)])
def test_building_a_lazy_module_draws_nothing(make):
    nn.manual_seed(0)
    expected = nn.randn(3).numpy()
    nn.manual_seed(0)
    module = make()
    np.testing.assert_array_equal(nn.randn(3).numpy(), expected)
    assert module.has_uninitialized_params()


def test_lazy_conv_still_checks_its_arguments():
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.LazyConv2d(3, 2, groups=2)
    conv = nn.LazyConv2d(4, 3, groups=2)
    assert conv.in_channels == 0 and repr(conv) == repr(torch.nn.LazyConv2d(4, 3, groups=2))


def test_conv_transpose3d_lives_with_its_twins():
    assert nn.ConvTranspose3d is conv_transpose.ConvTranspose3d
    assert nn.modules.ConvTranspose3d is conv_transpose.ConvTranspose3d
    assert "ConvTranspose3d" in nn.modules.__all__
    m = nn.ConvTranspose3d(2, 3, 2, stride=2)
    assert m(nn.randn(1, 2, 2, 2, 2)).shape == (1, 3, 4, 4, 4)
