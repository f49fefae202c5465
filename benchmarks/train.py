"""One training step of the digits CNN (tutorials/09_training.py) next to PyTorch, in one run.

A step is zero_grad, forward, CrossEntropyLoss, backward and an Adam step, on a batch of 50
images of 1x32x32. Both frameworks start from the same weights and see the same batch; the
script checks that the first step's losses agree (with dropout off for that step, as the two
draw different masks), then times steps in interleaved rounds
(tensorweave, torch, again) and prints the median time per step and the ratio (> 1:
tensorweave is faster), on 1 and 2 threads.

    python benchmarks/train.py [--threads 1 2] [--rounds 7] [--batch 50]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from bench_util import measure, torch  # first: puts the repository on sys.path
import te
import nn
import nn.optim


def build(lib):
    """The tutorial's network in ``lib`` (nn or torch.nn)."""
    return lib.Sequential(
        lib.Conv2d(1, 32, 3), lib.ReLU(), lib.MaxPool2d(2, 2),
        lib.Conv2d(32, 64, 3), lib.ReLU(), lib.MaxPool2d(2, stride=1),
        lib.Flatten(),
        lib.Linear(64 * 12 * 12, 200), lib.BatchNorm1d(200), lib.ReLU(),
        lib.AlphaDropout(0.4), lib.Linear(200, 10))


def same_weights(ours, theirs):
    """Copy tensorweave's initial weights into the torch model."""
    state = {k: torch.from_numpy(np.array(v.detach().numpy())) for k, v in
             ours.state_dict().items()}
    theirs.load_state_dict(state)


def step_fn(model, loss_fn, opt, x, y):
    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--batch", type=int, default=50)
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    x_np = rng.uniform(0, 1, (args.batch, 1, 32, 32)).astype("float32")
    y_np = rng.integers(0, 10, args.batch)
    nn.manual_seed(0)
    ours = build(nn)
    x, y = nn.tensor(x_np), nn.tensor(y_np)
    ours_step = step_fn(ours, nn.CrossEntropyLoss(),
                        nn.optim.Adam(ours.parameters(), lr=5e-4, weight_decay=1e-4), x, y)
    cands = {"tensorweave": ours_step}
    if torch is not None:
        theirs = build(torch.nn)
        same_weights(ours, theirs)
        tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np)
        theirs_step = step_fn(theirs, torch.nn.CrossEntropyLoss(),
                              torch.optim.Adam(theirs.parameters(), lr=5e-4,
                                               weight_decay=1e-4), tx, ty)
        ours[-2].eval(), theirs[-2].eval()    # no dropout for the comparison: masks differ
        a, b = ours_step().item(), theirs_step().item()
        ours[-2].train(), theirs[-2].train()
        assert abs(a - b) <= 1e-3 * max(1.0, abs(b)), f"first-step losses differ: {a} vs {b}"
        print(f"first step loss: tensorweave {a:.5f}, torch {b:.5f}")
        cands["torch"] = theirs_step
    t0 = time.perf_counter()
    ours_step()
    print(f"warm-up (kernels compiled or loaded from the cache): "
          f"{time.perf_counter() - t0:.2f} s")

    print(f"\none training step, batch {args.batch} x 1x32x32, medians of {args.rounds} "
          "rounds")
    print(f"{'threads':>7}  {'tensorweave ms':>14}  {'torch ms':>9}  {'ratio':>6}")
    for threads in args.threads:
        te.set_num_threads(threads)
        if torch is not None:
            torch.set_num_threads(threads)
        med = measure(cands, args.rounds, budget_s=0.15)
        ours_ms = med["tensorweave"] * 1e3
        if torch is not None:
            theirs_ms = med["torch"] * 1e3
            print(f"{threads:>7}  {ours_ms:>14.2f}  {theirs_ms:>9.2f}  "
                  f"{theirs_ms / ours_ms:>6.2f}")
        else:
            print(f"{threads:>7}  {ours_ms:>14.2f}  {'-':>9}  {'-':>6}")


if __name__ == "__main__":
    main()
