"""Tuners: the search loop, and the grid and random searches.

A tuner proposes configs of a task (``next_batch``), learns from their measurements
(``update``) and keeps the best so far. ``tune`` is the loop: propose a batch of
``measure_option.n_parallel`` configs, measure them in worker processes, update, call the
callbacks; stop after ``n_trial`` trials, when the space is exhausted, or after
``early_stopping`` trials without a better config. ``load_history(log)`` first learns from
trials measured before, so that a search resumes where a log left off.
"""
from __future__ import annotations

import random

from .check import check_int
from .measure import MeasureInput, MeasureOption, default_executor, measure_batch
from .record import as_records, fitting_index
from .template import Task, canonical_target


class Tuner:
    """The search loop; subclasses say which configs to try next."""

    def __init__(self, task, seed=None):
        if not isinstance(task, Task):
            raise TypeError(f"{type(self).__name__}: task must be a tune.Task, got {task!r} "
                            "(make one with tune.Task(template_name, args, target=...))")
        self.task = task
        self.space = task.space
        self.rng = random.Random(seed)
        self.visited: set[int] = set()
        self.best_config = None
        self.best_cost = float("inf")
        self.trial_count = 0
        self.error_count = 0
        self.n_trial = 0

    def next_batch(self, batch_size):
        """Up to ``batch_size`` configs not measured yet."""
        raise NotImplementedError

    def update(self, inputs, results):
        """Learn from measured configs; the default learns nothing."""

    def load_history(self, records):
        """Learn from trials measured before (a log path, or records from ``load_records``), as
        AutoTVM's ``tuner.load_history``: their configs are not measured again and the best of
        them is the best so far. Records of other workloads or targets are ignored; those that
        do not fit this task's space are skipped with a warning. Returns the number used."""
        inputs, results = [], []
        target = canonical_target(self.task.target)
        for rec in as_records(records, f"{type(self).__name__}.load_history"):
            if rec.workload != self.task.workload or canonical_target(rec.target) != target:
                continue
            index = fitting_index(self.space, rec, f"{type(self).__name__}.load_history")
            if index is None:
                continue
            config = self.space.get(index)
            self.visited.add(index)
            if rec.result.cost < self.best_cost:
                self.best_cost, self.best_config = rec.result.cost, config
            inputs.append(MeasureInput(self.task, config))
            results.append(rec.result)
        if inputs:
            self.update(inputs, results)
        return len(inputs)

    def has_next(self):
        return len(self.visited) < len(self.space)

    @property
    def best_flops(self):
        """The best config's FLOP/s; 0 when nothing ran or the task counts no FLOP (then
        ``best_cost``, the run time in seconds, is the measure)."""
        if not self.task.flop or self.best_cost == float("inf"):
            return 0.0
        return self.task.flop / self.best_cost

    def tune(self, n_trial, measure_option=None, callbacks=(), early_stopping=None):
        """Measure up to ``n_trial`` configs; returns the best config (None if all failed)."""
        owner = f"{type(self).__name__}.tune"
        n_trial = check_int(owner, "n_trial", n_trial, 1, " (the number of configs to measure)")
        if early_stopping is not None:
            early_stopping = check_int(owner, "early_stopping", early_stopping, 1,
                                       " (trials without a better config) or None")
        if measure_option is not None and not isinstance(measure_option, MeasureOption):
            raise TypeError(f"{owner}: measure_option must be a tune.MeasureOption or None, got "
                            f"{measure_option!r}")
        callbacks = list(callbacks)
        for callback in callbacks:
            if not callable(callback):
                raise TypeError(f"{owner}: callbacks must be callables cb(tuner, inputs, "
                                f"results), got {callback!r}")
        option = measure_option or MeasureOption()
        executor = option.executor or default_executor(option)
        self.n_trial = self.trial_count + n_trial
        best_at = self.trial_count
        try:
            while self.trial_count < self.n_trial and self.has_next():
                configs = self.next_batch(min(option.n_parallel, self.n_trial - self.trial_count))
                if not configs:
                    break
                self.visited.update(c.index for c in configs)
                results = measure_batch(self.task, configs, option, executor)
                inputs = [MeasureInput(self.task, c) for c in configs]
                for config, result in zip(configs, results):
                    self.trial_count += 1
                    self.error_count += not result.ok
                    if result.cost < self.best_cost:
                        self.best_cost, self.best_config = result.cost, config
                        best_at = self.trial_count
                self.update(inputs, results)
                for callback in callbacks:
                    callback(self, inputs, results)
                if early_stopping is not None and self.trial_count - best_at >= early_stopping:
                    break
        finally:
            if option.executor is None:
                executor.shutdown(wait=True)
            for callback in callbacks:
                if hasattr(callback, "close"):
                    callback.close()
        return self.best_config

    def _random_unvisited(self, taken=()):
        """A random index that is neither visited nor in ``taken``, or None if none is left."""
        n = len(self.space)
        used = len(self.visited) + len(taken)
        if used < n // 2:
            while True:
                index = self.rng.randrange(n)
                if index not in self.visited and index not in taken:
                    return index
        rest = [i for i in range(n) if i not in self.visited and i not in taken]
        return self.rng.choice(rest) if rest else None


class GridSearchTuner(Tuner):
    """Every config in index order."""

    def __init__(self, task, seed=None):
        super().__init__(task, seed)
        self._next = 0

    def next_batch(self, batch_size):
        configs = []
        while len(configs) < batch_size and self._next < len(self.space):
            if self._next not in self.visited:
                configs.append(self.space.get(self._next))
            self._next += 1
        return configs


class RandomTuner(Tuner):
    """Configs drawn uniformly at random, without repeats."""

    def next_batch(self, batch_size):
        picked = []
        for _ in range(batch_size):
            index = self._random_unvisited(picked)
            if index is None:
                break
            picked.append(index)
        return [self.space.get(i) for i in picked]
