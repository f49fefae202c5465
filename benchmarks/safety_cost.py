"""What issue 16's bound checks cost: each kernel built with and without them, timed in one run.

1. A gather ``B[i] = A[Idx[i]]`` of 16M elements (int32 indices into a 1M-element table): the
   in-kernel index check (default) vs the same kernel under ``pragma("no_bound_check")``, and
   numpy's ``np.take`` for scale.
2. benchmarks/cpu.py's cases (matmul, conv2d, add, fused, row sum, softmax) built with
   ``schedule.config.BOUND_CHECKS`` on and off: how many call-time preconditions and kernel
   check sites each has, and the median time of both builds.
3. The per-call cost of a precondition: a symbolic-shape stencil ``B[i] = A[i + 1]`` on 1000
   elements, with and without its call-time check.

Candidates are timed in interleaved rounds (medians); ratios are checked / unchecked time
(1.00: free; the target is < 1.05).

    python benchmarks/safety_cost.py [--rounds 9] [--small]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import cpu_name  # noqa: E402  (first: puts the repository on sys.path)

import te  # noqa: E402
from schedule import config  # noqa: E402


def _time(fn, number):
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def _interleaved(cands, rounds, number):
    for fn in cands.values():
        fn()
    times = {k: [] for k in cands}
    for _ in range(rounds):
        for k, fn in cands.items():
            times[k].append(_time(fn, number))
    return {k: statistics.median(v) for k, v in times.items()}


def gather(n, table, rounds):
    m = te.var("m")
    t = te.var("t")
    A = te.placeholder((t,), name="A")
    idx = te.placeholder((m,), name="Idx", dtype="int32")
    fs = {}
    for checked in (True, False):
        B = te.compute((m,), lambda i: A[idx[i]], name="B")
        s = te.create_schedule(B.op)
        o, i = s[B].split(B.op.axis[0], factor=64)
        s[B].parallel(o)
        if not checked:
            s[B].pragma(o, "no_bound_check")
        fs[checked] = te.build(s, [A, idx, B], name=f"gather_{'checked' if checked else 'raw'}")
    assert fs[True].lowered.check_sites and not fs[False].lowered.check_sites
    rng = np.random.default_rng(0)
    a = rng.standard_normal(table, dtype=np.float32)
    ix = rng.integers(0, table, n).astype(np.int32)
    b = np.empty(n, np.float32)
    fs[True](a, ix, b)
    np.testing.assert_array_equal(b, a[ix])
    med = _interleaved({"checked": lambda: fs[True](a, ix, b),
                        "unchecked": lambda: fs[False](a, ix, b),
                        "numpy": lambda: np.take(a, ix, out=b)}, rounds, 3)
    print(f"gather {n >> 20}M from {table >> 20}M (int32 indices, {te.get_num_threads()} "
          f"threads): checked {med['checked'] * 1e3:.2f} ms, unchecked "
          f"{med['unchecked'] * 1e3:.2f} ms, numpy take {med['numpy'] * 1e3:.2f} ms; "
          f"checked/unchecked {med['checked'] / med['unchecked']:.3f}, "
          f"numpy/checked {med['numpy'] / med['checked']:.2f}")


def cpu_cases(small, rounds):
    import cpu as bench_cpu
    from nn.ops import cpu as ops
    rng = np.random.default_rng(0)
    makers = [
        lambda: bench_cpu.case_matmul(*((128, 128, 128) if small else (1024, 1024, 1024)), rng),
        lambda: bench_cpu.case_conv2d(rng),
        lambda: bench_cpu.case_add(1 << (16 if small else 24), rng),
        lambda: bench_cpu.case_fused(1 << (16 if small else 24), rng),
        lambda: bench_cpu.case_row_sum(*((256, 256) if small else (4096, 4096)), rng),
    ]
    if hasattr(bench_cpu, "case_softmax"):
        makers.append(lambda: bench_cpu.case_softmax(*((256, 256) if small else (4096, 1024)),
                                                     rng))
    print(f"{'case':<34} {'pre':>4} {'sites':>5} {'checked ms':>11} {'unchecked ms':>13} "
          f"{'ratio':>6} {'same asm':>9}")
    for make in makers:
        built = {}
        for on in (True, False):
            config.BOUND_CHECKS = on
            ops._build.cache_clear()
            seen = []
            real_build = te.build

            def spy(*a, **k):
                mod = real_build(*a, **k)
                seen.append(mod)
                return mod
            te.build = spy
            try:
                name, _, _, cands = make()
            finally:
                te.build = real_build
            built[on] = (cands["te"], seen)
        config.BOUND_CHECKS = True
        pre = sum(len(getattr(m, "lowered").preconditions) for m in built[True][1]
                  if hasattr(m, "lowered"))
        sites = sum(len(getattr(m, "lowered").check_sites) for m in built[True][1]
                    if hasattr(m, "lowered"))
        # the same machine code with the checks on and off (names aside) makes the time
        # ratio pure noise: say so, the machines are shared
        asm = [[_code(m) for m in built[on][1] if hasattr(m, "get_source")] for on in (1, 0)]
        same = "yes" if asm[0] and asm[0] == asm[1] else "no"
        med = _interleaved({"on": built[True][0], "off": built[False][0]}, rounds, 3)
        print(f"{name:<34} {pre:>4} {sites:>5} {med['on'] * 1e3:>11.3f} "
              f"{med['off'] * 1e3:>13.3f} {med['on'] / med['off']:>6.3f} {same:>9}")


def _code(mod):
    """The module's assembly with its symbol names blanked (checked and unchecked builds
    are named alike but not identically)."""
    import re
    return re.sub(r"[A-Za-z_][A-Za-z0-9_.]*", "N", mod.get_source("asm"))


def call_overhead(rounds):
    fs = {}
    for on in (True, False):
        config.BOUND_CHECKS = on
        n = te.var("n")
        A = te.placeholder((n + 1,), name="A")
        B = te.compute((n,), lambda i: A[i + 1], name="B")
        fs[on] = te.build(te.create_schedule(B.op), [A, B], name=f"shift_{int(on)}")
    config.BOUND_CHECKS = True
    a = np.zeros(1001, np.float32)
    b = np.zeros(1000, np.float32)
    med = _interleaved({"on": lambda: fs[True](a, b), "off": lambda: fs[False](a, b)},
                       rounds, 2000)
    print(f"call of a 1000-element symbolic stencil: with its call-time check "
          f"{med['on'] * 1e6:.2f} us, without {med['off'] * 1e6:.2f} us "
          f"(+{(med['on'] - med['off']) * 1e6:.2f} us)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--small", action="store_true", help="small sizes (a smoke test)")
    args = parser.parse_args()
    print(f"CPU: {cpu_name()}, {os.cpu_count()} cores; numpy {np.__version__}")
    gather(1 << (16 if args.small else 24), 1 << (12 if args.small else 20), args.rounds)
    call_overhead(args.rounds)
    cpu_cases(args.small, args.rounds)


if __name__ == "__main__":
    main()
