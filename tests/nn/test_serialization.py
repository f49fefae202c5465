"""nn.save / nn.load: round trips of state dicts and nested checkpoints (every dtype, 0-d and
empty tensors, exact floats, OrderedDict kept), file objects, a format that loads without
pickle, atomic replacement of the old file when a save fails midway, map_location, and a
trained module's state restored through a file."""
import collections
import io
import math
import os
import pickle

import numpy as np
import pytest

import nn
from nn import serialization
from nn.serialization import load, save

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]


def checkpoint():
    """A checkpoint with a bit of everything a training script saves."""
    rng = np.random.default_rng(0)
    tensors = collections.OrderedDict(
        (f"t.{d}", nn.from_numpy((rng.random((2, 3)) * 100).astype(d))) for d in DTYPES)
    tensors["zero_d"] = nn.tensor(3.5)
    tensors["empty"] = nn.zeros(0, 4)
    tensors["strided"] = nn.from_numpy(np.arange(24.0).reshape(4, 6)[::2, 1::3])
    return {"model": tensors, "epoch": 7, "big": 2 ** 70, "lr": 0.1, "inf": -math.inf,
            "neg_zero": -0.0, "name": "run-é", "flags": [True, False, None],
            "betas": (0.9, 0.999), "optimizer": {"state": {0: {"step": nn.tensor(3.0)}},
                                                 "param_groups": [{"params": [0, 1]}]},
            ("a", 1): "tuple key", "array": np.arange(5, dtype=np.int16),
            "scalar": np.float32(2.25)}


def assert_same(loaded, saved):
    assert type(loaded) is type(saved), (type(loaded), type(saved))
    if isinstance(saved, nn.Tensor):
        assert loaded.dtype == saved.dtype and loaded.shape == saved.shape
        assert not loaded.requires_grad and type(loaded) is nn.Tensor
        np.testing.assert_array_equal(loaded.numpy(), saved.detach().numpy())
    elif isinstance(saved, np.ndarray):
        assert loaded.dtype == saved.dtype
        np.testing.assert_array_equal(loaded, saved)
    elif isinstance(saved, dict):
        assert list(loaded) == list(saved)
        for key in saved:
            assert_same(loaded[key], saved[key])
    elif isinstance(saved, (list, tuple)):
        assert len(loaded) == len(saved)
        for a, b in zip(loaded, saved):
            assert_same(a, b)
    elif isinstance(saved, float):
        assert math.copysign(1, loaded) == math.copysign(1, saved) and loaded == saved
    else:
        assert loaded == saved and type(loaded) is type(saved)


def test_round_trip_through_a_path(tmp_path):
    saved = checkpoint()
    save(saved, tmp_path / "ck.tw")
    assert_same(load(tmp_path / "ck.tw"), saved)
    assert_same(load(str(tmp_path / "ck.tw"), map_location="cpu", weights_only=True), saved)
    assert os.listdir(tmp_path) == ["ck.tw"]                 # no temporary file left


def test_round_trip_through_a_file_object():
    buffer = io.BytesIO()
    saved = checkpoint()
    save(saved, buffer)
    buffer.seek(0)
    assert_same(load(buffer), saved)


def test_state_dict_restores_a_module(tmp_path):
    nn.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    net[0].weight.grad = nn.ones(4, 3)
    save({"model": net.state_dict(), "epoch": 1}, tmp_path / "net.tw")
    state = load(tmp_path / "net.tw")["model"]
    assert type(state) is collections.OrderedDict and list(state) == list(net.state_dict())
    fresh = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    fresh.load_state_dict(state)
    x = nn.randn(5, 3)
    np.testing.assert_array_equal(fresh(x).detach().numpy(), net(x).detach().numpy())


def test_parameters_save_as_plain_tensors_and_sharing_is_kept(tmp_path):
    weight = nn.Parameter(nn.ones(2, 2))
    save({"w": weight, "same": [weight]}, tmp_path / "p.tw")
    out = load(tmp_path / "p.tw")
    assert type(out["w"]) is nn.Tensor and not out["w"].requires_grad
    assert out["same"][0] is out["w"]
    save([nn.zeros(0), nn.zeros(0)], tmp_path / "e.tw")         # two empty tensors stay two
    first, second = load(tmp_path / "e.tw")
    assert first is not second


def test_loading_never_unpickles(tmp_path, monkeypatch):
    save(checkpoint(), tmp_path / "ck.tw")
    head = (tmp_path / "ck.tw").read_bytes()[:8]
    assert head == b"TWCKPT01" and not head.startswith(b"\x80")  # not a pickle stream

    def refuse(*args, **kwargs):
        raise AssertionError("nn.load must not unpickle")

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, refuse)
    assert load(tmp_path / "ck.tw")["epoch"] == 7


def test_failed_save_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "ck.tw"
    save({"epoch": 1, "w": nn.ones(3)}, path)
    before = path.read_bytes()
    real_write = serialization._write

    def crash_midway(obj, stream):
        real_write(obj, stream)
        stream.flush()
        raise OSError("disk full")          # after part of the new file reached the disk

    monkeypatch.setattr(serialization, "_write", crash_midway)
    with pytest.raises(OSError, match="disk full"):
        save({"epoch": 2, "w": nn.zeros(1000)}, path)
    assert path.read_bytes() == before and load(path)["epoch"] == 1
    assert os.listdir(tmp_path) == ["ck.tw"]

    def crash_in_fsync(fd):
        raise OSError("I/O error")

    monkeypatch.setattr(serialization, "_write", real_write)
    monkeypatch.setattr(os, "fsync", crash_in_fsync)
    with pytest.raises(OSError, match="I/O error"):
        save({"epoch": 3}, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ck.tw"]


def test_map_location_dict_and_device():
    buffer = io.BytesIO()
    save({"w": nn.ones(2)}, buffer)
    for where in ("cpu", nn.device("cpu"), {"cpu": "cpu"}):
        buffer.seek(0)
        assert load(buffer, map_location=where)["w"].device == "cpu"
    buffer.seek(0)
    moved = load(buffer, map_location="cuda")["w"]          # numba's simulator in the tests
    assert moved.is_cuda and moved.cpu().tolist() == [1.0, 1.0]
    gpu = io.BytesIO()
    save({"w": moved}, gpu)
    gpu.seek(0)
    assert load(gpu)["w"].is_cuda                            # back where it was saved from
    gpu.seek(0)
    back = load(gpu, map_location={"cuda": "cpu"})["w"]
    assert back.device == "cpu" and back.tolist() == [1.0, 1.0]
