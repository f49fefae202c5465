"""te.topi's x86 default schedules next to its generic ones, numpy and PyTorch.

For a broadcast add, a fused elementwise chain, a whole-tensor sum, a row softmax and a small
convolution, the operator is declared once with ``te.topi`` and built with
``topi.generic.schedule_*`` (the declaration's own loop nest) and ``topi.x86.schedule_*``
(parallel outer loops, vectorized inner axes, rfactor for the sum); each is timed against
numpy and PyTorch on the same arrays, medians of interleaved rounds.

    python benchmarks/topi_schedules.py [--rounds 5] [--small]
"""
from __future__ import annotations

import argparse

import numpy as np

from bench_util import cpu_name, measure, torch  # first: puts the repository on sys.path
import te
from te import topi


def cases(small):
    n = 256 if small else 1024
    A, B = te.placeholder((n, n), name="A"), te.placeholder((n,), name="B")
    a, b = np.random.rand(n, n).astype("float32"), np.random.rand(n).astype("float32")
    ta, tb = (torch.tensor(a), torch.tensor(b)) if torch else (None, None)
    yield ("add (n,n)+(n,)", topi.add(A, B), [A, B], [a, b], "schedule_injective",
           lambda: a + b, (lambda: ta + tb) if torch else None)
    chain = topi.multiply(topi.exp(topi.add(A, B)), 0.5)
    yield ("exp(a+b)*0.5", chain, [A, B], [a, b], "schedule_injective",
           lambda: np.exp(a + b) * 0.5, (lambda: torch.exp(ta + tb) * 0.5) if torch else None)
    m = n * n
    V = te.placeholder((m,), name="V")
    v = np.random.rand(m).astype("float32")
    tv = torch.tensor(v) if torch else None
    yield ("sum (n*n,)", topi.sum(V), [V], [v], "schedule_reduce", lambda: v.sum(),
           (lambda: tv.sum()) if torch else None)
    yield ("softmax rows", topi.nn.softmax(A), [A], [a], "schedule_softmax",
           lambda: np.exp(a - a.max(1, keepdims=True)) /
           np.exp(a - a.max(1, keepdims=True)).sum(1, keepdims=True),
           (lambda: torch.softmax(ta, -1)) if torch else None)
    c, h = (8, 28) if small else (16, 56)
    X, W = te.placeholder((1, c, h, h), name="X"), te.placeholder((c, c, 3, 3), name="W")
    x, w = np.random.rand(1, c, h, h).astype("float32"), np.random.rand(c, c, 3, 3).astype(
        "float32")
    tx, tw = (torch.tensor(x), torch.tensor(w)) if torch else (None, None)
    yield ("conv2d 3x3", topi.nn.conv2d_nchw(X, W, 1, 1, 1), [X, W], [x, w],
           "schedule_conv2d_nchw", None,
           (lambda: torch.nn.functional.conv2d(tx, tw, padding=1)) if torch else None)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--threads", type=int, default=0, help="0: te's default")
    args = parser.parse_args()
    if args.threads:
        te.set_num_threads(args.threads)
        if torch:
            torch.set_num_threads(args.threads)
    print(f"CPU: {cpu_name()}; threads: {te.get_num_threads()}; medians of {args.rounds} "
          "interleaved rounds")
    print(f"{'operator':18s} {'generic ms':>10s} {'x86 ms':>8s} {'x86/generic':>11s} "
          f"{'numpy ms':>9s} {'torch ms':>9s}")
    for name, out, ins, arrays, sched, np_fn, torch_fn in cases(args.small):
        result = np.empty([int(d) for d in out.shape], dtype=out.dtype)
        cands = {}
        for family in ("generic", "x86"):
            f = te.build(getattr(getattr(topi, family), sched)(out), ins + [out])
            cands[family] = (lambda f=f: f(*arrays, result))
        if np_fn is not None:
            cands["numpy"] = np_fn
        if torch_fn is not None:
            cands["torch"] = torch_fn
        t = measure(cands, args.rounds)
        ms = {k: v * 1e3 for k, v in t.items()}
        print(f"{name:18s} {ms['generic']:10.3f} {ms['x86']:8.3f} "
              f"{ms['generic'] / ms['x86']:10.1f}x {ms.get('numpy', float('nan')):9.3f} "
              f"{ms.get('torch', float('nan')):9.3f}")


if __name__ == "__main__":
    main()
