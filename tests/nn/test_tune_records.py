"""nn.tune records: values that round-trip through JSON, targets compared canonically, records
that do not fit the space, nested contexts, resuming a tuner from a log, and the warnings.

The templates below live in this module so that the worker processes can import them by name.
"""
import json
import warnings

import numpy as np
import pytest

import te
from nn import tune
from nn.tune.measure import _Worker

FAST = tune.MeasureOption(timeout=20, number=1, repeat=1)


@tune.template("rec_scale", reference=lambda a, *args: a * 2.0)
def rec_scale(cfg, n):
    """B = A * 2 with a split of n and a vectorize choice (numpy knob values)."""
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    cfg.define_split("tile", B.op.axis[0], num_outputs=2)
    cfg.define_knob("vectorize", np.array([0, 1]))
    _, inner = cfg["tile"].apply(s, B, B.op.axis[0])
    if cfg["vectorize"].val:
        s[B].vectorize(inner)
    return s, [A, B]


@tune.template("rec_candidates", reference=lambda a, *args: a + 1.0)
def rec_candidates(cfg, n):
    """B = A + 1 with candidate splits given as numpy integers."""
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    cfg.define_split("tile", B.op.axis[0], num_outputs=2,
                     candidate=[np.array([-1, 4]), [np.int64(n // 8), np.int32(8)]])
    cfg["tile"].apply(s, B, B.op.axis[0])
    return s, [A, B]


@tune.template("rec_tuple", reference=lambda a, *args: a + 1.0)
def rec_tuple(cfg, n):
    """A knob whose values are pairs: the template always reads tuples."""
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    cfg.define_knob("tile", [(2, 4), [4, 2]])
    pair = cfg["tile"].val
    assert isinstance(pair, tuple), f"knob value came back as {type(pair).__name__}"
    s[B].split(B.op.axis[0], factor=pair[0])
    return s, [A, B]


def _run(f, n, want):
    a = np.arange(n, dtype="float32")
    b = np.zeros(n, "float32")
    f(a, b)
    np.testing.assert_allclose(b, want(a), rtol=1e-6)


KIND_VALUES = [1, 1.0, True, "1", None, (1, 1.0), (1, True)]


@tune.template("rec_kinds", reference=lambda a, *args: a + 1.0)
def rec_kinds(cfg, n):
    """A knob whose values a record must keep apart: 1, 1.0, True, "1", None and tuples."""
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    cfg.define_knob("k", KIND_VALUES)
    return s, [A, B]


def _write_log(path, task, costs, knobs=None):
    """One error-free trial of ``task`` per (config index, cost); ``knobs`` overrides the
    recorded knobs of the line with that index."""
    with open(path, "a", encoding="utf-8") as f:
        for index, cost in costs.items():
            line = json.loads(tune.encode(tune.MeasureInput(task, task.space.get(index)),
                                          tune.MeasureResult(costs=(cost,))))
            if knobs and index in knobs:
                line["config"]["knobs"] = knobs[index]
            f.write(json.dumps(line) + "\n")


# -- values that round-trip through JSON ---------------------------------------------------------

def test_numpy_arguments_and_knob_values_are_logged(tmp_path):
    log = tmp_path / "np.jsonl"
    task = tune.Task("rec_scale", (np.int64(32),))
    assert task.args == (32,) and type(task.args[0]) is int
    assert [e.val for e in task.space.knobs["vectorize"].entities] == [0, 1]
    assert all(type(e.val) is int for e in task.space.knobs["vectorize"].entities)
    tuner = tune.GridSearchTuner(task)
    tuner.tune(2, measure_option=FAST, callbacks=[tune.log_to_file(log)])
    assert tuner.error_count == 0
    records = tune.load_records(log)
    assert [r.config for r in records] == [task.space.get(0), task.space.get(1)]
    _run(tune.build_best("rec_scale", np.int64(32), log=log), 32, lambda a: a * 2)

    task = tune.Task("rec_candidates", (np.int64(64),))
    assert [e.size for e in task.space.knobs["tile"].entities] == [(-1, 4), (8, 8)]
    log = tmp_path / "cand.jsonl"
    tuner = tune.GridSearchTuner(task)
    tuner.tune(2, measure_option=FAST, callbacks=[tune.log_to_file(log)])
    assert tuner.error_count == 0 and len(tune.load_records(log)) == 2
    _run(tune.build_best("rec_candidates", 64, log=log), 64, lambda a: a + 1)


def test_tuple_knob_values_are_tuples_when_measured_and_applied(tmp_path):
    log = tmp_path / "tuple.jsonl"
    task = tune.Task("rec_tuple", (16,))
    assert [e.val for e in task.space.knobs["tile"].entities] == [(2, 4), (4, 2)]
    tuner = tune.GridSearchTuner(task)
    tuner.tune(2, measure_option=FAST, callbacks=[tune.log_to_file(log)])
    assert tuner.error_count == 0
    records = tune.load_records(log)
    assert [r.config["tile"].val for r in records] == [(2, 4), (4, 2)]
    assert [r.config for r in records] == list(task.space)
    _run(tune.build_best("rec_tuple", 16, log=log), 16, lambda a: a + 1)


def test_knob_values_of_different_types_stay_apart(tmp_path):
    space = tune.ConfigSpace()
    space.define_knob("k", [1, 1.0, True, "1"])
    for index in range(4):
        assert space.index_of(space.get(index)) == index
    # through a record's JSON line and back: equal configs, the same values of the same types
    task = tune.Task("rec_kinds", (8,))
    assert len(task.space) == len(KIND_VALUES)
    log = tmp_path / "kinds.jsonl"
    lines = [tune.encode(tune.MeasureInput(task, task.space.get(index)),
                         tune.MeasureResult(costs=(1e-3,))) for index in range(len(task.space))]
    log.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    for records in ([tune.decode(line) for line in lines], tune.load_records(log)):
        assert len(records) == len(KIND_VALUES)
        for index, (rec, want) in enumerate(zip(records, KIND_VALUES)):
            assert rec.workload == ("rec_kinds", (8,))
            assert rec.config == task.space.get(index)
            assert task.space.index_of(rec.config) == index
            got = rec.config["k"].val
            assert got == want and type(got) is type(want), (got, want)
            if isinstance(want, tuple):
                assert [type(v) for v in got] == [type(v) for v in want], (got, want)


# -- matching records ----------------------------------------------------------------------------

def test_targets_are_compared_canonically(tmp_path):
    log = tmp_path / "haswell.jsonl"
    task = tune.Task("rec_scale", (32,), target="llvm -mcpu=haswell -mattr=+avx2,+fma")
    _write_log(log, task, {3: 1e-3})
    history = tune.apply_history_best(log)
    for spelling in ["llvm -mcpu=haswell -mattr=+avx2,+fma", "llvm -mattr=+fma,+avx2 "
                     "-mcpu=haswell", "llvm  -mcpu=haswell   -mattr=+avx2,+fma"]:
        with te.target.Target(spelling):
            assert history.query("rec_scale", (32,)) == task.space.get(3), spelling
        assert tune.apply_history_best(log, target=spelling).query("rec_scale", (32,)) == \
            task.space.get(3)
    with te.target.Target("llvm -mcpu=znver3"):
        assert history.query("rec_scale", (32,)) is None


def test_records_that_do_not_fit_the_space_are_skipped(tmp_path):
    log = tmp_path / "oos.jsonl"
    task = tune.Task("rec_scale", (32,))
    good = task.space.get(5)
    _write_log(log, task, {0: 1e-6, 1: 2e-6, 2: 3e-6, 3: 4e-6, 5: 1e-3}, knobs={
        0: {"tile": ["split", [2, 16]]},                                   # vectorize missing
        1: {"tile": ["split", [5, 7]], "vectorize": ["choice", 0]},        # 5 * 7 != 32
        2: {"tile": ["split", [2, 16]], "vectorize": ["choice", 7]},       # not a choice
        3: {"tile": ["split", [2, 16]], "vectorize": ["choice", 0],
            "unroll": ["choice", 1]},                                      # an extra knob
    })
    with pytest.warns(UserWarning, match="does not fit the space of template 'rec_scale'") as rec:
        assert tune.apply_history_best(log).query("rec_scale", (32,)) == good
    reasons = "\n".join(str(w.message) for w in rec)
    assert "config has no knob 'vectorize'" in reasons
    assert "tile=[5, 7] is not a choice" in reasons
    assert "vectorize=7 is not a choice" in reasons
    assert "knobs ['unroll'] that this space does not define" in reasons
    with pytest.warns(UserWarning, match="does not fit"):
        f = tune.build_best("rec_scale", 32, log=log)
    _run(f, 32, lambda a: a * 2)


def test_records_with_bad_fields_are_skipped_with_file_and_line(tmp_path):
    log = tmp_path / "bad.jsonl"
    task = tune.Task("rec_scale", (32,))
    _write_log(log, task, {4: 1e-3})
    good = json.loads(log.read_text())
    bad = [dict(good, costs=["fast"]), dict(good, error=5), dict(good, target="gpu"),
           dict(good, build_time="slow"), dict(good, workload="rec_scale"),
           dict(good, config={"index": 1, "knobs": {"tile": ["split", ["a", 4]]}}),
           dict(good, config={"index": 1, "knobs": {"tile": "split"}})]
    with open(log, "a", encoding="utf-8") as f:
        for line in bad:
            f.write(json.dumps(line) + "\n")
    with pytest.warns(UserWarning) as rec:
        records = tune.load_records(log)
    assert len(records) == 1
    messages = [str(w.message) for w in rec]
    assert len(messages) == len(bad)
    for lineno, message in enumerate(messages, 2):
        assert message.startswith(f"{log}:{lineno}: skipping a record that does not parse")
    assert "costs should be a list of run times in seconds, got ['fast']" in messages[0]
    with pytest.warns(UserWarning):
        assert tune.apply_history_best(log).query("rec_scale", (32,)) == task.space.get(4)


# -- nested contexts and resuming --------------------------------------------------------------

def test_nested_context_falls_back_to_the_enclosing_one(tmp_path):
    outer_log, inner_log = tmp_path / "outer.jsonl", tmp_path / "inner.jsonl"
    scale_task, tuple_task = tune.Task("rec_scale", (32,)), tune.Task("rec_tuple", (16,))
    _write_log(outer_log, scale_task, {3: 1e-3})
    _write_log(outer_log, tuple_task, {0: 1e-3})
    _write_log(inner_log, tuple_task, {1: 1e-3})
    with tune.apply_history_best(outer_log):
        with tune.apply_history_best(inner_log) as inner:
            assert inner.query("rec_scale", (32,)) == scale_task.space.get(3)
            assert inner.query("rec_tuple", (16,)) == tuple_task.space.get(1)   # inner wins
            assert inner.targets("rec_scale", (32,)) == ["llvm"]
            with warnings.catch_warnings():
                warnings.simplefilter("error")                # no "no tuned config" warning
                f = tune.build_best("rec_scale", 32)
        assert inner.query("rec_scale", (32,)) is None           # no longer nested
    _run(f, 32, lambda a: a * 2)


@pytest.mark.parametrize("make", [tune.GridSearchTuner, tune.RandomTuner,
                                  lambda task: tune.GATuner(task, pop_size=2, seed=1)],
                         ids=["grid", "random", "ga"])
def test_load_history_resumes_without_measuring_again(tmp_path, make):
    log = tmp_path / "first.jsonl"
    task = tune.Task("rec_scale", (32,))
    first = tune.RandomTuner(task, seed=3)
    first.tune(3, measure_option=FAST, callbacks=[tune.log_to_file(log)])
    _write_log(log, tune.Task("rec_tuple", (16,)), {0: 1e-9})      # another workload: ignored
    tuner = make(task)
    assert tuner.load_history(log) == 3
    assert tuner.visited == first.visited
    assert tuner.best_cost == first.best_cost and tuner.best_config == first.best_config
    assert tuner.trial_count == 0
    second = tmp_path / "second.jsonl"
    tuner.tune(2, measure_option=FAST, callbacks=[tune.log_to_file(second)])
    again = {r.config.index for r in tune.load_records(second)}
    assert len(again) == 2 and not again & first.visited
    assert tuner.best_cost <= first.best_cost
    assert tuner.load_history(tune.load_records(second)) == 2       # a list of records too


def test_load_history_skips_records_that_do_not_fit(tmp_path):
    """A record whose config is not a point of the task's space is skipped with the warning
    apply_history_best gives; the fitting ones are used, their cost the best so far."""
    log = tmp_path / "mixed.jsonl"
    task = tune.Task("rec_scale", (32,))
    _write_log(log, task, {0: 1e-6, 5: 2e-3, 6: 1e-3},
               knobs={0: {"tile": ["split", [5, 7]], "vectorize": ["choice", 0]}})
    tuner = tune.GridSearchTuner(task)
    with pytest.warns(UserWarning, match=r"GridSearchTuner\.load_history: skipping the record "
                      r"of rec_scale\(32,\) .*does not fit the space of template 'rec_scale' "
                      r"\(tile=\[5, 7\] is not a choice"):
        assert tuner.load_history(log) == 2
    assert tuner.visited == {5, 6}
    assert tuner.best_cost == 1e-3 and tuner.best_config == task.space.get(6)


# -- resources and warnings ------------------------------------------------------------------

def test_closing_a_worker_closes_its_log_file():
    worker = _Worker()
    log, text = worker.log, worker.log_text()
    worker.close()
    assert log.closed
    assert worker.log_text() == text          # still there to quote when a worker died


def test_warnings_point_at_the_callers_line(tmp_path):
    log = tmp_path / "oos.jsonl"
    task = tune.Task("rec_scale", (32,))
    _write_log(log, task, {0: 1e-6, 5: 1e-3}, knobs={0: {"tile": ["split", [5, 7]],
                                                          "vectorize": ["choice", 0]}})
    with open(log, "a", encoding="utf-8") as f:
        f.write("{not json\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tune.build_best("rec_scale", 32, log=log)
        tune.build_best("rec_scale", 16, log=log)                  # no record: the default
        with tune.apply_history_best(log):
            rec_scale(16)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 6, messages
    assert sum("skipping a record that does not parse" in m for m in messages) == 3
    assert sum("does not fit the space" in m for m in messages) == 1
    assert sum("no tuned config for rec_scale(16,)" in m for m in messages) == 2
    assert {w.filename for w in caught} == {__file__}
