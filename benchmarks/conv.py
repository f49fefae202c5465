"""3x3 stride-1 convolutions: the direct convolution, Winograd F(2x2, 3x3) and F(4x4, 3x3),
the default choice (``conv2d_nchw`` with no algorithm) and PyTorch, timed in one run.

The table is what ``nn.ops.cpu_winograd.default_tile``'s cost model was fitted to; ``auto``
should be within noise of the fastest tensorweave column. Every result is checked against
PyTorch (or numpy) first.

    python benchmarks/conv.py [--threads 2] [--rounds 7]
"""
from __future__ import annotations

import argparse

import numpy as np

from bench_util import measure, torch  # first: puts the repository on sys.path
import te
from nn.ops import cpu
from cpu import _conv_numpy

# (images, channels, size, output channels)
SHAPES = [(1, 64, 56, 64), (1, 128, 28, 128), (1, 256, 14, 256), (8, 256, 14, 256),
          (1, 512, 7, 512), (50, 32, 16, 32), (50, 16, 32, 32)]
ALGORITHMS = {"direct": dict(algorithm="direct"), "wino2": dict(algorithm="winograd", tile=2),
              "wino4": dict(algorithm="winograd", tile=4), "auto": {}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    te.set_num_threads(args.threads)
    if torch is not None:
        torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    names = list(ALGORITHMS) + (["torch"] if torch is not None else [])
    print(f"{args.threads} threads, median ms over {args.rounds} rounds; last column: "
          "torch / auto (> 1: tensorweave is faster)")
    print(f"{'N x C x HxW -> F':<22}" + "".join(f"{n:>9}" for n in names) + f"{'ratio':>8}")
    for n, c, size, f in SHAPES:
        x = rng.standard_normal((n, c, size, size), dtype=np.float32)
        w = rng.standard_normal((f, c, 3, 3), dtype=np.float32)
        out = te.nd.aligned_empty((n, f, size, size), "float32")
        want = (torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1)
                .numpy() if torch is not None else _conv_numpy(x, w, 1))
        cands = {}
        for name, params in ALGORITHMS.items():
            fn = cpu.build(cpu.conv2d_nchw, [x.shape, w.shape], padding=1, **params)
            fn(x, w, out=out)
            np.testing.assert_allclose(out, want, rtol=1e-3, atol=2e-3 * np.abs(want).max())
            cands[name] = (lambda fn: lambda: fn(x, w, out=out))(fn)
        if torch is not None:
            tx, tw = torch.from_numpy(x), torch.from_numpy(w)
            cands["torch"] = lambda: torch.nn.functional.conv2d(tx, tw, padding=1)
        res = measure(cands, args.rounds)
        ratio = f"{res['torch'] / res['auto']:8.2f}" if "torch" in res else ""
        print(f"{f'{n}x{c}x{size}x{size} -> {f}':<22}"
              + "".join(f"{res[k] * 1e3:9.3f}" for k in names) + ratio, flush=True)


if __name__ == "__main__":
    main()
