"""The seed's MNIST script, renamed torch -> nn and torchvision -> nn.vision, trains on small
synthetic MNIST-format files and reaches the validation accuracy that PyTorch running the same
script (its own spelling) reaches on them."""
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
import synthetic_mnist  # noqa: E402

SEED_SOURCE = pathlib.Path("/work/shared/seeds/mnist_superboy.py")


def _run(script, data, cwd, extra_path=()):
    env = dict(os.environ, EPOCHS="2", DATA_ROOT=str(data), NUMBA_ENABLE_CUDASIM="0",
               PYTHONPATH=os.pathsep.join([str(ROOT), *extra_path,
                                           os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(script)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    train = [float(a) for a in re.findall(r"Train Loss:[0-9.]+ Acc:([0-9.]+)%", proc.stdout)]
    valid = [float(a) for a in re.findall(r"Validation Loss:[0-9.]+ Acc:([0-9.]+)%",
                                          proc.stdout)]
    assert len(train) == len(valid) == 2, proc.stdout
    return train, valid, proc.stdout


def test_renamed_script_differs_from_the_seed_only_by_the_renames():
    ours = (HERE / "mnist_superboy_nn.py").read_text().splitlines()[3:]
    reference = (HERE / "mnist_superboy_torch.py").read_text().splitlines()[2:]
    assert len(ours) == len(reference)
    for a, b in zip(ours, reference):
        renamed = re.sub(r"\btorch\b", "nn", b.replace("torchvision", "nn.vision"))
        assert a == renamed, (a, b)
    if SEED_SOURCE.exists():        # the torch copy is the seed but for EPOCHS / DATA_ROOT
        seed = SEED_SOURCE.read_text().splitlines()[3:]
        changed = [(a, b) for a, b in zip(seed, reference) if a != b]
        assert len(seed) == len(reference) and len(changed) == 3, changed


@pytest.mark.slow
def test_seed_script_reaches_pytorchs_accuracy(tmp_path):
    data = tmp_path / "data"
    synthetic_mnist.write_mnist(str(data), n_train=500, n_test=100)
    (tmp_path / "nn").mkdir()
    (tmp_path / "torch").mkdir()
    train, valid, out = _run(HERE / "mnist_superboy_nn.py", data, tmp_path / "nn")
    assert (tmp_path / "nn" / "model_saved.pth").exists()       # the per-epoch checkpoint
    shim = [] if importlib.util.find_spec("torchvision") else [str(HERE / "torchvision_shim")]
    t_train, t_valid, t_out = _run(HERE / "mnist_superboy_torch.py", data, tmp_path / "torch",
                                   shim)
    # ten classes: chance is 10%; both runs learn, and nn's final validation accuracy is
    # within 10 points of PyTorch's (different random streams, 50 validation images)
    assert t_valid[-1] >= 70, t_out
    assert valid[-1] >= t_valid[-1] - 10, (out, t_out)
    assert train[-1] >= t_train[-1] - 15, (out, t_out)
    import nn
    checkpoint = nn.load(tmp_path / "nn" / "model_saved.pth")
    assert checkpoint["epoch"] == 1 and "part1.conv1.weight" in checkpoint["model"]
