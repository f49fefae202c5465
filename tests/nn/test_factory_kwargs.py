"""torch's factory keywords on every parameterized module: ``device=`` places parameters and
buffers there, ``dtype=`` makes the floating ones that dtype (int buffers stay int64), and the
initial values are those of the CPU / float32 construction under the same seed."""
import numpy as np
import pytest

import nn

BUILDERS = {
    "Linear": lambda **k: nn.Linear(3, 2, **k),
    "Bilinear": lambda **k: nn.Bilinear(2, 3, 2, **k),
    "Conv1d": lambda **k: nn.Conv1d(2, 3, 2, **k),
    "Conv2d": lambda **k: nn.Conv2d(2, 3, 2, **k),
    "ConvTranspose1d": lambda **k: nn.ConvTranspose1d(2, 3, 2, **k),
    "ConvTranspose2d": lambda **k: nn.ConvTranspose2d(2, 3, 2, **k),
    "Embedding": lambda **k: nn.Embedding(5, 3, padding_idx=0, **k),
    "EmbeddingBag": lambda **k: nn.EmbeddingBag(5, 3, **k),
    "BatchNorm1d": lambda **k: nn.BatchNorm1d(3, **k),
    "BatchNorm2d": lambda **k: nn.BatchNorm2d(3, **k),
    "BatchNorm3d": lambda **k: nn.BatchNorm3d(3, **k),
    "LayerNorm": lambda **k: nn.LayerNorm(3, **k),
    "GroupNorm": lambda **k: nn.GroupNorm(1, 3, **k),
    "InstanceNorm1d": lambda **k: nn.InstanceNorm1d(3, affine=True, track_running_stats=True,
                                                    **k),
    "InstanceNorm2d": lambda **k: nn.InstanceNorm2d(3, affine=True, track_running_stats=True,
                                                    **k),
    "InstanceNorm3d": lambda **k: nn.InstanceNorm3d(3, affine=True, track_running_stats=True,
                                                    **k),
    "RMSNorm": lambda **k: nn.RMSNorm(3, **k),
    "PReLU": lambda **k: nn.PReLU(3, **k),
    "MultiheadAttention": lambda **k: nn.MultiheadAttention(4, 2, **k),
    "RNN": lambda **k: nn.RNN(2, 3, **k),
    "LSTM": lambda **k: nn.LSTM(2, 3, **k),
    "GRU": lambda **k: nn.GRU(2, 3, **k),
    "RNNCell": lambda **k: nn.RNNCell(2, 3, **k),
    "LSTMCell": lambda **k: nn.LSTMCell(2, 3, **k),
    "GRUCell": lambda **k: nn.GRUCell(2, 3, **k),
    "TransformerEncoderLayer": lambda **k: nn.TransformerEncoderLayer(4, 2, 6, **k),
    "TransformerDecoderLayer": lambda **k: nn.TransformerDecoderLayer(4, 2, 6, **k),
    "Transformer": lambda **k: nn.Transformer(4, 2, 1, 1, 6, **k),
}


def _state(module):
    return list(module.named_parameters()) + [(n, b) for n, b in module.named_buffers()
                                              if b is not None]


def _values(module):
    return {n: np.asarray(t.detach().cpu().numpy()) for n, t in _state(module)}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_device_kwarg_places_everything_and_keeps_init(name):
    nn.manual_seed(0)
    reference = _values(BUILDERS[name]())
    nn.manual_seed(0)
    module = BUILDERS[name](device="cuda")
    state = _state(module)
    assert state
    for n, t in state:
        assert t.device.type == "cuda", (name, n, t.device)
    got = _values(module)
    assert got.keys() == reference.keys()
    for n in reference:
        np.testing.assert_array_equal(got[n], reference[n], err_msg=f"{name}.{n}")


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_dtype_kwarg(name):
    nn.manual_seed(0)
    reference = _values(BUILDERS[name]())
    nn.manual_seed(0)
    module = BUILDERS[name](dtype=nn.float64)
    for n, t in _state(module):
        assert t.device.type == "cpu"
        if n.endswith("num_batches_tracked"):
            assert t.dtype == nn.int64
        else:
            assert t.dtype == nn.float64, (name, n, t.dtype)
    # the same draws, kept to float64 instead of rounded to float32
    for n, v in _values(module).items():
        np.testing.assert_allclose(v.astype("float32"), reference[n], rtol=1e-6, atol=1e-7,
                                   err_msg=f"{name}.{n}")


def test_positional_arguments_follow_torch():
    bn = nn.BatchNorm2d(3, 1e-3, 0.2, True, True, "cpu", nn.float64)
    assert bn.weight.dtype == nn.float64 and bn.eps == 1e-3
    gn = nn.GroupNorm(1, 3, 1e-5, True, "cpu", nn.float64)
    assert gn.weight.dtype == nn.float64
    pr = nn.PReLU(2, 0.1, "cpu", nn.float64)
    assert pr.weight.dtype == nn.float64


def test_bad_device_is_refused():
    with pytest.raises((ValueError, RuntimeError)):
        nn.Conv2d(1, 1, 1, device="tpu")
