"""Every numbered tutorial runs to the end, at small sizes, and its numpy checks pass."""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TUTORIALS = sorted((ROOT / "tutorials").glob("[0-9]*.py"))


def test_tutorials_exist():
    assert TUTORIALS, f"no tutorials found in {ROOT / 'tutorials'}"


# the ones that run for 15 s or more on 2 cores (slow: scheduled first, skipped by -m "not slow")
LONG = {"13_quantization.py", "15_bert.py"}


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.name in LONG
                                  else p for p in TUTORIALS], ids=[p.name for p in TUTORIALS])
def test_tutorial_runs(path):
    env = dict(os.environ, TW_TUTORIAL_SMALL="1")
    proc = subprocess.run([sys.executable, str(path)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, (
        f"{path.name} exited with status {proc.returncode}\n"
        f"--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-6000:]}")


NOTICE = ("No CUDA driver here: the GPU kernels run on numba's CUDA simulator (one Python "
          "thread per GPU thread: slow; TW_TUTORIAL_SMALL=1 keeps the problems small).")

_FALLBACK = """
import ctypes.util, json, os, sys
import numpy as np
{patch}
no_driver = ctypes.util.find_library("cuda") is None
import te
numba_before = "numba" in sys.modules
on = te.testing.simulate_gpu_if_absent()
from numba import config, cuda
result = None
if on:
    @cuda.jit
    def twice(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] = 2 * i
    result = np.zeros(5)
    twice[1, 8](result)
    result = result.tolist()
print("RESULT " + json.dumps(dict(
    on=on, no_driver=no_driver, numba_before=numba_before,
    flag=os.environ.get("NUMBA_ENABLE_CUDASIM"), sim=bool(config.ENABLE_CUDASIM),
    jit=cuda.jit.__module__, result=result)))
"""


def _fall_back(patch=""):
    """Run ``simulate_gpu_if_absent`` in a fresh interpreter without NUMBA_ENABLE_CUDASIM
    (after ``patch``); returns (its stdout lines before the result, the result dict)."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proc = subprocess.run([sys.executable, "-c", _FALLBACK.format(patch=patch)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines and lines[-1].startswith("RESULT "), proc.stdout
    return lines[:-1], json.loads(lines[-1][len("RESULT "):])


def _assert_simulated(printed, got):
    """The notice printed once, the flag set, and numba's simulator running a kernel."""
    assert printed.count(NOTICE) == 1, printed
    assert got["on"] is True and got["flag"] == "1" and got["sim"] is True
    assert got["jit"].startswith("numba.cuda.simulator"), got["jit"]
    assert got["result"] == (2 * np.arange(5.0)).tolist()


def test_gpu_tutorials_fall_back_to_the_simulator_without_a_driver():
    """Without NUMBA_ENABLE_CUDASIM set: the simulator (and the notice) where no CUDA driver
    is found; where one is, the real driver and no notice."""
    printed, got = _fall_back()
    assert got["numba_before"] is False            # importing te must not import numba
    if got["no_driver"]:
        _assert_simulated(printed, got)
    else:
        assert NOTICE not in printed and got["on"] is False
        assert got["flag"] is None and got["sim"] is False


def test_simulator_fallback_when_the_driver_is_hidden():
    """The no-driver branch on any machine: ``find_library("cuda")`` finds nothing."""
    patch = ("_find = ctypes.util.find_library\n"
             "ctypes.util.find_library = lambda name: None if name == 'cuda' else _find(name)")
    printed, got = _fall_back(patch)
    assert got["no_driver"] is True and got["numba_before"] is False
    _assert_simulated(printed, got)
