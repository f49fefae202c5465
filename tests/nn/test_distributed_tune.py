"""nn.tune on a Dask cluster: a 2-worker local cluster (worker processes, one thread each)
finds the same best config as the default process executor, with records of the same format;
a bare distributed.Client works as the executor too. The template lives in this module so that
the measuring processes import it by name."""
import json
import pathlib

import numpy as np
import pytest

import te
from nn import tune
from nn.tune.dask_executor import DaskExecutor, as_executor, is_dask_client

distributed = pytest.importorskip("distributed")

N = 384


@tune.template("test_dask_extra_work", reference=lambda a, *args: a * 2.0)
def extra_work(cfg, n):
    """B = A * 2 plus 0 times a sum of ``extra`` * n * n products: the cost grows with
    ``extra`` (which is not the first value), the result does not."""
    cfg.define_knob("extra", [3, 1, 0, 2])
    A = te.placeholder((n,), name="A")
    extra = cfg["extra"].val
    if extra:
        k = te.reduce_axis((0, n * extra), name="k")
        S = te.compute((n,), lambda i: te.sum(A[k % n] * A[i], axis=k), name="S")
        B = te.compute((n,), lambda i: A[i] * 2.0 + S[i] * 0.0, name="B")
    else:
        B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    return te.create_schedule(B.op), [A, B]


OPTION = dict(timeout=60, number=2, repeat=2)


def _tune(option, log):
    task = tune.Task("test_dask_extra_work", (N,), target="llvm")
    tuner = tune.GridSearchTuner(task)
    best = tuner.tune(n_trial=len(task.space), measure_option=option,
                      callbacks=[tune.log_to_file(str(log))])
    return best, tuner


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.mark.slow
def test_dask_cluster_finds_the_process_executors_best(client, tmp_path):
    local_best, local = _tune(tune.MeasureOption(**OPTION), tmp_path / "local.jsonl")
    dask_best, remote = _tune(tune.MeasureOption(executor=DaskExecutor(client), n_parallel=2,
                                                 **OPTION), tmp_path / "dask.jsonl")
    assert local_best["extra"].val == dask_best["extra"].val == 0
    assert local.error_count == remote.error_count == 0
    assert len(client.scheduler_info()["workers"]) == 2
    lines = {name: [json.loads(x) for x in pathlib.Path(tmp_path / f"{name}.jsonl")
                    .read_text().splitlines()] for name in ("local", "dask")}
    assert len(lines["local"]) == len(lines["dask"]) == 4
    for a, b in zip(lines["local"], lines["dask"]):
        assert _shape(a) == _shape(b)
    # the records load, and the best of the Dask log builds the fastest kernel
    records = tune.load_records(str(tmp_path / "dask.jsonl"))
    assert len(records) == 4
    f = tune.build_best("test_dask_extra_work", N, log=str(tmp_path / "dask.jsonl"))
    a = np.random.default_rng(0).random(N).astype("float32")
    b = np.zeros(N, "float32")
    f(a, b)
    np.testing.assert_array_equal(b, a * 2)


def _shape(record):
    """The keys and value types of a JSON record, recursively (values aside)."""
    if isinstance(record, dict):
        return {k: _shape(v) for k, v in record.items()}
    if isinstance(record, list):
        return [type(record).__name__]
    return type(record).__name__


def test_a_bare_client_is_wrapped(client, tmp_path):
    assert is_dask_client(client) and not is_dask_client(object())
    wrapped = as_executor(client)
    assert isinstance(wrapped, DaskExecutor)
    assert wrapped.submit(pow, 3, 4).result() == 81
    option = tune.MeasureOption(executor=client, n_parallel=2, **OPTION)
    task = tune.Task("test_dask_extra_work", (N,), target="llvm")
    configs = [task.space.get(i) for i in range(4)]
    results = tune.measure_batch(task, configs, option, client)
    assert all(r.ok for r in results)
    costs = {c["extra"].val: r.cost for c, r in zip(configs, results)}
    assert min(costs, key=costs.get) == 0
    with pytest.raises(TypeError, match="distributed.Client"):
        DaskExecutor(object())
