"""Callbacks for ``Tuner.tune``: a progress bar and a JSON-lines log.

A callback is any callable ``cb(tuner, inputs, results)``, called after each measured batch;
if it has a ``close()`` method, ``tune`` calls it when the search ends.
"""
from __future__ import annotations

import sys

from .record import encode

try:
    import tqdm
except ImportError:                    # pragma: no cover - the text bar below stands in
    tqdm = None


def log_to_file(path):
    """A callback that appends one JSON line per trial to ``path``."""
    def write(tuner, inputs, results):
        with open(path, "a", encoding="utf-8") as f:
            for inp, result in zip(inputs, results):
                f.write(encode(inp, result) + "\n")
    return write


def progress_bar(prefix="", use_tqdm=None):
    """A callback that shows trials done, the best speed so far (GFLOP/s, or the run time when
    the task counts no FLOP) and the error count; a tqdm bar when tqdm is installed (or
    ``use_tqdm=True``), else lines of text on stdout."""
    if use_tqdm is None:
        use_tqdm = tqdm is not None
    return _TqdmBar(prefix) if use_tqdm else _TextBar(prefix)


def _status(tuner):
    if tuner.best_flops:
        best = f"best {tuner.best_flops / 1e9:.2f} GFLOP/s"
    elif tuner.best_config is not None:
        best = f"best {tuner.best_cost * 1e3:.4g} ms"
        if not tuner.task.flop:
            best += " (no FLOP counted: cfg.add_flop(n) in the template gives GFLOP/s)"
    else:
        best = "no result yet"
    return f"{best}, {tuner.error_count} errors"


class _TqdmBar:
    def __init__(self, prefix):
        self.prefix = prefix
        self.bar = None

    def __call__(self, tuner, inputs, results):
        if self.bar is None:
            self.bar = tqdm.tqdm(total=tuner.n_trial, desc=self.prefix or tuner.task.name,
                                 unit="trial", initial=tuner.trial_count - len(results))
        self.bar.set_postfix_str(_status(tuner), refresh=False)
        self.bar.update(len(results))

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class _TextBar:
    def __init__(self, prefix, stream=None):
        self.prefix = prefix
        self.stream = stream or sys.stdout
        self.printed_at = None
        self.last = ""

    def __call__(self, tuner, inputs, results):
        step = max(1, tuner.n_trial // 10)
        self.last = (f"{self.prefix or tuner.task.name}: {tuner.trial_count}/{tuner.n_trial} "
                     f"trials, {_status(tuner)}")
        if self.printed_at is None or tuner.trial_count - self.printed_at >= step:
            print(self.last, file=self.stream, flush=True)
            self.printed_at = tuner.trial_count

    def close(self):
        if self.last:
            print(self.last + " (done)", file=self.stream, flush=True)
        self.printed_at, self.last = None, ""
