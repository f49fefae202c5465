"""The README's Python examples run as they are, from a scratch directory."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
RUNNABLE = [b for b in BLOCKS if b.startswith("import")]


def test_readme_has_runnable_examples():
    assert len(RUNNABLE) >= 2


@pytest.mark.parametrize("block", RUNNABLE, ids=[f"example{k}" for k in range(len(RUNNABLE))])
def test_readme_example_runs(block, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(block)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
