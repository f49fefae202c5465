"""Measuring candidates: each is built, checked and timed in an isolated worker process.

``measure_batch`` submits one ``run_candidate`` call per config to a ``concurrent.futures``
executor: a thread pool of ``n_parallel`` threads by default, or any executor the user passes
(a ``ProcessPoolExecutor``, a Dask ``distributed.Client`` through nn/tune/dask_executor.py,
Ray's). ``run_candidate`` runs wherever the executor puts it and hands the candidate to a
persistent worker process (``python -m nn.tune.worker``) over a pipe, waiting at most
``timeout`` seconds. A candidate that crashes or hangs kills only that worker, which is replaced
for the next candidate; the trial is recorded with its error.
"""
from __future__ import annotations

import atexit
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field

from . import worker as protocol
from .check import check_bool, check_int, check_real
from .dask_executor import as_executor

try:                                   # sends templates defined in __main__ (notebooks) by value
    import cloudpickle
except ImportError:                    # pragma: no cover - cloudpickle is in the dev extra
    cloudpickle = None

STARTUP_TIMEOUT = 120.0                # seconds for a new worker to import numpy, te and llvmlite


@dataclass(frozen=True)
class MeasureOption:
    """How to measure: the timeout (build + run, seconds), the timer's ``number``, ``repeat`` and
    ``min_repeat_ms``, the batch size ``n_parallel``, the executor (None: a local thread pool
    driving worker processes), and the numpy check's tolerances."""

    timeout: float = 10.0
    number: int = 4
    repeat: int = 3
    min_repeat_ms: float = 0.0
    n_parallel: int = 1
    executor: Executor | None = None
    check_correctness: bool = True
    rtol: float = 1e-4
    atol: float = 1e-5
    seed: int = 0

    def __post_init__(self):
        owner = "MeasureOption"
        check_real(owner, "timeout", self.timeout, strict=True,
                   what=" (seconds for build + run of one candidate)")
        check_int(owner, "number", self.number, 1, " (runs per timing)")
        check_int(owner, "repeat", self.repeat, 1, " (timings per candidate)")
        check_real(owner, "min_repeat_ms", self.min_repeat_ms)
        check_int(owner, "n_parallel", self.n_parallel, 1, " (candidates measured at once)")
        if self.executor is not None and not callable(getattr(self.executor, "submit", None)):
            raise TypeError(f"{owner}: executor must be a concurrent.futures.Executor (anything "
                            f"with submit()) or None, got {self.executor!r}")
        check_bool(owner, "check_correctness", self.check_correctness)
        check_real(owner, "rtol", self.rtol)
        check_real(owner, "atol", self.atol)
        if self.seed is not None:
            check_int(owner, "seed", self.seed, 0, " or None")


@dataclass(frozen=True)
class MeasureInput:
    """A task and the config measured for it."""

    task: object
    config: object


@dataclass(frozen=True)
class MeasureResult:
    """Run times in seconds (empty on error), the error text and kind, the build time in seconds
    and when the trial ended (seconds since the epoch)."""

    costs: tuple = ()
    error: str | None = None
    error_kind: str | None = None
    build_time: float = 0.0
    timestamp: float = field(default_factory=time.time)

    @property
    def ok(self):
        return self.error is None and bool(self.costs)

    @property
    def cost(self):
        """The mean run time, or infinity for a failed trial."""
        return sum(self.costs) / len(self.costs) if self.ok else float("inf")


def measure_batch(task, configs, option, executor):
    """Measure ``configs`` of ``task`` through ``executor`` (a ``distributed.Client`` is
    wrapped in a ``DaskExecutor``); one MeasureResult per config."""
    check_sendable(task.template)
    executor = as_executor(executor)
    futures = [executor.submit(run_candidate, _request(task, config, option), option.timeout)
               for config in configs]
    results = []
    for future in futures:
        try:
            out = future.result()
        except Exception as err:               # noqa: BLE001 - a lost task costs one trial
            out = {"error": f"{type(err).__name__}: {err}", "error_kind": "executor"}
        results.append(MeasureResult(costs=tuple(out.get("costs", ())), error=out.get("error"),
                                     error_kind=out.get("error_kind"),
                                     build_time=out.get("build_time", 0.0)))
    return results


def default_executor(option):
    """The executor used when ``option.executor`` is None."""
    return ThreadPoolExecutor(max_workers=option.n_parallel, thread_name_prefix="tune")


def check_sendable(tmpl):
    """Raise a clear error if a worker process could not receive ``tmpl``."""
    if tmpl.module == "__main__" and cloudpickle is None:
        raise RuntimeError(f"template {tmpl.name!r} is defined in __main__ (a script or notebook)"
                           "; worker processes cannot import it. Install cloudpickle (it is in "
                           "the dev extra) or define the template in an importable module")


def _request(task, config, option):
    request = {"template": task.template, "args": task.args, "config": config.to_json(),
               "target": task.target, "number": option.number, "repeat": option.repeat,
               "min_repeat_ms": option.min_repeat_ms, "check": option.check_correctness,
               "rtol": option.rtol, "atol": option.atol, "seed": option.seed}
    # sys.path travels apart, so that a worker started earlier can import the template's module
    return pickle.dumps({"sys_path": _absolute_sys_path(),
                         "request": (cloudpickle or pickle).dumps(request)})


def run_candidate(payload, timeout):
    """Measure one pickled request in a worker process of this machine; returns a result dict."""
    try:
        worker = _acquire()
    except (OSError, EOFError, TimeoutError) as err:
        return {"error": f"could not start a worker process: {err}", "error_kind": "crash"}
    try:
        result = worker.run(payload, timeout)
    except TimeoutError:
        worker.close()
        return {"error": f"no result within the {timeout:g} s timeout (build + run); the worker "
                         "was killed", "error_kind": "timeout"}
    except (EOFError, OSError):
        status = worker.close()
        return {"error": f"the worker process died ({_describe_exit(status)}) while measuring"
                         f" this candidate{_tail(worker.log_text())}", "error_kind": "crash"}
    _release(worker)
    return result


class _Worker:
    """One ``python -m nn.tune.worker`` process, its pipes and its log file."""

    def __init__(self):
        self.log = tempfile.TemporaryFile()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(_absolute_sys_path()))
        self.proc = subprocess.Popen([sys.executable, "-m", "nn.tune.worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, env=env)
        try:
            protocol.receive(self.proc.stdout.fileno(), time.monotonic() + STARTUP_TIMEOUT)
        except (EOFError, TimeoutError):
            status = self.close()
            raise OSError(f"worker exited during startup ({_describe_exit(status)})"
                          f"{_tail(self.log_text())}") from None

    def alive(self):
        return self.proc.poll() is None

    def run(self, payload, timeout):
        self.log.seek(0)
        self.log.truncate()
        protocol.send_bytes(self.proc.stdin.fileno(), payload)
        return protocol.receive(self.proc.stdout.fileno(), time.monotonic() + timeout)

    def log_text(self):
        """What the process wrote to stderr (kept when the worker is closed)."""
        if self.log.closed:
            return self._last_log
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def close(self):
        """Kill the process and close its pipes and log file (``log_text`` still answers);
        returns its exit status."""
        if self.alive():
            self.proc.kill()
        status = self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()
        if not self.log.closed:
            self._last_log = self.log_text()
            self.log.close()
        return status


_IDLE: list[_Worker] = []
_LOCK = threading.Lock()


def _acquire():
    with _LOCK:
        while _IDLE:
            worker = _IDLE.pop()
            if worker.alive():
                return worker
            worker.close()
    return _Worker()


def _release(worker):
    with _LOCK:
        _IDLE.append(worker)


@atexit.register
def shutdown_workers():
    """Stop the idle worker processes of this process (new ones start when needed)."""
    with _LOCK:
        idle = list(_IDLE)
        _IDLE.clear()
    for worker in idle:
        worker.close()


def _absolute_sys_path():
    return [os.path.abspath(p or os.curdir) for p in sys.path]


def _describe_exit(status):
    if status is not None and status < 0:
        try:
            return f"killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"killed by signal {-status}"
    return f"exit status {status}"


def _tail(text, limit=1500):
    text = text.strip()
    if not text:
        return ""
    return ":\n" + (text if len(text) <= limit else "..." + text[-limit:])
