"""What the benchmark scripts share: the repository on ``sys.path`` (importing this module
puts it there, so that the scripts run from a checkout without installing), PyTorch when it is
installed (``torch`` is None otherwise), timing: medians over interleaved rounds, and the
CPU's name for the printed headers."""
from __future__ import annotations

import os
import platform
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

try:
    import torch
except ImportError:
    torch = None


def per_call(fn, number):
    """Seconds per call of ``fn`` over ``number`` calls."""
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def measure(cands, rounds, budget_s=0.05, settle_s=0.0):
    """Median seconds per call of each candidate, over interleaved rounds (every candidate
    sees the same load on a shared machine). Each timing repeats a candidate for about
    ``budget_s``, after a pause of ``settle_s``."""
    numbers = {}
    for name, fn in cands.items():
        fn()
        numbers[name] = max(1, int(budget_s / max(per_call(fn, 1), 1e-7)))
    times = {name: [] for name in cands}
    for _ in range(rounds):
        for name, fn in cands.items():
            time.sleep(settle_s)
            times[name].append(per_call(fn, numbers[name]))
    return {name: statistics.median(t) for name, t in times.items()}


def cpu_name(llvm=False):
    """The CPU's model name (/proc/cpuinfo); with ``llvm``, LLVM's name for it (its -mcpu)
    after it in parentheses."""
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    model = model or platform.processor() or "unknown CPU"
    if llvm:
        import llvmlite.binding as binding
        return f"{model} ({binding.get_host_cpu_name()})"
    return model
