"""Runs fuzz cases in worker processes (worker.py) and collects one verdict per case.

Each worker runs many cases in turn (importing te and LLVM once); a case that kills its
worker (a signal, an abort) is a "crash" and one that runs past the timeout a "hang" (its
worker is killed); either way the runner starts a fresh worker for the next case, so every
verdict belongs to exactly one case.
"""
from __future__ import annotations

import json
import os
import queue
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KINDS = ("pass", "refused", "mismatch", "error", "crash", "hang")


class _Worker:
    def __init__(self, env):
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.fuzz.worker"], cwd=ROOT,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, bufsize=1)

    def run(self, case, timeout):
        """The verdict dict for ``case``; kind crash/hang when the worker died or stalled."""
        t0 = time.perf_counter()
        try:
            self.proc.stdin.write(json.dumps({"seed": case.seed, "source": case.source}) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else None
        if line:
            return json.loads(line)
        seconds = round(time.perf_counter() - t0, 3)
        if line is None:                                    # still running: a hang
            self.kill()
            return {"seed": case.seed, "kind": "hang", "seconds": seconds,
                    "detail": f"no verdict after {timeout} s" + self._log_tail()}
        code = self.proc.wait()
        name = signal.Signals(-code).name if code < 0 else f"exit status {code}"
        return {"seed": case.seed, "kind": "crash", "seconds": seconds,
                "detail": f"the worker died: {name}" + self._log_tail()}

    def _log_tail(self):
        self.log.seek(0)
        text = self.log.read().decode(errors="replace")
        text = text[text.rfind("=== case"):]
        lines = [x for x in text.splitlines()[1:] if x.strip()][-6:]
        return ("; stderr: " + " | ".join(lines))[:1500] if lines else ""

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
        self.log.close()


def worker_env(cache_dir=None, gpu_every=0):
    """The workers' environment; ``gpu_every``: cases whose seed is a multiple of it also run
    on the GPU (numba's simulator without a driver)."""
    env = dict(os.environ)
    env["TW_FUZZ_GPU_EVERY"] = str(int(gpu_every))
    env.setdefault("TW_VERIFY", "1")
    env.setdefault("OMP_NUM_THREADS", "2")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    if cache_dir is not None:
        env["TW_CACHE_DIR"] = cache_dir
    return env


def run_cases(cases, workers=2, timeout=60.0, env=None, on_result=None):
    """Verdicts (dicts with seed, kind, detail, seconds) for ``cases``, in their order."""
    env = env or worker_env()
    todo = queue.Queue()
    for k, c in enumerate(cases):
        todo.put((k, c))
    results = [None] * len(cases)
    lock = threading.Lock()

    def loop():
        w = _Worker(env)
        try:
            while True:
                try:
                    k, case = todo.get_nowait()
                except queue.Empty:
                    return
                res = w.run(case, timeout)
                res["expect"] = case.expect
                res["features"] = sorted(case.features)
                results[k] = res
                if res["kind"] in ("crash", "hang"):
                    w.close()
                    w = _Worker(env)
                if on_result is not None:
                    with lock:
                        on_result(case, res)
        finally:
            w.close()

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(max(1, workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def counts(results):
    out = {k: 0 for k in KINDS}
    for r in results:
        out[r["kind"]] += 1
    out["cases"] = len(results)
    return out
