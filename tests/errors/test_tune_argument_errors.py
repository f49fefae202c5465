"""Misuse of nn.tune's options, tasks and tuners: each bad argument is refused when it is given,
before any trial runs, by an error naming the argument, the value and what is allowed."""
import concurrent.futures
import importlib
import re

import pytest

from nn import tune


@pytest.fixture(scope="module")
def task():
    return tune.Task("gemm", (8, 8, 8))


@pytest.mark.parametrize("kwargs,error,message", [
    ({"timeout": -1}, ValueError, "timeout must be a finite number > 0 (seconds for build + run"
                                  " of one candidate), got -1"),
    ({"timeout": 0}, ValueError, "timeout must be a finite number > 0"),
    ({"timeout": float("inf")}, ValueError, "timeout must be a finite number > 0"),
    ({"timeout": "10"}, TypeError, "timeout must be a finite number > 0"),
    ({"number": 0}, ValueError, "number must be an integer >= 1 (runs per timing), got 0"),
    ({"number": 2.5}, TypeError, "number must be an integer >= 1"),
    ({"repeat": 0}, ValueError, "repeat must be an integer >= 1 (timings per candidate), got 0"),
    ({"min_repeat_ms": -5}, ValueError, "min_repeat_ms must be a finite number >= 0, got -5"),
    ({"n_parallel": 0}, ValueError, "n_parallel must be an integer >= 1 (candidates measured "
                                    "at once), got 0"),
    ({"n_parallel": True}, TypeError, "n_parallel must be an integer >= 1"),
    ({"executor": 4}, TypeError, "executor must be a concurrent.futures.Executor"),
    ({"check_correctness": "yes"}, TypeError, "check_correctness must be True or False, got "
                                              "'yes'"),
    ({"rtol": "x"}, TypeError, "rtol must be a finite number >= 0, got 'x'"),
    ({"atol": -1e-5}, ValueError, "atol must be a finite number >= 0, got -1e-05"),
    ({"seed": -1}, ValueError, "seed must be an integer >= 0 or None, got -1"),
], ids=lambda x: "-".join(f"{k}={v}" for k, v in x.items()) if isinstance(x, dict) else "")
def test_measure_option_refuses_bad_values(kwargs, error, message):
    with pytest.raises(error, match=re.escape("MeasureOption: " + message)):
        tune.MeasureOption(**kwargs)


def test_measure_option_accepts_the_edges():
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        opt = tune.MeasureOption(timeout=0.5, number=1, repeat=1, min_repeat_ms=0,
                                 n_parallel=1, executor=pool, rtol=0, atol=0, seed=None)
    assert (opt.timeout, opt.number, opt.repeat, opt.min_repeat_ms, opt.n_parallel,
            opt.executor, opt.rtol, opt.atol, opt.seed) == (0.5, 1, 1, 0, 1, pool, 0, 0, None)


@pytest.mark.parametrize("target,message", [
    ("rocm", "Task('gemm'): target='rocm': unknown target kind 'rocm'; use 'llvm' or 'cuda'"),
    ("c", "Task('gemm'): target='c' cannot be tuned; use 'llvm'"),
    ("", "Task('gemm'): target='': target must be a string"),
])
def test_task_refuses_a_target_it_cannot_build(target, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        tune.Task("gemm", (8, 8, 8), target=target)


def test_task_accepts_target_options():
    assert tune.Task("gemm", (8, 8, 8), target="llvm -mcpu=generic").target == "llvm -mcpu=generic"


def test_task_args_must_be_a_tuple():
    with pytest.raises(TypeError, match=re.escape("Task('gemm'): args must be a tuple of the "
                                                  "template's arguments, e.g. (64,), got 8")):
        tune.Task("gemm", 8)


def test_tuner_needs_a_task():
    with pytest.raises(TypeError, match="RandomTuner: task must be a tune.Task, got 'gemm'"):
        tune.RandomTuner("gemm")


@pytest.mark.parametrize("kwargs,error,message", [
    ({"pop_size": 0}, ValueError, "GATuner: pop_size must be an integer >= 1 (configs per "
                                  "generation), got 0"),
    ({"pop_size": 4.0}, TypeError, "GATuner: pop_size must be an integer >= 1"),
    ({"mutation_prob": 1.5}, ValueError,
     "GATuner: mutation_prob must be a number in [0, 1] (the chance that a knob takes a random "
     "choice), got 1.5"),
    ({"mutation_prob": -0.1}, ValueError, "GATuner: mutation_prob must be a number in [0, 1]"),
], ids=lambda x: "-".join(f"{k}={v}" for k, v in x.items()) if isinstance(x, dict) else "")
def test_ga_tuner_refuses_bad_values(task, kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        tune.GATuner(task, **kwargs)


def test_ga_population_is_capped_by_the_space(task):
    assert tune.GATuner(task, pop_size=1).pop_size == 1
    assert tune.GATuner(task, pop_size=10**6).pop_size == len(task.space)


@pytest.mark.parametrize("kwargs,error,message", [
    ({"n_trial": 0}, ValueError, "n_trial must be an integer >= 1 (the number of configs to "
                                 "measure), got 0"),
    ({"n_trial": 2.5}, TypeError, "n_trial must be an integer >= 1"),
    ({"n_trial": 4, "early_stopping": 0}, ValueError,
     "early_stopping must be an integer >= 1 (trials without a better config) or None, got 0"),
    ({"n_trial": 4, "measure_option": {"timeout": 5}}, TypeError,
     "measure_option must be a tune.MeasureOption or None, got {'timeout': 5}"),
    ({"n_trial": 4, "callbacks": ["log.jsonl"]}, TypeError,
     "callbacks must be callables cb(tuner, inputs, results), got 'log.jsonl'"),
], ids=lambda x: "-".join(f"{k}" for k in x) if isinstance(x, dict) else "")
def test_tune_refuses_bad_values_before_measuring(task, kwargs, error, message):
    tuner = tune.GridSearchTuner(task)
    with pytest.raises(error, match=re.escape("GridSearchTuner.tune: " + message)):
        tuner.tune(**kwargs)
    assert tuner.trial_count == 0


def test_add_flop_needs_a_count():
    space = tune.ConfigSpace()
    with pytest.raises(ValueError, match=re.escape("cfg.add_flop: flop must be a finite number "
                                                   ">= 0 (operations per run), got -2")):
        space.add_flop(-2)
    with pytest.raises(TypeError, match="cfg.add_flop: flop must be"):
        space.add_flop("many")


def test_only_a_fallback_config_can_be_changed(task):
    config = task.space.get(1)
    with pytest.raises(TypeError, match=re.escape("cfg['parallel'] = ...: only a fallback config "
                                                  "(cfg.is_fallback) can be changed")):
        config["parallel"] = tune.ChoiceEntity(1)
    fallback = task.space.fallback()
    with pytest.raises(KeyError, match="knob 'nope' is not in this config"):
        fallback["nope"] = tune.ChoiceEntity(1)
    with pytest.raises(TypeError, match=re.escape("cfg['parallel'] = 1: give a SplitEntity")):
        fallback["parallel"] = 1


_WHAT_TO_GIVE = "give numbers, strings, booleans, None or tuples of them"


@pytest.mark.parametrize("values,error,pattern", [
    ([0, object()], TypeError, re.escape("define_knob 'k': value = <object object at ")
     + "0x[0-9a-fA-F]+" + re.escape("> (object) cannot be stored in a tuning record; "
                                     + _WHAT_TO_GIVE)),
    ([{1, 2}], TypeError, re.escape("define_knob 'k': value = {1, 2} (set) cannot be stored in a "
                                    "tuning record; " + _WHAT_TO_GIVE)),
    ([1.0, float("nan")], ValueError, re.escape(
        "define_knob 'k': value = nan cannot be stored in a tuning record (JSON has no inf or "
        "nan); give finite numbers")),
    ([(1, 2), [1, 2]], ValueError, re.escape(
        "define_knob 'k': values [(1, 2), (1, 2)] repeat a value")),
], ids=["object", "set", "nan", "repeat"])
def test_define_knob_refuses_values_a_record_cannot_hold(values, error, pattern):
    with pytest.raises(error, match=pattern):
        tune.ConfigSpace().define_knob("k", values)


def test_task_refuses_arguments_a_record_cannot_hold():
    with pytest.raises(TypeError, match=re.escape("Task('gemm'): args = <object object at ")
                       + "0x[0-9a-fA-F]+" + re.escape("> (object) cannot be stored in a tuning "
                                                      "record; " + _WHAT_TO_GIVE)):
        tune.Task("gemm", (8, object(), 8))


def test_candidate_split_accepts_the_outer_loop_and_minus_one():
    space = tune.ConfigSpace()
    space.define_split("t", 30, candidate=[[4, 8], [-1, 8], [30, 1]])    # 4 * 8 covers 30
    assert [e.size for e in space.knobs["t"].entities] == [(4, 8), (-1, 8), (30, 1)]
    space = tune.ConfigSpace()      # as TVM: the inner sizes decide, the outer is what is left
    space.define_split("t", 32, candidate=[[2, 8], [1, 16]])
    assert [e.size for e in space.knobs["t"].entities] == [(4, 8), (2, 16)]


def test_cuda_task_needs_a_gpu_or_the_simulator(monkeypatch):
    device = importlib.import_module("nn.device")
    monkeypatch.setattr(device, "cuda_available", lambda: False)
    with pytest.raises(RuntimeError, match=re.escape(
            "Task('gemm'): target='cuda' needs an NVIDIA GPU, and numba finds none")
            + ".*NUMBA_ENABLE_CUDASIM=1"):
        tune.Task("gemm", (8, 8, 8), target="cuda")
    monkeypatch.setattr(device, "cuda_available", lambda: True)     # a GPU, or the simulator
    assert tune.Task("gemm", (8, 8, 8), target="cuda").target == "cuda"


def test_load_history_needs_records(task):
    with pytest.raises(TypeError, match=re.escape("GridSearchTuner.load_history: records must be "
                                                  "a log path or a list of TuningRecords")):
        tune.GridSearchTuner(task).load_history([{"costs": [1e-3]}])
