"""SubMConv3d 32 -> 32, 3x3x3, on a 1 x 128^3 grid at 1% and 5% occupancy: nn.spconv next to
spconv 2.x's CPU build (same weights, same sites) and next to our dense nn.Conv3d.

Rulebook construction is timed apart from the convolution (both libraries reuse a rulebook
through an ``indice_key``, as networks do). The dense Conv3d at 128^3 (113 GFLOP and 0.5 GB
of activations) is timed once; ``--dense-grid`` sets a smaller grid whose time is scaled
by the volume instead. Peak memory: the largest numpy allocation total during a call
(tracemalloc; nn's arrays are numpy's, the buffer of products between the GEMM and the
scatter included), for our sparse and dense convolutions.

    python benchmarks/sparse_conv.py [--threads 2] [--rounds 7] [--dense-grid 64]
"""
from __future__ import annotations

import argparse
import os
import time
import tracemalloc

import numpy as np

from bench_util import cpu_name, measure  # first: puts the repository on sys.path


def sites(grid, occupancy, kind, rng):
    """(N, 4) int32 sites: uniform random cells, or points on random spheres (surfaces)."""
    n = int(grid ** 3 * occupancy)
    if kind == "uniform":
        lin = rng.choice(grid ** 3, n, replace=False)
    else:
        cells = set()
        while len(cells) < n:
            c = rng.uniform(0.2, 0.8, 3) * grid
            r = rng.uniform(0.1, 0.3) * grid
            v = rng.standard_normal((4 * n // 8 + 1, 3))
            p = c + r * v / np.linalg.norm(v, axis=1, keepdims=True)
            p = np.clip(p.astype(np.int64), 0, grid - 1)
            cells.update(((p[:, 0] * grid + p[:, 1]) * grid + p[:, 2]).tolist())
        lin = np.array(sorted(cells))[:n]
        lin = rng.permutation(lin)
    z, rem = np.divmod(lin, grid * grid)
    y, x = np.divmod(rem, grid)
    return np.stack([np.zeros(n, np.int64), z, y, x], 1).astype(np.int32)


def peak_bytes(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--grid", type=int, default=128)
    ap.add_argument("--dense-grid", type=int, default=64)
    ap.add_argument("--kinds", default="uniform,surface")
    args = ap.parse_args()
    os.environ.setdefault("TW_NUM_THREADS", str(args.threads))
    import torch
    import spconv.pytorch as spt
    from spconv.pytorch import ops as spt_ops
    from spconv.core import ConvAlgo
    import nn
    import nn.spconv as sp
    from nn.spconv.functions import sparse_conv
    from nn.spconv.rulebook import build_rulebook
    torch.set_num_threads(args.threads)
    print(f"CPU: {cpu_name()}; threads: {args.threads} (torch {torch.get_num_threads()})")
    rng = np.random.default_rng(0)
    G, C = args.grid, 32
    layer = sp.SubMConv3d(C, C, 3, padding=1, bias=False, indice_key="subm")
    ref = spt.SubMConv3d(C, C, 3, padding=1, bias=False, indice_key="subm")
    ref.weight.data = torch.from_numpy(layer.weight._data.copy())

    # dense reference: our Conv3d on a grid of --dense-grid, scaled to the full volume
    D = args.dense_grid
    dense = nn.Conv3d(C, C, 3, padding=1, bias=False)
    xd = nn.tensor(np.random.default_rng(1).standard_normal((1, C, D, D, D)).astype("float32"))
    with nn.no_grad():
        dense(xd)
        t0 = time.perf_counter()
        dense(xd)
        t_dense = (time.perf_counter() - t0) * (G / D) ** 3
        dense_peak = peak_bytes(lambda: dense(xd))
    print(f"dense nn.Conv3d 32->32 3x3x3 on 1x{D}^3: {t_dense * (D / G) ** 3 * 1e3:.1f} ms"
          + (f", scaled to {G}^3: {t_dense * 1e3:.0f} ms" if D != G else "")
          + f"; peak {dense_peak / 2**20:.0f} MiB (at {D}^3)")
    print(f"{'sites':>22} {'N':>7} {'pairs':>8} {'rulebook ms (ours/spconv)':>26} "
          f"{'conv ms ours':>12} {'spconv':>8} {'x spconv':>9} {'x dense':>8} {'peak MiB':>9}")
    for kind in args.kinds.split(","):
        for occ in (0.01, 0.05):
            idx = sites(G, occ, kind, rng)
            n = idx.shape[0]
            feats = rng.standard_normal((n, C)).astype("float32")
            book, _ = build_rulebook(idx, 1, [G] * 3, [3] * 3, [1] * 3, [1] * 3, [1] * 3,
                                     subm=True)
            ti = torch.from_numpy(idx)

            def ours_book():
                build_rulebook(idx, 1, [G] * 3, [3] * 3, [1] * 3, [1] * 3, [1] * 3, subm=True)

            def ref_book():
                spt_ops.get_indice_pairs(ti, 1, [G] * 3, ConvAlgo.Native, [3] * 3, [1] * 3,
                                         [1] * 3, [1] * 3, [0] * 3, True, False)
            tb = measure({"ours": ours_book, "spconv": ref_book}, 3)
            x = nn.tensor(feats)
            w = layer.weight.detach()
            xr = spt.SparseConvTensor(torch.from_numpy(feats), ti, [G] * 3, 1)
            with torch.no_grad():
                yr = ref(xr)         # builds and keeps spconv's rulebook under "subm"
            yr = yr.replace_feature(torch.from_numpy(feats))

            def ours():
                with nn.no_grad():
                    return sparse_conv(x, w, None, book)

            def spconv_run():
                with torch.no_grad():
                    return ref(yr)
            # spconv 2.3.8's CPU build is not deterministic on more than one thread (its
            # scatter-add races: runs are off by O(1) now and then): the values are checked
            # against it on one thread, and its multi-threaded runs' differences shown
            got = ours()._data
            torch.set_num_threads(1)
            err = float(np.abs(got - spconv_run().features.numpy()).max())
            torch.set_num_threads(args.threads)
            errs = [float(np.abs(got - spconv_run().features.numpy()).max()) for _ in range(3)]
            t = measure({"ours": ours, "spconv": spconv_run}, args.rounds)
            from nn.spconv import functions as spf
            spf.empty_cache()               # the products buffer counts in the peak
            peak = peak_bytes(ours)
            print(f"{kind + f' {occ:.0%}':>22} {n:>7} {book.num_pairs:>8} "
                  f"{tb['ours'] * 1e3:>12.1f} / {tb['spconv'] * 1e3:<11.1f} "
                  f"{t['ours'] * 1e3:>12.2f} {t['spconv'] * 1e3:>8.2f} "
                  f"{t['spconv'] / t['ours']:>9.2f} {t_dense / t['ours']:>8.0f} "
                  f"{peak / 2**20:>9.1f}   (max |ours - spconv 1 thread| {err:.1e}"
                  + (f"; spconv on {args.threads} threads: "
                     f"{', '.join(f'{e:.1e}' for e in errs)})" if max(errs) > 1e-4 else ")"))


if __name__ == "__main__":
    main()
