"""Small MNIST-format IDX files for tests: ten classes of 28x28 strokes (each class a fixed
set of line segments, drawn with a random shift, thickness jitter and noise)."""
import gzip
import os
import struct

import numpy as np


def _strokes(rng):
    return [rng.uniform(3, 24, 4) for _ in range(3)]


def _draw(segments, rng):
    img = np.zeros((28, 28), np.float64)
    yy, xx = np.mgrid[0:28, 0:28]
    dy, dx = rng.integers(-2, 3, 2)
    for x0, y0, x1, y1 in segments:
        x0, x1, y0, y1 = x0 + dx, x1 + dx, y0 + dy, y1 + dy
        vx, vy = x1 - x0, y1 - y0
        t = np.clip(((xx - x0) * vx + (yy - y0) * vy) / (vx * vx + vy * vy + 1e-9), 0, 1)
        dist = np.hypot(xx - (x0 + t * vx), yy - (y0 + t * vy))
        img = np.maximum(img, np.clip(1.6 + rng.uniform(-0.3, 0.3) - dist, 0, 1))
    img += rng.normal(0, 0.15, img.shape)
    return np.clip(img * 255, 0, 255).astype(np.uint8)


def idx_bytes(array):
    code = {np.uint8: 0x08}[array.dtype.type]
    head = struct.pack(">BBBB", 0, 0, code, array.ndim) + struct.pack(f">{array.ndim}I",
                                                                   *array.shape)
    return head + array.astype(">u1").tobytes()


def write_mnist(root, n_train=500, n_test=200, seed=0, folder="MNIST", gz=True):
    """Write the four IDX files under ``root/<folder>/raw/``; returns the raw folder."""
    rng = np.random.default_rng(seed)
    templates = [_strokes(rng) for _ in range(10)]
    raw = os.path.join(root, folder, "raw")
    os.makedirs(raw, exist_ok=True)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        labels = rng.integers(0, 10, n).astype(np.uint8)
        images = np.stack([_draw(templates[k], rng) for k in labels])
        for kind, array in (("images-idx3", images), ("labels-idx1", labels)):
            name = os.path.join(raw, f"{prefix}-{kind}-ubyte")
            data = idx_bytes(array)
            if gz:
                with gzip.open(name + ".gz", "wb") as f:
                    f.write(data)
            else:
                with open(name, "wb") as f:
                    f.write(data)
    return raw
