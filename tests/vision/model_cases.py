"""Deterministic weights for comparing a model's forward with torchvision's: every entry of
the state dict filled from a sine of its element index (weights scaled by 1/sqrt(fan-in),
batch-norm statistics kept near 0 and 1), and a fixed input image."""
import numpy as np


def fill(name, shape, index):
    n = int(np.prod(shape)) if shape else 1
    wave = np.sin(np.arange(n, dtype=np.float64) * 0.731 + index * 1.3).reshape(shape)
    if name.endswith("num_batches_tracked"):
        return np.zeros(shape, np.int64)
    if name.endswith("running_var"):
        return (1.0 + 0.2 * np.abs(wave)).astype(np.float32)
    if name.endswith("running_mean") or name.endswith("bias"):
        return (0.05 * wave).astype(np.float32)
    if len(shape) == 1:                       # batch-norm weights
        return (1.0 + 0.1 * wave).astype(np.float32)
    fan_in = int(np.prod(shape[1:]))
    return (wave * np.sqrt(3.0 / fan_in)).astype(np.float32)


def state(entries):
    """``[[name, shape], ...]`` (a reference state-dict listing) -> ``{name: array}``."""
    return {name: fill(name, tuple(shape), i) for i, (name, shape) in enumerate(entries)}


def image(size):
    yy, xx = np.mgrid[0:size, 0:size]
    return np.stack([np.sin(xx * 0.3 + c) * np.cos(yy * 0.2 - c) for c in range(3)])[None] \
        .astype(np.float32)
