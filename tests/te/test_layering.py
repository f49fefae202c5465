"""te is the bottom layer: building, printing and simplifying expressions, computes and topi
operators imports nothing of schedule, the backends, nn, llvmlite or numba (checked in a fresh
interpreter, so that no other test has imported them first)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROGRAM = r"""
import sys
import te
from te import topi
from te.arith import simplify
n = te.var("n")
A = te.placeholder((n, 8), name="A")
k = te.reduce_axis((0, 8), name="k")
B = te.compute((n,), lambda i: te.sum(A[i, k] * 2, axis=k), name="B")
C = A + B[0]                          # tensor arithmetic (te.topi)
D = topi.nn.softmax(topi.nn.relu(C))
E = topi.nn.conv2d_nchw(te.placeholder((1, 2, 5, 5)), te.placeholder((3, 2, 3, 3)), 1, 1, 1)
assert str(B.op.body[0]) == "sum(A[i, k] * 2.0, axis=[k])", str(B.op.body[0])
assert str(simplify((n * 4 + 3) - n * 4 + 1)) == "4"
assert te.reduce_axis((2, n)).dom.extent is not None
assert int(te.const(3)) == 3 and str(D.op.body[0]) and E.op.tag == "conv2d_nchw"
below = ("schedule", "codegen_llvm", "codegen_cuda", "nn", "llvmlite", "numba")
loaded = sorted(m for m in sys.modules if m.split(".")[0] in below)
print("LOADED", loaded)
"""


def test_te_imports_nothing_below_it():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", PROGRAM], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "LOADED []" in proc.stdout, proc.stdout


LOWER = ("schedule", "codegen_llvm", "codegen_cuda", "nn", "llvmlite", "numba")


def test_te_sources_name_schedule_only_in_facades():
    """The te modules reach the lower layers only inside functions (lazy facades)."""
    te_dir = os.path.join(ROOT, "te")
    for root, _, files in os.walk(te_dir):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            with open(path) as f:
                for lineno, line in enumerate(f, 1):
                    code = line.split("#")[0]
                    words = code.split()
                    if len(words) > 1 and words[0] in ("import", "from") and \
                            words[1].split(".")[0] in LOWER:
                        assert code.startswith((" ", "\t")), \
                            f"{path}:{lineno} imports a lower layer at module level: {line}"


LOOP_IR_PROGRAM = r"""
import sys
import te
from schedule.functor import post_order_visit
from schedule.ir import BufferLoad
A = te.placeholder((8,), name="A")
B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
f = te.lower(te.create_schedule(B.op), [A, B])
loads = []
post_order_visit(f.body, lambda n: loads.append(n) if isinstance(n, BufferLoad) else None)
print("PRINTER LOADED BEFORE", "schedule.printer" in sys.modules)
print("LOAD", str(loads[0]))
"""


def test_loop_ir_nodes_print_through_te_printer():
    """te.printer prints the loop IR's expression nodes (registered by schedule.printer,
    imported the first time one of them is printed)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", LOOP_IR_PROGRAM], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "LOAD A[i]" in proc.stdout, proc.stdout
