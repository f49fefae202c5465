"""Every kernel of a CNN's training step on the GPU (convolutions, pooling, batch norm,
dropout, products, cross entropy, Adam), built as for a real GPU and compiled to PTX for sm_90
by NVVM: see gpu_kernels.py."""
import pytest
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _run(mode, path):
    proc = subprocess.run([sys.executable, os.path.join(HERE, "gpu_kernels.py"), mode, path],
                          capture_output=True, text=True, timeout=900, env=dict(os.environ))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.slow
def test_training_step_kernels_compile_to_ptx(tmp_path):
    builds = str(tmp_path / "builds.pkl")
    recorded = _run("record", builds)
    count = int(recorded.split(" GPU builds recorded")[0].split()[-1])
    compiled = _run("compile", builds)
    assert f"of {count} builds compiled to PTX" in compiled, compiled[-2000:]
    for op in ("conv2d", "conv2d_grad_input_phase", "conv2d_grad_weight", "dense",
               "matmul_tn", "batch_norm_train", "cross_entropy", "adam_update"):
        assert f"\n{op} (" in "\n" + compiled, op
