"""Every numbered tutorial runs to the end, at small sizes, and its numpy checks pass."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TUTORIALS = sorted((ROOT / "tutorials").glob("[0-9]*.py"))


def test_tutorials_exist():
    assert TUTORIALS, f"no tutorials found in {ROOT / 'tutorials'}"


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.name for p in TUTORIALS])
def test_tutorial_runs(path):
    env = dict(os.environ, TW_TUTORIAL_SMALL="1")
    proc = subprocess.run([sys.executable, str(path)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, (
        f"{path.name} exited with status {proc.returncode}\n"
        f"--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-6000:]}")


def test_gpu_tutorials_fall_back_to_the_simulator_without_a_driver():
    """Without NUMBA_ENABLE_CUDASIM set: the simulator where no CUDA driver is found."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    code = ("import ctypes.util, os, te\n"
            "on = te.testing.simulate_gpu_if_absent()\n"
            "print(on, os.environ.get('NUMBA_ENABLE_CUDASIM'), "
            "ctypes.util.find_library('cuda') is None)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    on, flag, no_driver = proc.stdout.split()[-3:]
    assert on == str(no_driver == "True")
    assert (flag == "1") == (on == "True")
