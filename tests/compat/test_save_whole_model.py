"""nn.save(model) / nn.load(weights_only=False): a whole module saved as class references plus
state, rebuilt only from trusted classes (nn's own and the add_safe_globals allow-list),
never running code that the file names; the rebuilt model computes what the original does."""
import io
import json
import struct

import numpy as np
import pytest

import nn
from nn.serialization import UnsafeCheckpointError


class TinyNet(nn.Module):
    def __init__(self, hidden=5, act=nn.functional.relu):
        super().__init__()
        self.fc1 = nn.Linear(3, hidden)
        self.norm = nn.BatchNorm1d(hidden)
        self.fc2 = nn.Linear(hidden, 2)
        self.act = act
        self.scale = 0.5
        self.tags = ("tiny", 1)
        self.register_buffer("steps", nn.zeros(1))

    def forward(self, x):
        return self.fc2(self.act(self.norm(self.fc1(x)))) * self.scale + self.steps


class Evil(nn.Module):
    def __init__(self):
        raise AssertionError("a load must never run a class's __init__")


def _roundtrip(obj, **load_kwargs):
    buffer = io.BytesIO()
    nn.save(obj, buffer)
    buffer.seek(0)
    return nn.load(buffer, **load_kwargs)


@pytest.fixture(autouse=True)
def clean_allow_list():
    nn.serialization.clear_safe_globals()
    yield
    nn.serialization.clear_safe_globals()


def test_whole_model_roundtrip_with_allow_list():
    nn.manual_seed(0)
    model = TinyNet()
    model.eval()
    x = nn.randn(4, 3)
    expected = model(x).detach().numpy()
    with pytest.raises(UnsafeCheckpointError, match="weights_only=True loads data only"):
        _roundtrip(model)
    with pytest.raises(UnsafeCheckpointError, match="TinyNet, which is not on the allow-list"):
        _roundtrip(model, weights_only=False)
    nn.serialization.add_safe_globals([TinyNet])
    loaded = _roundtrip(model, weights_only=False)
    assert type(loaded) is TinyNet and loaded is not model and not loaded.training
    assert loaded.act is nn.functional.relu and loaded.scale == 0.5 and loaded.tags == ("tiny", 1)
    assert list(loaded.state_dict()) == list(model.state_dict())
    assert all(p.requires_grad for p in loaded.parameters())
    np.testing.assert_array_equal(loaded(x).detach().numpy(), expected)
    loaded.train()
    (loaded(x) ** 2).sum().backward()
    assert loaded.fc1.weight.grad is not None


def test_checkpoint_dict_with_a_model_and_nn_classes_trusted():
    seq = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten())
    loaded = _roundtrip({"model": seq, "epoch": 3}, weights_only=False)
    assert loaded["epoch"] == 3 and isinstance(loaded["model"], nn.Sequential)
    x = nn.randn(1, 1, 5, 5)
    np.testing.assert_array_equal(loaded["model"](x).detach().numpy(), seq(x).detach().numpy())
    with nn.serialization.safe_globals([TinyNet]):
        assert TinyNet in nn.serialization.get_safe_globals()
    assert TinyNet not in nn.serialization.get_safe_globals()


def test_file_naming_other_code_is_refused_before_anything_runs():
    nn.serialization.add_safe_globals([TinyNet])
    buffer = io.BytesIO()
    nn.save(TinyNet(), buffer)
    raw = bytearray(buffer.getvalue())
    magic, size, _ = struct.unpack("<8sQI", raw[:20])
    header = json.loads(raw[20:20 + size])
    header["object"]["class"] = f"{__name__}:Evil"          # a class the user did not allow
    forged = json.dumps(header, separators=(",", ":")).encode()
    import zlib
    data = struct.pack("<8sQI", magic, len(forged), zlib.crc32(forged)) + forged + \
        bytes(raw[20 + size:])
    with pytest.raises(UnsafeCheckpointError, match="Evil, which is not on the allow-list"):
        nn.load(io.BytesIO(data), weights_only=False)
    header["object"]["class"] = "os:system"                  # not even a module class
    forged = json.dumps(header, separators=(",", ":")).encode()
    data = struct.pack("<8sQI", magic, len(forged), zlib.crc32(forged)) + forged + \
        bytes(raw[20 + size:])
    with pytest.raises(UnsafeCheckpointError, match="os:system"):
        nn.load(io.BytesIO(data), weights_only=False)
    nn.serialization.add_safe_globals([Evil])
    header["object"]["class"] = f"{__name__}:Evil"
    forged = json.dumps(header, separators=(",", ":")).encode()
    data = struct.pack("<8sQI", magic, len(forged), zlib.crc32(forged)) + forged + \
        bytes(raw[20 + size:])
    loaded = nn.load(io.BytesIO(data), weights_only=False)   # allowed: rebuilt, __init__ not run
    assert type(loaded) is Evil


def test_unsaveable_modules_are_named():
    def local():
        class Local(nn.Module):
            def forward(self, x):
                return x
        return Local()
    with pytest.raises(TypeError, match="defined inside a function"):
        nn.save(local(), io.BytesIO())
    m = TinyNet(act=lambda x: x)
    with pytest.raises(TypeError, match=r"checkpoint\.act.*lambda"):
        nn.save(m, io.BytesIO())
    m = TinyNet()
    m.register_forward_hook(lambda *a: None)
    with pytest.raises(TypeError, match="forward_hooks registered"):
        nn.save(m, io.BytesIO())
