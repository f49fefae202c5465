"""The schedule ladder of TVM's "How to optimize GEMM on CPU", timed against numpy.

For C = A @ B with float32 matrices (1024 by default), each step prints its compile time
(``te.build``), its median run time, GFLOP/s and its speed relative to numpy's ``a @ b``
measured in the same run. Medians over several repeats, because shared machines are noisy.

    python benchmarks/gemm_ladder.py [--size 1024] [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import te

BN = 32          # block size of the tiled steps
KFACTOR = 4      # split factor of the reduction


def _plain(size):
    k = te.reduce_axis((0, size), "k")
    A = te.placeholder((size, size), name="A")
    B = te.placeholder((size, size), name="B")
    C = te.compute((size, size), lambda m, n: te.sum(A[m, k] * B[k, n], axis=k), name="C")
    return A, B, C


def _packed(size):
    k = te.reduce_axis((0, size), "k")
    A = te.placeholder((size, size), name="A")
    B = te.placeholder((size, size), name="B")
    packedB = te.compute((size // BN, size, BN),
                         lambda bigN, k, littleN: B[k, bigN * BN + littleN], name="packedB")
    C = te.compute((size, size),
                   lambda m, n: te.sum(A[m, k] * packedB[n // BN, k, n % BN], axis=k),
                   name="C")
    return A, B, C, packedB


def baseline(size):
    A, B, C = _plain(size)
    return te.create_schedule(C.op), [A, B, C]


def _blocked(size, permute, vectorize):
    A, B, C = _plain(size)
    s = te.create_schedule(C.op)
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], BN, BN)
    ko, ki = s[C].split(s[C].op.reduce_axis[0], factor=KFACTOR)
    if permute:
        s[C].reorder(mo, no, ko, mi, ki, ni)
    else:
        s[C].reorder(mo, no, ko, ki, mi, ni)
    if vectorize:
        s[C].vectorize(ni)
    return s, [A, B, C]


def blocking(size):
    return _blocked(size, permute=False, vectorize=False)


def vectorization(size):
    return _blocked(size, permute=False, vectorize=True)


def loop_permutation(size):
    return _blocked(size, permute=True, vectorize=True)


def _schedule_packing(s, packedB):
    bigN, _, littleN = s[packedB].op.axis
    s[packedB].vectorize(littleN)
    s[packedB].parallel(bigN)


def array_packing(size):
    A, B, C, packedB = _packed(size)
    s = te.create_schedule(C.op)
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], BN, BN)
    ko, ki = s[C].split(s[C].op.reduce_axis[0], factor=KFACTOR)
    s[C].reorder(mo, no, ko, mi, ki, ni)
    s[C].vectorize(ni)
    _schedule_packing(s, packedB)
    return s, [A, B, C]


def _write_cache(size, parallel):
    A, B, C, packedB = _packed(size)
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], BN, BN)
    s[CC].compute_at(s[C], no)
    mc, nc = s[CC].op.axis
    ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=KFACTOR)
    s[CC].reorder(ko, mc, ki, nc)
    s[CC].vectorize(nc)
    s[CC].unroll(ki)
    if parallel:
        s[C].parallel(mo)
    _schedule_packing(s, packedB)
    return s, [A, B, C]


def write_cache(size):
    return _write_cache(size, parallel=False)


def parallel(size):
    return _write_cache(size, parallel=True)


LADDER = [("baseline", baseline), ("blocking", blocking), ("vectorization", vectorization),
          ("loop permutation", loop_permutation), ("array packing", array_packing),
          ("write cache", write_cache), ("parallel", parallel)]


def _numpy_median(a, b, repeat):
    a @ b
    times = []
    for _ in range(repeat):
        number = 5
        t0 = time.perf_counter()
        for _ in range(number):
            a @ b
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def _step_timings(func, a, b, c, repeat, once):
    # a slow step gets fewer runs: about 0.2 s per repeat, and one repeat past 2 s a run
    number = max(1, min(20, int(0.2 / max(once, 1e-9))))
    timer = func.time_evaluator(func.entry_name, te.cpu(0), number=number,
                                repeat=1 if once > 2.0 else repeat)
    return timer(a, b, c)


def _warm_up_compiler():
    """Build a tiny function so that LLVM's one-time setup is not charged to the first step."""
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    te.build(te.create_schedule(B.op), [A, B], target="llvm")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024, help="M = K = N (a multiple of 32)")
    parser.add_argument("--repeat", type=int, default=5, help="timed repeats per step")
    args = parser.parse_args()
    size = args.size
    if size % BN:
        parser.error(f"--size must be a multiple of {BN}")

    rng = np.random.default_rng(0)
    a = rng.random((size, size), dtype=np.float32)
    b = rng.random((size, size), dtype=np.float32)
    expected = a @ b
    flops = 2.0 * size ** 3

    _warm_up_compiler()
    print(f"GEMM {size}x{size}x{size} float32; {te.get_num_threads()} threads for parallel "
          f"loops; load average {os.getloadavg()[0]:.2f}")
    header = (f"{'step':<18}{'build s':>9}{'median s':>11}{'min s':>10}{'GFLOP/s':>9}"
              f"{'numpy s':>10}{'vs numpy':>10}")
    print(header)
    print("-" * len(header))
    np_times = []
    for label, make in LADDER:
        s, tensors = make(size)
        t0 = time.perf_counter()
        func = te.build(s, tensors, target="llvm", name="mmult")
        build_time = time.perf_counter() - t0
        c = np.zeros((size, size), np.float32)
        t0 = time.perf_counter()
        func(a, b, c)
        once = time.perf_counter() - t0
        np.testing.assert_allclose(c, expected, rtol=1e-4)
        timings = _step_timings(func, a, b, c, args.repeat, once)
        median = timings.median
        # numpy is timed right after each step, so that both see the same load on the machine
        # (after, not before: OpenBLAS's idle threads spin for a while and would steal a core
        # from the step's parallel loops)
        np_time = _numpy_median(a, b, args.repeat)
        np_times.append(np_time)
        print(f"{label:<18}{build_time:>9.3f}{median:>11.5f}{timings.min:>10.5f}"
              f"{flops / median / 1e9:>9.2f}{np_time:>10.5f}{np_time / median:>10.3f}")
    np_time = statistics.median(np_times)
    print("-" * len(header))
    print(f"{'numpy a @ b':<18}{'':>9}{np_time:>11.5f}{min(np_times):>10.5f}"
          f"{flops / np_time / 1e9:>9.2f}")
    print(f"GFLOP/s from the median; 'vs numpy' is numpy's median / the step's median "
          f"(1.0 = as fast as numpy), with numpy "
          f"timed just after the step;\nnumpy's medians ranged {min(np_times):.5f}-"
          f"{max(np_times):.5f} s; load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
