"""The training tutorial resumed from its checkpoint computes the same losses as a run that
was never interrupted (issue 6): model, optimizer, epoch and random state are all saved."""
import pytest
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / "tutorials" / "09_training.py"


def run(checkpoint, stop_after=None):
    # the tiniest data (10 images of 10x10) for three epochs: resuming is about the state
    env = dict(os.environ, TW_TUTORIAL_SMALL="1", TW_TUTORIAL_TINY="1", TW_EPOCHS="3",
               TW_CHECKPOINT=str(checkpoint))
    if stop_after is not None:
        env["TW_STOP_AFTER"] = str(stop_after)
    proc = subprocess.run([sys.executable, str(TUTORIAL)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    expected = 1 if stop_after is not None else 0
    assert proc.returncode == expected, out[-4000:]
    return dict(re.findall(r"epoch (\d+): loss ([0-9.]+)", proc.stdout)), out


@pytest.mark.slow
def test_resumed_run_repeats_the_uninterrupted_losses(tmp_path):
    whole, _ = run(tmp_path / "a.nn")
    first, out = run(tmp_path / "b.nn", stop_after=0)
    assert "stopped after epoch 0" in out and (tmp_path / "b.nn").exists()
    rest, out = run(tmp_path / "b.nn")
    assert "resumed after epoch 0" in out
    assert set(first) == {"0"} and set(rest) == {"1", "2"} and set(whole) == {"0", "1", "2"}
    assert {**first, **rest} == whole


@pytest.mark.slow
def test_the_same_script_trains_on_the_gpu(tmp_path):
    """TW_DEVICE=cuda: the model and batches go to the GPU with .to(device) (numba's simulator
    here, at the tutorial's tiniest size); the first epoch's loss equals the CPU run's."""
    losses = {}
    for device, extra in (("cpu", {"TW_TUTORIAL_TINY": "1"}),
                          ("cuda", {"NUMBA_ENABLE_CUDASIM": "1"})):
        env = dict(os.environ, TW_TUTORIAL_SMALL="1", TW_DEVICE=device, **extra)
        env["TW_CHECKPOINT"] = str(tmp_path / f"{device}.nn")
        proc = subprocess.run([sys.executable, str(TUTORIAL)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
        assert "test accuracy" in proc.stdout
        losses[device] = float(re.search(r"epoch 0: loss ([0-9.]+)", proc.stdout).group(1))
    assert abs(losses["cuda"] - losses["cpu"]) <= 1e-4 * abs(losses["cpu"])
