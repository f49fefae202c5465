"""One training step of the digits CNN (tutorials/09_training.py) next to PyTorch, in one run.

A step is zero_grad, forward, CrossEntropyLoss, backward and an Adam step, on a batch of 50
images of 1x32x32. Both frameworks start from the same weights and see the same batch; the
script checks that the first step's losses agree (with dropout off for that step, as the two
draw different masks), then times steps in interleaved rounds
(tensorweave, torch, again) and prints the median time per step and the ratio (> 1:
tensorweave is faster), on 1 and 2 threads.

    python benchmarks/train.py [--threads 1 2] [--rounds 7] [--batch 50] [--profile]

``--profile`` then prints where one tensorweave step goes, per operator: its forward calls
(``Function.apply``) and backward nodes, each timed exclusive of the operators it calls,
split into the time inside compiled kernels and the Python around them (the per-op
overhead), and the optimizer's step and zero_grad.
"""
from __future__ import annotations

import argparse
import collections
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


class Profile:
    """Exclusive wall time per operator (forward Functions, backward nodes, the optimizer),
    and the time inside compiled kernels, by patching the entry points for its duration."""

    def __init__(self):
        self.total = collections.Counter()      # exclusive seconds per label
        self.kernel = collections.Counter()     # kernel seconds per label
        self.calls = collections.Counter()
        self.stack = []                         # [label, child seconds, kernel seconds]

    def _timed(self, label, fn, *args, **kwargs):
        self.stack.append([label, 0.0, 0.0])
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            dt = time.perf_counter() - t0
            _, child, kern = self.stack.pop()
            self.total[label] += dt - child
            self.kernel[label] += kern
            self.calls[label] += 1
            if self.stack:
                self.stack[-1][1] += dt

    def _kernel(self, fn, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            if self.stack:
                self.stack[-1][2] += time.perf_counter() - t0

    def run(self, step, steps):
        from nn import autograd
        from nn.ops import cpu as cpu_ops
        import nn.optim.optimizer as optimizer
        prof = self
        saved = (autograd.Function.apply, autograd.BackwardNode.apply,
                 cpu_ops.OpFunction.__call__, optimizer.Optimizer.step,
                 optimizer.Optimizer.zero_grad)
        f_apply = autograd.Function.apply.__func__
        b_apply, k_call, o_step, o_zero = saved[1:]
        # optimizers with a step of their own (Adam's multi-tensor one)
        subclasses, todo = [], list(optimizer.Optimizer.__subclasses__())
        while todo:
            cls = todo.pop()
            todo += cls.__subclasses__()
            if "step" in cls.__dict__:
                subclasses.append((cls, cls.__dict__["step"]))

        def own_step(original):
            def run(opt, *a, **k):
                return prof._timed(f"{type(opt).__name__}.step", original, opt, *a, **k)
            return run

        def apply(cls, *args):
            return prof._timed(cls.__name__, f_apply, cls, *args)

        def node_apply(node, *grads):
            return prof._timed(type(node).__name__, b_apply, node, *grads)

        def kernel_call(f, *args, **kwargs):
            return prof._kernel(k_call, f, *args, **kwargs)

        def opt_step(opt, *a, **k):
            return prof._timed(f"{type(opt).__name__}.step", o_step, opt, *a, **k)

        def opt_zero(opt, *a, **k):
            return prof._timed(f"{type(opt).__name__}.zero_grad", o_zero, opt, *a, **k)
        autograd.Function.apply = classmethod(apply)
        autograd.BackwardNode.apply = node_apply
        cpu_ops.OpFunction.__call__ = kernel_call
        optimizer.Optimizer.step = opt_step
        optimizer.Optimizer.zero_grad = opt_zero
        for cls, original in subclasses:
            cls.step = own_step(original)
        try:
            t0 = time.perf_counter()
            for _ in range(steps):
                self._timed("(step: Python outside operators)", step)
            wall = (time.perf_counter() - t0) / steps
        finally:
            (autograd.Function.apply, autograd.BackwardNode.apply, cpu_ops.OpFunction.__call__,
             optimizer.Optimizer.step, optimizer.Optimizer.zero_grad) = saved
            for cls, original in subclasses:
                cls.step = original
        return wall

    def table(self, steps, wall):
        rows = sorted(self.total, key=lambda k: -self.total[k])
        out = [f"{'operator':<36} {'calls':>5} {'ms/step':>8} {'kernel ms':>9} "
               f"{'overhead us/call':>16}", "-" * 78]
        over_total = 0.0
        for k in rows:
            calls = self.calls[k] / steps
            tot, kern = self.total[k] / steps, self.kernel[k] / steps
            over = (tot - kern) / max(calls, 1e-9)
            over_total += tot - kern
            out.append(f"{k:<36} {calls:>5.0f} {tot * 1e3:>8.3f} {kern * 1e3:>9.3f} "
                       f"{over * 1e6:>16.1f}")
        kern_total = sum(self.kernel.values()) / steps
        out.append("-" * 78)
        out.append(f"{'step (profiled)':<36} {'':>5} {wall * 1e3:>8.3f} {kern_total * 1e3:>9.3f} "
                   f"{'':>16}")
        out.append(f"Python outside kernels: {over_total * 1e3:.3f} ms/step "
                   f"({100 * over_total / wall:.0f}% of the profiled step; the profiler's own "
                   "timing adds to it)")
        return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--no-foreach", action="store_true",
                    help="tensorweave's Adam one kernel per parameter (default: one "
                         "multi-tensor kernel, foreach=True; torch's Adam runs its CPU "
                         "default either way)")
    ap.add_argument("--profile", action="store_true",
                    help="print a per-operator profile of one tensorweave step")
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    x_np = rng.uniform(0, 1, (args.batch, 1, 32, 32)).astype("float32")
    y_np = rng.integers(0, 10, args.batch)
    nn.manual_seed(0)
    ours = build(nn)
    x, y = nn.tensor(x_np), nn.tensor(y_np)
    ours_step = step_fn(ours, nn.CrossEntropyLoss(),
                        nn.optim.Adam(ours.parameters(), lr=5e-4, weight_decay=1e-4,
                                      foreach=not args.no_foreach), x, y)
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
    if args.profile:
        te.set_num_threads(args.threads[0])
        steps = 10
        prof = Profile()
        wall = prof.run(ours_step, steps)
        print(f"\nprofile of a tensorweave step ({args.threads[0]} thread(s), mean of {steps} "
              "steps; exclusive times):")
        print(prof.table(steps, wall))


if __name__ == "__main__":
    main()
