"""``BenchmarkResult``: the timings of ``time_evaluator``, as TVM's runtime returns them."""
from __future__ import annotations

import statistics


class BenchmarkResult:
    """Timings in seconds, like TVM's ``time_evaluator`` result."""

    def __init__(self, results):
        self.results = tuple(results)
        self.mean = statistics.fmean(self.results)
        self.median = statistics.median(self.results)
        self.min = min(self.results)
        self.max = max(self.results)
        self.std = statistics.pstdev(self.results) if len(self.results) > 1 else 0.0

    def __repr__(self):
        return (f"BenchmarkResult(mean={self.mean:.6g} s, median={self.median:.6g} s, "
                f"std={self.std:.3g} s, repeats={len(self.results)})")
