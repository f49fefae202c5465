"""nn.ops.host misuses: unknown operators and families, malformed records."""
from __future__ import annotations

import json

import pytest

from nn.ops import host
from te.runtime.cache_dir import get_cache_dir, set_cache_dir


def test_unknown_operator_is_named():
    with pytest.raises(ValueError, match="unknown operator 'gemm'"):
        host.knobs("gemm")


def test_unknown_family_is_named():
    with pytest.raises(ValueError, match="unknown family 'zen9'"):
        with host.use("zen9"):
            pass


@pytest.mark.parametrize("record, message", [
    ({"knobs": {"matmul": {"rows": 0}}}, "knobs.matmul.rows must be a positive integer"),
    ({"knobs": {"matmul": {"rows": True}}}, "knobs.matmul.rows"),
    ({"knobs": {"conv3d": {"x": 1}}}, "unknown operator 'conv3d'"),
    ({"tiles": {}}, "a 'knobs' object"),
])
def test_malformed_records_are_refused(record, message):
    with pytest.raises(ValueError, match=message):
        host._check_record(record, "rec.json")


def test_a_broken_user_record_is_skipped_with_a_warning(tmp_path):
    old = get_cache_dir()
    set_cache_dir(str(tmp_path))
    try:
        path = host.user_records_path(host.detect())
        (tmp_path / "host").mkdir(exist_ok=True)     # detect() may have written its FMA probe
        with open(path, "w") as f:
            json.dump({"knobs": {"matmul": {"rows": -3}}}, f)
        with pytest.warns(UserWarning, match="ignoring the records"):
            assert host.user_records(host.detect()) is None
    finally:
        set_cache_dir(old)
        host.clear()


def test_unknown_family_in_the_environment_is_named(monkeypatch):
    monkeypatch.setenv("TW_HOST_FAMILY", "zen9")
    host.clear()
    try:
        with pytest.raises(ValueError, match="TW_HOST_FAMILY='zen9': unknown family"):
            host.all_knobs()
    finally:
        monkeypatch.delenv("TW_HOST_FAMILY")
        host.clear()
