"""nn's layers timed next to PyTorch, in one run: conv2d forward and forward + backward
(N=1, 64 -> 64 channels, 56x56, 3x3, padding 1), BatchNorm2d's training forward
(32x64x56x56) and Linear forward + backward (batch 256, 1024 -> 1024).

Both run with the same thread count (``te.set_num_threads`` and ``torch.set_num_threads``),
in interleaved rounds (nn, torch, nn, ...) so that both see the same load on a shared
machine; the table gives medians in milliseconds and torch / nn (> 1: nn is faster). Each
case checks nn's result against torch's first. Gradients are seeded with a fixed tensor
(``y.backward(g)``) and reset to None between calls, in both.

    python benchmarks/layers.py [--threads 1 2] [--rounds 9]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from bench_util import measure  # first: puts the repository on sys.path
import te
import nn
import torch


def _same(a, b, what, tol=2e-3):
    np.testing.assert_allclose(a._data if isinstance(a, nn.Tensor) else a,
                               b.detach().numpy(), rtol=tol, atol=tol, err_msg=what)


def _params(*arrays):
    ours = [nn.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    return ours, theirs


def _forward_backward(fn, params, seed):
    def run():
        for p in params:
            p.grad = None
        fn().backward(seed)
    return run


def case_conv2d(rng, backward):
    x = rng.standard_normal((1, 64, 56, 56), dtype=np.float32)
    w = (rng.standard_normal((64, 64, 3, 3), dtype=np.float32) * 0.05).astype(np.float32)
    b = rng.standard_normal(64, dtype=np.float32)
    g = rng.standard_normal((1, 64, 56, 56), dtype=np.float32)
    (ox, ow, ob), (tx, tw, tb) = _params(x, w, b)

    def ours():
        return nn.functional.conv2d(ox, ow, ob, padding=1)

    def theirs():
        return torch.nn.functional.conv2d(tx, tw, tb, padding=1)
    if not backward:
        with nn.no_grad(), torch.no_grad():
            _same(ours(), theirs(), "conv2d")
        return "conv2d forward", {"nn": nn.no_grad()(ours), "torch": torch.no_grad()(theirs)}
    cands = {"nn": _forward_backward(ours, (ox, ow, ob), nn.tensor(g)),
             "torch": _forward_backward(theirs, (tx, tw, tb), torch.tensor(g))}
    for run in cands.values():
        run()
    for o, t, what in zip((ox, ow, ob), (tx, tw, tb), ("input", "weight", "bias")):
        _same(o.grad, t.grad, f"conv2d grad {what}", tol=5e-3)
    return "conv2d forward+backward", cands


def case_batchnorm(rng):
    if not hasattr(nn, "BatchNorm2d"):
        return "BatchNorm2d training forward", None
    x = rng.standard_normal((32, 64, 56, 56), dtype=np.float32)
    ours, theirs = nn.BatchNorm2d(64), torch.nn.BatchNorm2d(64)
    ours.train(), theirs.train()
    ox, tx = nn.tensor(x), torch.tensor(x)
    with nn.no_grad(), torch.no_grad():
        _same(ours(ox), theirs(tx), "BatchNorm2d")
    return "BatchNorm2d training forward", {"nn": nn.no_grad()(lambda: ours(ox)),
                                            "torch": torch.no_grad()(lambda: theirs(tx))}


def case_linear(rng):
    x = rng.standard_normal((256, 1024), dtype=np.float32)
    g = rng.standard_normal((256, 1024), dtype=np.float32)
    ours, theirs = nn.Linear(1024, 1024), torch.nn.Linear(1024, 1024)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight._data))
        theirs.bias.copy_(torch.tensor(ours.bias._data))
    (ox,), (tx,) = _params(x)
    cands = {"nn": _forward_backward(lambda: ours(ox), (ox, ours.weight, ours.bias),
                                     nn.tensor(g)),
             "torch": _forward_backward(lambda: theirs(tx), (tx, theirs.weight, theirs.bias),
                                        torch.tensor(g))}
    for run in cands.values():
        run()
    _same(ours.weight.grad, theirs.weight.grad, "Linear grad weight", tol=1e-2)
    _same(ox.grad, tx.grad, "Linear grad input", tol=1e-2)
    return "Linear forward+backward", cands


def run(threads, rounds):
    te.set_num_threads(threads)
    torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    print(f"\n== {threads} thread{'s' if threads > 1 else ''} (load average "
          f"{os.getloadavg()[0]:.2f}) ==")
    header = f"{'case':<32}{'nn ms':>10}{'torch ms':>10}{'torch/nn':>10}"
    print(header)
    print("-" * len(header))
    cases = (lambda: case_conv2d(rng, False), lambda: case_conv2d(rng, True),
             lambda: case_batchnorm(rng), lambda: case_linear(rng))
    for make in cases:
        label, cands = make()
        if cands is None:
            print(f"{label:<32}  not available yet (nn.BatchNorm2d is missing)")
            continue
        res = measure(cands, rounds, budget_s=0.1)
        print(f"{label:<32}{res['nn'] * 1e3:>10.3f}{res['torch'] * 1e3:>10.3f}"
              f"{res['torch'] / res['nn']:>10.2f}")
        sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=9, help="interleaved timing rounds")
    args = parser.parse_args()
    print(f"nn (tensorweave) vs torch {torch.__version__}")
    for n in args.threads:
        run(n, args.rounds)


if __name__ == "__main__":
    main()
