"""nn.tune: config spaces, tuners, isolated measurement, records and apply_history_best.

The templates below live in this module so that the worker processes can import them by name.
Spaces are tiny and trial counts small: the whole file runs in well under a minute on two cores.
"""
import concurrent.futures
import ctypes
import json
import os
import pathlib
import time

import numpy as np
import pytest

import te
from nn import tune

ROOT = pathlib.Path(__file__).resolve().parents[2]
SEEN_CONFIGS = []


@tune.template("test_scale", reference=lambda a, *args: a * 2.0)
def scale(cfg, n):
    """B = A * 2, with a split, a vectorize choice, and a knob that computes A * 3 instead."""
    cfg.define_knob("wrong", [0, 1])
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * (3.0 if cfg["wrong"].val else 2.0), name="B")
    s = te.create_schedule(B.op)
    cfg.define_split("tile", B.op.axis[0], num_outputs=2)
    cfg.define_knob("vectorize", [0, 1])
    _, inner = cfg["tile"].apply(s, B, B.op.axis[0])
    if cfg["vectorize"].val:
        s[B].vectorize(inner)
    SEEN_CONFIGS.append(cfg)
    return s, [A, B]


@tune.template("test_misbehave")
def misbehave(cfg, n):
    """A template whose knob picks a way to fail inside the worker process."""
    cfg.define_knob("mode", ["ok", "raise", "segfault", "exit", "hang"])
    mode = cfg["mode"].val
    if mode == "raise":
        raise ValueError("this knob value is not supported")
    if mode == "segfault":
        ctypes.string_at(0)
    if mode == "exit":
        os._exit(3)
    if mode == "hang":
        time.sleep(600)
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    return te.create_schedule(B.op), [A, B]


@tune.template("test_exp", reference=lambda a, *args: np.exp(a))
def exp_op(cfg, n):
    """B = exp(A): no multiply or add, and no cfg.add_flop (the notebook's own example)."""
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: te.exp(A[i]), name="B")
    s = te.create_schedule(B.op)
    cfg.define_split("tile", B.op.axis[0], num_outputs=2)
    cfg["tile"].apply(s, B, B.op.axis[0])
    return s, [A, B]


@tune.template("test_copy", reference=lambda a, *args: a)
def copy(cfg, n):
    """B = A: no arithmetic at all."""
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i], name="B")
    s = te.create_schedule(B.op)
    cfg.define_knob("unused", [0, 1])
    return s, [A, B]


@tune.template("test_gpu_shift", reference=lambda a, *args: a + 1.0)
def gpu_shift(cfg, n):
    """B = A + 1 with its loop bound to GPU blocks and threads: it builds for cuda only."""
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    cfg.define_split("tile", B.op.axis[0], num_outputs=2)
    bx, tx = cfg["tile"].apply(s, B, B.op.axis[0])
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B]


@tune.template("test_fallback")
def fallback_defaults(cfg, n):
    """An AutoTVM-style template that picks its own defaults when no tuned config is known."""
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    cfg.define_split("tile", B.op.axis[0], num_outputs=2)
    if cfg.is_fallback:
        cfg["tile"] = tune.SplitEntity([-1, 4])
    SEEN_CONFIGS.append((cfg.is_fallback, cfg["tile"].size))
    cfg["tile"].apply(s, B, B.op.axis[0])
    return s, [A, B]


FAST = tune.MeasureOption(timeout=20, number=1, repeat=1)


def _applied():
    """The configs templates were built with since SEEN_CONFIGS was cleared (not the spaces:
    a record is checked against the template's space, which runs the template once more)."""
    return [c for c in SEEN_CONFIGS if not isinstance(c, tune.ConfigSpace)]


def _lines(path):
    return [json.loads(line) for line in pathlib.Path(path).read_text().splitlines()]


# -- spaces ------------------------------------------------------------------------------------

def test_split_policies_enumerate_sizes():
    space = tune.ConfigSpace()
    space.define_split("a", 8, num_outputs=3)
    assert [e.size for e in space.knobs["a"].entities] == [
        (8, 1, 1), (4, 1, 2), (2, 1, 4), (1, 1, 8), (4, 2, 1), (2, 2, 2), (1, 2, 4),
        (2, 4, 1), (1, 4, 2), (1, 8, 1)]
    space.define_split("b", 10, policy="power2", max_factor=4)
    assert [e.size for e in space.knobs["b"].entities] == [(10, 1), (5, 2), (3, 4)]
    space.define_split("c", te.var("n"), candidate=[[-1, 4], [-1, 8]])
    assert [e.size for e in space.knobs["c"].entities] == [(-1, 4), (-1, 8)]
    with pytest.raises(ValueError, match="not a constant"):
        space.define_split("d", te.var("n"))
    with pytest.raises(ValueError, match="defined twice"):
        space.define_knob("a", [1])


def test_space_index_round_trips():
    space = tune.ConfigSpace()
    space.define_split("tile", 12)
    space.define_reorder("order", ["x", "y", "z"])
    space.define_knob("unroll", [0, 1])
    assert len(space) == 6 * 6 * 2
    seen = set()
    for index in range(len(space)):
        config = space.get(index)
        assert config.index == index
        assert space.index_of(config) == index
        assert space.from_knob_indices(space.knob_indices(index)).index == index
        back = tune.ConfigEntity.from_json(json.loads(json.dumps(config.to_json())))
        assert back == config and back.index == index
        seen.add(config)
    assert len(seen) == len(space)
    assert space.knob_indices(1) == (1, 0, 0)            # the first knob varies fastest
    with pytest.raises(IndexError):
        space.get(len(space))
    text = repr(space)
    assert "len=72" in text and "tile: split" in text and "order: reorder" in text
    assert "unroll=1" in repr(space.get(71))


def test_template_space_and_default_call():
    space = scale.space(64)
    assert list(space.knobs) == ["wrong", "tile", "vectorize"] and len(space) == 2 * 7 * 2
    with pytest.warns(UserWarning, match="no tuned config"):
        s, (A, B) = scale(64)
    f = te.build(s, [A, B])
    a = np.arange(64, dtype="float32")
    b = np.empty_like(a)
    f(a, b)
    np.testing.assert_allclose(b, a * 2)


# -- tuning and records --------------------------------------------------------------------------

def test_random_tuner_writes_one_record_per_trial(tmp_path):
    log = tmp_path / "scale.jsonl"
    task = tune.Task("test_scale", (64,))
    tuner = tune.RandomTuner(task, seed=1)
    tuner.tune(5, measure_option=FAST, callbacks=[tune.log_to_file(log)])
    records = _lines(log)
    assert len(records) == 5 == tuner.trial_count
    assert len({json.dumps(r["config"]) for r in records}) == 5           # no repeats
    for rec in records:
        assert rec["workload"] == ["test_scale", [64]] and rec["target"] == "llvm"
        assert set(rec) >= {"config", "costs", "error", "build_time", "timestamp"}
        wrong = rec["config"]["knobs"]["wrong"][1]
        assert (rec["error_kind"] == "wrong_result") == bool(wrong), rec
        assert bool(rec["costs"]) != bool(wrong)
    assert tuner.best_config is not None and tuner.best_config["wrong"].val == 0


def test_grid_search_stops_when_the_space_is_exhausted(capsys):
    task = tune.Task("test_scale", (2,))
    assert len(task.space) == 8
    tuner = tune.GridSearchTuner(task)
    tuner.tune(20, measure_option=FAST, callbacks=[tune.progress_bar(use_tqdm=False)])
    assert tuner.trial_count == 8 and tuner.error_count == 4
    assert sorted(tuner.visited) == list(range(8))
    out = capsys.readouterr().out
    assert "test_scale: 8/20 trials, best " in out and "4 errors (done)" in out


def test_crash_hang_and_exception_cost_one_trial_each(tmp_path):
    log = tmp_path / "misbehave.jsonl"
    task = tune.Task("test_misbehave", (16,))
    tuner = tune.GridSearchTuner(task)
    option = tune.MeasureOption(timeout=3, number=1, repeat=1)
    tuner.tune(10, measure_option=option, callbacks=[tune.log_to_file(log)])
    by_mode = {r["config"]["knobs"]["mode"][1]: r for r in _lines(log)}
    assert list(by_mode) == ["ok", "raise", "segfault", "exit", "hang"]
    assert by_mode["ok"]["error"] is None and by_mode["ok"]["costs"]
    assert by_mode["raise"]["error_kind"] == "build"
    assert "this knob value is not supported" in by_mode["raise"]["error"]
    assert by_mode["segfault"]["error_kind"] == "crash"
    assert "SIGSEGV" in by_mode["segfault"]["error"]
    assert by_mode["exit"]["error_kind"] == "crash" and "exit status 3" in by_mode["exit"]["error"]
    assert by_mode["hang"]["error_kind"] == "timeout"
    assert tuner.error_count == 4 and tuner.best_config["mode"].val == "ok"


def test_apply_history_best_picks_the_fastest_config():
    space = scale.space(64)
    costs = {3: 5e-3, 8: 1e-3, 12: 2e-3}
    records = [tune.TuningRecord(("test_scale", (64,)), "llvm", space.get(i),
                                 tune.MeasureResult(costs=(c, c)))
               for i, c in costs.items()]
    # failed trials never count, however they were timed
    records += [tune.TuningRecord(("test_scale", (64,)), "llvm", space.get(i),
                                  tune.MeasureResult(costs=(1e-6,), error="wrong"))
                for i in (9, 20)]
    with tune.apply_history_best(records) as context:
        assert context.query("test_scale", [64]) == space.get(8)
        assert context.query("test_scale", (32,)) is None
        SEEN_CONFIGS.clear()
        scale(64)
        assert SEEN_CONFIGS == [space.get(8)]
    assert tune.apply_history_best(records, target="cuda").best == {}


def test_tuned_gemm_matches_numpy_and_log_best_is_used(tmp_path):
    log = tmp_path / "gemm.jsonl"
    task = tune.Task("gemm", (32, 32, 32))
    tuner = tune.GATuner(task, pop_size=3, seed=0)
    tuner.tune(6, measure_option=FAST, callbacks=[tune.log_to_file(log)])
    records = _lines(log)
    assert len(records) == 6 and tuner.generation == 2
    ok = [r for r in records if r["error"] is None]
    fastest = min(ok, key=lambda r: sum(r["costs"]) / len(r["costs"]))
    best = tune.apply_history_best(str(log)).query("gemm", (32, 32, 32))
    assert best.to_json() == fastest["config"] == tuner.best_config.to_json()
    f = tune.build_best("gemm", 32, 32, 32, log=log)
    rng = np.random.default_rng(0)
    a = rng.random((32, 32), dtype=np.float32)
    b = rng.random((32, 32), dtype=np.float32)
    c = np.empty((32, 32), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


class InlineExecutor(concurrent.futures.Executor):
    """Runs each call at once in the calling thread; counts the calls."""

    def __init__(self):
        self.calls = 0

    def submit(self, fn, *args, **kwargs):
        self.calls += 1
        future = concurrent.futures.Future()
        future.set_result(fn(*args, **kwargs))
        return future


def test_custom_executors_run_the_candidates():
    task = tune.Task("test_scale", (64,))
    inline = InlineExecutor()
    option = tune.MeasureOption(timeout=20, number=1, repeat=1, executor=inline, n_parallel=2)
    tuner = tune.RandomTuner(task, seed=0)
    tuner.tune(4, measure_option=option)
    assert inline.calls == 4 == tuner.trial_count
    # a process pool: candidates and their results cross a pickle boundary
    with concurrent.futures.ProcessPoolExecutor(1) as pool:
        option = tune.MeasureOption(timeout=20, number=1, repeat=1, executor=pool)
        tuner = tune.GridSearchTuner(task)
        tuner.tune(2, measure_option=option)
    assert tuner.trial_count == 2 and tuner.best_config is not None


MAIN_SOURCE = """
def shift(cfg, n):
    cfg.define_split("tile", n)
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    cfg["tile"].apply(s, B, B.op.axis[0])
    return s, [A, B]
"""


def test_template_defined_in_main_travels_by_value(monkeypatch):
    namespace = {"__name__": "__main__", "te": te}          # as in a notebook cell
    exec(MAIN_SOURCE, namespace)                            # noqa: S102
    tmpl = tune.template("test_from_main", reference=lambda a, *args: a + 1)(namespace["shift"])
    task = tune.Task(tmpl, (32,))
    if tune.measure.cloudpickle is not None:
        tuner = tune.RandomTuner(task, seed=0)
        tuner.tune(2, measure_option=FAST)
        assert tuner.trial_count == 2 and tuner.error_count == 0
    monkeypatch.setattr(tune.measure, "cloudpickle", None)
    with pytest.raises(RuntimeError, match="cloudpickle"):
        tune.RandomTuner(task).tune(1, measure_option=FAST)


def test_tutorial_notebook_runs(monkeypatch):
    import nbformat
    import nbclient
    path = ROOT / "tutorials" / "08_tuning.ipynb"
    notebook = nbformat.read(path, as_version=4)
    monkeypatch.setenv("TW_TUTORIAL_SMALL", "1")
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}}).execute()
    text = "\n".join(out.get("text", "") for cell in notebook.cells
                     for out in cell.get("outputs", []))
    assert "GFLOP/s" in text and "for " in text


# -- targets of the records ----------------------------------------------------------------------

def _write_log(path, task, costs):
    """A log with one error-free trial of ``task`` per (config index, cost)."""
    with open(path, "a", encoding="utf-8") as f:
        for index, cost in costs.items():
            inp = tune.MeasureInput(task, task.space.get(index))
            f.write(tune.encode(inp, tune.MeasureResult(costs=(cost,))) + "\n")


def test_build_best_takes_the_target_of_the_records(tmp_path, recwarn):
    log = tmp_path / "gpu.jsonl"
    task = tune.Task("test_gpu_shift", (64,), target="cuda")
    _write_log(log, task, {1: 3e-3, 4: 1e-3})
    f = tune.build_best("test_gpu_shift", 64, log=log)            # no target=: the records' one
    assert not [w for w in recwarn if "no tuned config" in str(w.message)]
    a = np.arange(64, dtype="float32")
    b = np.zeros(64, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a + 1)
    assert type(f).__module__.startswith("codegen_cuda")
    # asked for another target: the warning says which targets the records do hold
    with pytest.warns(UserWarning, match="for target 'llvm', but the records hold configs for "
                                         "target 'cuda'.*pass target='cuda'"):
        with pytest.raises(RuntimeError, match="bound to blockIdx.x"):      # a CodegenError
            tune.build_best("test_gpu_shift", 64, log=log, target="llvm")


def test_records_for_several_targets_need_target(tmp_path):
    log = tmp_path / "two.jsonl"
    _write_log(log, tune.Task("test_scale", (64,)), {2: 1e-3})
    _write_log(log, tune.Task("test_scale", (64,), target="cuda"), {5: 1e-3})
    message = r"configs of test_scale\(64,\) for targets \['cuda', 'llvm'\]"
    with pytest.raises(ValueError, match=message + ".*pass target="):
        tune.build_best("test_scale", 64, log=log)
    history = tune.apply_history_best(str(log))
    assert history.targets("test_scale", (64,)) == ["cuda", "llvm"]
    with pytest.raises(ValueError, match=message + ".*te.target.Target"):
        history.query("test_scale", (64,))
    space = scale.space(64)
    assert history.query("test_scale", (64,), target="cuda") == space.get(5)
    with te.target.Target("llvm"):
        assert history.query("test_scale", (64,)) == space.get(2)
    assert tune.apply_history_best(str(log), target="llvm").query("test_scale", (64,)) == \
        space.get(2)
    SEEN_CONFIGS.clear()
    f = tune.build_best("test_scale", 64, log=log, target="llvm")
    assert _applied() == [space.get(2)]
    a = np.arange(64, dtype="float32")
    b = np.empty_like(a)
    f(a, b)
    np.testing.assert_allclose(b, a * 2)


# -- FLOP counts and fallback configs ------------------------------------------------------------

def test_flop_is_counted_when_the_template_gives_none():
    assert tune.Task("test_exp", (64,)).flop == 64                # one exp per element
    assert tune.Task("test_scale", (64,)).flop == 64              # one multiply per element
    assert tune.Task("test_copy", (64,)).flop == 0
    assert tune.Task("gemm", (8, 16, 4)).flop == 2 * 8 * 16 * 4   # cfg.add_flop wins
    A = te.placeholder((8, 4), name="A")
    B = te.placeholder((4, 16), name="B")
    k = te.reduce_axis((0, 4), name="k")
    C = te.compute((8, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((8, 16), lambda i, j: te.if_then_else(C[i, j] > 0.0, te.sqrt(C[i, j]),
                                                         te.const(0.0)), name="D")
    # C: a multiply and an add per reduction point; D: a compare and the costlier branch
    assert tune.flop.count_flop([A, B, D]) == 2 * 8 * 16 * 4 + 8 * 16 * 2


def test_tuning_a_template_without_multiply_reports_flops(capsys):
    tuner = tune.RandomTuner(tune.Task("test_exp", (64,)), seed=0)
    tuner.tune(2, measure_option=FAST, callbacks=[tune.progress_bar(use_tqdm=False)])
    assert tuner.best_flops > 0 and "GFLOP/s" in capsys.readouterr().out
    tuner = tune.GridSearchTuner(tune.Task("test_copy", (64,)))
    tuner.tune(1, measure_option=FAST, callbacks=[tune.progress_bar(use_tqdm=False)])
    assert tuner.best_flops == 0.0 and tuner.best_cost < float("inf")
    out = capsys.readouterr().out
    assert " ms (no FLOP counted: cfg.add_flop(n) in the template gives GFLOP/s)" in out


def test_is_fallback_marks_the_default_config(tmp_path):
    SEEN_CONFIGS.clear()
    space = fallback_defaults.space(16)
    assert SEEN_CONFIGS == [(False, space.get(0)["tile"].size)]   # defining is not a fallback
    SEEN_CONFIGS.clear()
    with pytest.warns(UserWarning, match="no tuned config for test_fallback"):
        s, args = fallback_defaults(16)
    assert SEEN_CONFIGS[-1] == (True, (-1, 4))                    # the template's own default
    f = te.build(s, args)
    a = np.arange(16, dtype="float32")
    b = np.empty_like(a)
    f(a, b)
    np.testing.assert_allclose(b, a * 2)
    log = tmp_path / "fallback.jsonl"
    _write_log(log, tune.Task("test_fallback", (16,)), {2: 1e-3})
    SEEN_CONFIGS.clear()
    with tune.apply_history_best(str(log)) as history:
        history.query("test_fallback", (16,))          # checks the record against the space
        SEEN_CONFIGS.clear()
        fallback_defaults(16)
    assert SEEN_CONFIGS == [(False, space.get(2)["tile"].size)]
