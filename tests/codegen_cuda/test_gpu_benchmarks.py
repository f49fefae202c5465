"""The GPU benchmark scripts run (on numba's simulator, tiny sizes): a device session's few
minutes must not be spent on a script that no longer starts."""
import pytest
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GPU = os.path.join(ROOT, "benchmarks", "gpu")
ENV = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=ROOT)


def _run(*args, timeout=300):
    proc = subprocess.run([sys.executable, *args], env=ENV, cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def test_smoke_builds_and_checks_a_kernel():
    out = _run(os.path.join(GPU, "smoke.py"))
    assert "smoke: a 1000-element kernel built, ran and matched numpy" in out


@pytest.mark.slow
def test_gemm_sweep_checks_what_it_times():
    out = _run(os.path.join(GPU, "gemm_sweep.py"), "--size", "24", "--configs", "1")
    assert "correct=True" in out and "failed" not in out
    assert out.count("  ratio ") == 1


def test_build_times_logs_each_kernel(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import numpy as np\n"
                      "import nn\n"
                      "m = nn.Linear(8, 4)\n"
                      "x = np.random.default_rng(0).standard_normal((3, 8)).astype('float32')\n"
                      "ref = (x @ m.weight.detach().numpy().T + m.bias.detach().numpy()).sum()\n"
                      "got = m.to('cuda')(nn.tensor(x).to('cuda')).sum().item()\n"
                      "assert abs(got - ref) < 1e-4 * max(1.0, abs(ref)), (got, ref)\n")
    out = _run(os.path.join(GPU, "build_times.py"), str(script))
    assert "[build_times] dense: first launch" in out
    assert "[build_times] 2 kernels launched, 2 built" in out
