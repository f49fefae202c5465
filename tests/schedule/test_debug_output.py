"""TW_DEBUG prints the lowered function (1) and the IR after every pass (2)."""
import os
import subprocess
import sys

PROGRAM = """
import te
A = te.placeholder((4,), name="A")
B = te.compute((4,), lambda i: A[i] + 1, name="B")
te.build(te.create_schedule(B.op), [A, B], name="f")
"""


def _run(level):
    env = dict(os.environ, TW_DEBUG=str(level))
    proc = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_debug_levels():
    assert _run(0) == ""
    one = _run(1)
    assert "# lowered f" in one and "B[i] = A[i] + 1.0" in one and "# after" not in one
    two = _run(2)
    assert "# after simplify_stmt" in two and "# after vectorize_loops" in two
