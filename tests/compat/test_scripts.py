"""Ten short PyTorch scripts (tests/compat/scripts) run after ``import nn as torch`` with no
other change; the same scripts with that line back to ``import torch`` (and ``nn.nn`` back to
``torch.nn`` in ``import nn.nn.functional as F``) run on PyTorch, and the results they print
agree: "exact" values equal, "approx" values within 1e-3. Each script also asserts what it
expects (losses falling, accuracy reached, resumed losses equal)."""
import json
import math
import os
import pathlib
import re
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SCRIPTS = sorted((HERE / "scripts").glob("s*.py"))


def _run_all(mode, out_dir):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(HERE / "run_scripts.py"), mode, str(out_dir)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _close(a, b):
    if isinstance(a, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-3, abs_tol=1e-3)
    return a == b


def test_ten_scripts_are_there_and_use_only_the_import_line():
    assert len(SCRIPTS) == 10
    for script in SCRIPTS:
        text = script.read_text()
        assert "import nn as torch" in text
        assert not re.search(r"^\s*(import torch|from torch)", text, re.M), script.name


@pytest.mark.slow
def test_scripts_run_on_nn_as_on_torch(tmp_path):
    ours, reference = _run_all("nn", tmp_path), _run_all("torch", tmp_path)
    failures = []
    for script in SCRIPTS:
        mine, theirs = ours[script.name], reference[script.name]
        assert "error" not in theirs, f"{script.name} fails on PyTorch:\n{theirs['error']}"
        if "error" in mine:
            failures.append(f"{script.name} fails on nn:\n{mine['error']}")
            continue
        for kind in ("exact", "approx"):
            for key, value in theirs.get(kind, {}).items():
                got = mine.get(kind, {}).get(key)
                same = got == value if kind == "exact" else _close(got, value)
                if not same:
                    failures.append(f"{script.name}: {key}: nn {got!r} != torch {value!r}")
    assert not failures, "\n".join(failures)
