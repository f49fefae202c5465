"""Dropout family: the kept fraction and scaling, channel-wise masks, alpha dropout's mean and
variance, reproducibility under nn.manual_seed, train/eval switch, gradient = mask, in place."""
import numpy as np
import pytest

import nn
from nn import functional as F


def test_dropout_keeps_and_scales():
    nn.manual_seed(0)
    x = nn.ones(200, 301, requires_grad=True)
    y = F.dropout(x, 0.3)
    values = y.detach().numpy()
    assert abs((values == 0).mean() - 0.3) < 0.01
    np.testing.assert_allclose(np.unique(values), [0.0, 1 / 0.7], rtol=1e-6)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), values)        # the gradient is the mask
    assert y.grad_fn.name() == "NativeDropoutBackward0"


def test_reproducible_and_gradcheck():
    x = nn.tensor(np.random.default_rng(1).standard_normal((3, 5)), requires_grad=True)
    nn.manual_seed(3)
    first = F.dropout(x, 0.5).detach().numpy()
    nn.manual_seed(3)
    np.testing.assert_array_equal(F.dropout(x, 0.5).detach().numpy(), first)

    def fn(x):
        nn.manual_seed(4)
        return F.alpha_dropout(x, 0.4, True)
    assert nn.autograd.gradcheck(fn, (x,))


def test_alpha_dropout_keeps_mean_and_variance():
    nn.manual_seed(1)
    out = F.alpha_dropout(nn.randn(400, 500), 0.3, True).numpy()
    assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02
    feat = F.feature_alpha_dropout(nn.randn(64, 32, 50), 0.3, True).numpy()
    assert abs(feat.mean()) < 0.05 and abs(feat.std() - 1) < 0.05


@pytest.mark.parametrize("fn,shape", [(F.dropout1d, (6, 8, 5)), (F.dropout1d, (8, 5)),
                                      (F.dropout2d, (6, 8, 3, 3))])
def test_channel_dropout_zeroes_whole_channels(fn, shape):
    out = fn(nn.ones(*shape), 0.5).numpy()
    per_channel = out.reshape(-1, shape[-1] if len(shape) < 4 else 9)
    assert np.all(per_channel.std(-1) == 0)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}


def test_identity_when_not_training_and_edge_probabilities():
    x = nn.randn(4, 5)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.alpha_dropout(x, 0.5) is x                          # training=False by default
    assert F.dropout(x, 0.0) is x
    assert np.all(F.dropout(x, 1.0).numpy() == 0)
    layer = nn.Dropout(0.5)
    layer.eval()
    assert layer(x) is x
    layer.train()
    assert np.any(layer(nn.ones(50, 50)).numpy() == 0)


def test_inplace_and_modules():
    x = nn.ones(40, 40)
    out = F.dropout(x, 0.5, inplace=True)
    assert out is x and np.any(x.numpy() == 0)
    for cls in ("Dropout", "Dropout1d", "Dropout2d", "AlphaDropout", "FeatureAlphaDropout"):
        assert repr(getattr(nn, cls)(0.25)) == f"{cls}(p=0.25, inplace=False)"
