"""nn.ops.host: the host description, the shipped records per CPU family, the model's knobs,
user records overriding shipped ones, and every family's knobs giving numpy's results."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from nn.ops import cpu, host
from nn.ops.cpu_conv import conv2d_nchw, default_tile as conv_tile, packed_tile
from nn.ops.cpu_matmul import default_tile as matmul_tile, tile_knobs
from nn.tune import host as tune_host
from te.runtime.cache_dir import get_cache_dir, set_cache_dir

FAMILIES = ("zen3", "zen4", "sapphire_rapids", "generic_avx2")


@pytest.fixture
def cache_dir(tmp_path):
    old = get_cache_dir()
    set_cache_dir(str(tmp_path))
    host.clear()
    yield tmp_path
    set_cache_dir(old)
    host.clear()


def _fits(knobs, regs):
    """The register tiles of ``knobs`` fit ``regs`` vector registers."""
    mm = knobs["matmul"]
    win = knobs["winograd"]
    return (mm["rows"] * mm["vectors"] + mm["vectors"] + 1 <= regs
            and win["rows"] * win["vectors"] + win["vectors"] + 1 <= regs
            and knobs["conv2d"]["accumulators"] <= regs - 2
            and knobs["conv2d_packed"]["accumulators"] <= regs - 2)


@pytest.mark.parametrize("family", FAMILIES)
def test_shipped_records_cover_the_families(family):
    rec = host.shipped_records(family)
    assert rec is not None and rec["family"] == family
    assert set(rec["knobs"]) == set(host.OPS)
    # measured: zen4 (the dev machine), sapphire_rapids (a session's Sapphire Rapids VM)
    assert rec["derived"] is (family not in ("zen4", "sapphire_rapids"))
    with host.use(family):
        k = host.all_knobs()
        assert all(src in ("shipped", "derived") for src in k["sources"].values())
        assert _fits(k, host.FAMILIES[family].vector_registers)


def test_model_choices_per_family():
    got = {f: host.model_knobs(host.FAMILIES[f]) for f in FAMILIES}
    # Zen 4 (512-bit FMAs double pumped: 4 in flight): the measured 8 x 32 tile
    assert (got["zen4"]["matmul"]["rows"], got["zen4"]["matmul"]["vectors"]) == (8, 2)
    assert got["zen4"]["reduce"]["partials"] == 4 and got["zen4"]["matmul"]["l2_block"] == 0
    # two 512-bit FMA ports: twice the accumulators, as many as 32 registers hold
    assert got["sapphire_rapids"]["matmul"]["rows"] == 14
    assert got["sapphire_rapids"]["matmul"]["l2_block"] == 1
    # AVX2: 16 registers of 256 bits: the 6 x 16 tile of BLIS's Haswell kernel
    for f in ("zen3", "generic_avx2"):
        assert got[f]["vector_bits"] == 256
        assert (got[f]["matmul"]["rows"], got[f]["matmul"]["vectors"]) == (6, 2)
        assert got[f]["conv2d"]["accumulators"] == 8
    for f in FAMILIES:
        assert _fits(got[f], host.FAMILIES[f].vector_registers)


def test_family_of_cpu_names():
    assert host.family_of("znver3", ("avx2", "fma")) == "zen3"
    assert host.family_of("znver4", ("avx512",)) == "zen4"
    assert host.family_of("emeraldrapids", ("avx512", "amx")) == "sapphire_rapids"
    assert host.family_of("alderlake", ("avx2", "fma")) == "generic_avx2"
    assert host.family_of("icelake-server", ("avx2", "fma", "avx512")) == "generic_avx512"
    assert host.family_of("x86-64", ()) == "generic"
    # a Sapphire Rapids VM whose CPU model LLVM names "rocketlake": AMX decides
    assert host.family_of("rocketlake", ("avx2", "fma", "avx512", "amx")) == "sapphire_rapids"


def test_forced_families_change_the_tiles():
    with host.use("sapphire_rapids"):
        assert tile_knobs()[0][0] == 14 and matmul_tile(1400, 512)[1] == (14, 32)
    with host.use("zen3"):
        rows, bn, lanes = tile_knobs()
        assert (rows[0], bn, lanes) == (6, 16, 8)
        assert conv_tile(64, 56, 56, 64)[0] * 64 // lanes <= 8
        assert packed_tile(64, 56, lanes)[0] * packed_tile(64, 56, lanes)[1] <= 8
    with host.use("zen4"):
        assert matmul_tile(1000, 1100) == ("packed", (8, 32))


def test_detect_describes_this_host():
    h = host.detect()
    assert h.vector_bits in (128, 256, 512) and h.vector_registers in (16, 32)
    assert 1.0 <= h.fma_in_flight <= 24.0
    assert h.l1d > 0 and h.l2 >= h.l1d and h.family == host.family_of(h.cpu, h.isa)


def test_fma_measurement_is_cached_on_disk(cache_dir, monkeypatch):
    calls = []
    monkeypatch.setattr(host, "measure_fma_in_flight",
                        lambda bits: calls.append(bits) or 5.0)
    assert host._measured_in_flight("testcpu", 256) == 5.0
    assert host._measured_in_flight("testcpu", 256) == 5.0
    assert calls == [256]
    assert os.path.exists(cache_dir / "host" / "fma-testcpu-256.json")


def test_fma_microbenchmark_is_sane():
    value = host.measure_fma_in_flight(host.detect().vector_bits, reps=2, iterations=1 << 16)
    assert 1.0 <= value <= 24.0


def test_user_records_override_shipped(cache_dir):
    h = host.detect()
    path = host.user_records_path(h)
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        json.dump({"user": True, "knobs": {"matmul": {"rows": 5, "vectors": 2}}}, f)
    host.clear()
    k = host.all_knobs()
    assert k["matmul"]["rows"] == 5 and k["sources"]["matmul"] == "user"
    assert k["sources"]["reduce"] != "user"
    assert tile_knobs()[0][0] == 5
    a = np.random.default_rng(0).standard_normal((23, 19), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((19, 41), dtype=np.float32)
    np.testing.assert_allclose(cpu.build(cpu.matmul, [a.shape, b.shape])(a, b), a @ b,
                               rtol=1e-4, atol=1e-4)


def _conv_ref(x, w, pad, groups=1):
    return tune_host._conv_ref(x, w, groups) if pad == 1 else None


@pytest.mark.parametrize("family", FAMILIES)
def test_each_familys_knobs_compute_numpys_results(family):
    rng = np.random.default_rng(3)

    def arr(*shape):
        return rng.standard_normal(shape, dtype=np.float32)
    a, b, w = arr(45, 37), arr(37, 70), arr(70, 37)
    ba, bb = arr(3, 20, 9), arr(3, 9, 17)
    x, k = arr(2, 20, 9, 11), arr(18, 20, 3, 3)
    xs, ks = arr(1, 3, 10, 13), arr(8, 3, 3, 3)
    r = arr(7, 300)
    with host.use(family):
        tol = dict(rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(cpu.build(cpu.matmul, [a.shape, b.shape])(a, b), a @ b, **tol)
        np.testing.assert_allclose(cpu.build(cpu.dense, [a.shape, w.shape])(a, w), a @ w.T, **tol)
        np.testing.assert_allclose(cpu.build(cpu.batch_matmul, [ba.shape, bb.shape])(ba, bb),
                                   ba @ bb, **tol)
        for xx, kk, alg in ((x, k, "direct"), (x, k, "winograd"), (xs, ks, None)):
            got = cpu.build(conv2d_nchw, [xx.shape, kk.shape], padding=1, algorithm=alg)(xx, kk)
            np.testing.assert_allclose(got, tune_host._conv_ref(xx, kk), rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(cpu.build(cpu.sum, [r.shape], axis=-1)(r), r.sum(-1), **tol)
        e = np.exp(r - r.max(-1, keepdims=True))
        np.testing.assert_allclose(cpu.build(cpu.softmax, [r.shape], axis=-1)(r),
                                   e / e.sum(-1, keepdims=True), **tol)


def test_tuner_writes_a_record_the_defaults_read(cache_dir):
    h = host.detect()
    for op in host.OPS:
        for c in tune_host.candidates(op, host.model_knobs(h), h):
            knobs = dict(host.model_knobs(h), **{op: dict(host.model_knobs(h)[op], **c)})
            assert _fits(knobs, h.vector_registers), (op, c)
    assert tune_host.main(["--ops", "reduce", "--small", "--reps", "1"]) == 0
    rec = host.user_records(h)
    assert rec["user"] and set(rec["knobs"]) == {"reduce"}
    assert host.all_knobs()["sources"]["reduce"] == "user"
    assert host.all_knobs()["reduce"] == rec["knobs"]["reduce"]


def test_the_environment_forces_a_family(monkeypatch):
    monkeypatch.setenv("TW_HOST_FAMILY", "sapphire_rapids")
    host.clear()
    try:
        assert host.all_knobs()["matmul"]["rows"] == 14
        assert host.all_knobs()["sources"]["matmul"] == "shipped"     # measured on one
    finally:
        monkeypatch.delenv("TW_HOST_FAMILY")
        host.clear()
    assert host.all_knobs()["matmul"]["rows"] == host.model_knobs(host.detect())["matmul"][
        "rows"] or host.all_knobs()["sources"]["matmul"] != "model"
