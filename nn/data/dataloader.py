"""DataLoader: batches from a dataset, in the main process or in worker processes, with
torch.utils.data.DataLoader's arguments, argument rules and error messages.

A map-style dataset is read through a sampler (sequential, or random with ``shuffle=True``)
grouped by a ``BatchSampler``; an iterable-style dataset is read in order, each worker iterating
its own copy. With ``num_workers > 0`` the loader hands batches of indices to the workers round
robin, at most ``prefetch_factor`` per worker in flight, and yields the results in sampler order
whatever order they arrive in. A worker's exception is re-raised in the loop with the worker's
traceback; a worker that dies is reported; workers exit when the iteration ends, when the loop
breaks early (the iterator is collected) or, with ``persistent_workers``, with the loader. Each
iteration draws one base seed from ``generator`` (nn's generator when None); worker ``i`` is
seeded with base seed + i (see ``nn.data.worker``).
"""
from __future__ import annotations

import itertools
import multiprocessing
import os
import queue
import time
import warnings

from . import worker as _worker
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, generator_rng

__all__ = ["DataLoader"]

SHUTDOWN_TIMEOUT = 5.0     # seconds the workers get to exit before they are terminated
_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
           "persistent_workers")


class _InfiniteConstantSampler(Sampler):
    """The sampler of an iterable-style dataset: ``None`` forever (the dataset decides the end)."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """Batches of ``dataset``'s samples; see the module docstring and PyTorch's DataLoader."""

    _initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if timeout > 0 and num_workers == 0:
            raise ValueError("timeout option needs num_workers > 0: it bounds the wait for a "
                             "worker's batch")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing. let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        elif prefetch_factor == 0:
            raise ValueError("prefetch_factor option should be positive: each worker needs at "
                             "least one batch in flight")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory        # accepted for PyTorch's scripts; nn has no pinning
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = _context(multiprocessing_context, num_workers)
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        self._initialized = True
        _check_worker_number(num_workers)

    def __setattr__(self, name, value):
        if self._initialized and name in _FROZEN:
            raise ValueError(f"{name} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        """What the iterator draws from: batches of indices, or single indices."""
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if not self.persistent_workers:
            return _MultiProcessIter(self)
        if self._iterator is None:
            self._iterator = _MultiProcessIter(self)
        else:
            self._iterator.reset(self)
        return self._iterator

    def __len__(self):
        if not self._iterable:
            return len(self._index_sampler)
        length = len(self.dataset)
        if self.batch_size is None:
            return length
        return length // self.batch_size if self.drop_last else -(-length // self.batch_size)


def _context(context, num_workers):
    """The multiprocessing context to start workers with (the platform's default when None)."""
    if context is None:
        return None
    if num_workers == 0:
        raise ValueError(f"multiprocessing_context can only be used with multi-process loading "
                         f"(num_workers > 0), but got num_workers={num_workers}")
    if isinstance(context, str):
        methods = multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ValueError(f"multiprocessing_context option should specify a valid start "
                             f"method in {methods!r}, but got multiprocessing_context="
                             f"{context!r}")
        return multiprocessing.get_context(context)
    if not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError(f"multiprocessing_context option should be a valid context object or a "
                        f"string specifying the start method, but got "
                        f"multiprocessing_context={context}")
    return context


def _check_worker_number(num_workers):
    """Warn, as PyTorch does, when asked for more workers than this process may use CPUs."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if num_workers > (usable or 1):
        warnings.warn(f"This DataLoader will create {num_workers} worker processes in total. "
                      f"Our suggested max number of worker in current system is {usable}, which "
                      f"is smaller than what this DataLoader is going to create. Please be aware "
                      f"that excessive worker creation might get DataLoader running slow or even "
                      f"freeze, lower the worker number to avoid potential slowness/freeze if "
                      f"necessary.", stacklevel=3)


class _BaseIter:
    """What both iterators share: the sampler pass and the base seed of this iteration."""

    def __init__(self, loader):
        self._dataset = loader.dataset
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._collate_fn = loader.collate_fn
        self._fetcher_class = _worker.IterableFetcher if loader._iterable else _worker.MapFetcher
        self._start_pass(loader)

    def _start_pass(self, loader):
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = int(generator_rng(loader.generator).integers(0, 2 ** 63))

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._index_sampler)


class _SingleProcessIter(_BaseIter):
    """Fetches each batch in the main process."""

    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = self._fetcher_class(self._dataset, self._auto_collation,
                                            self._collate_fn, self._drop_last)

    def __next__(self):
        return self._fetcher.fetch(next(self._sampler_iter))


class _MultiProcessIter(_BaseIter):
    """Hands batches of indices to worker processes and yields their results in order."""

    _shutdown = True            # until the workers exist, there is nothing to shut down

    def __init__(self, loader):
        super().__init__(loader)
        self._owner = os.getpid()
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor * loader.num_workers
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        context = loader.multiprocessing_context or multiprocessing.get_context()
        self._result_queue = _worker.ResultQueue(ctx=context)
        self._done_event = context.Event()
        self._index_queues, self._workers = [], []
        self._shutdown = False
        try:
            for worker_id in range(self._num_workers):
                index_queue = context.Queue()
                index_queue.cancel_join_thread()
                process = context.Process(
                    target=_worker.worker_loop, daemon=True,
                    args=(self._dataset, self._fetcher_class, index_queue, self._result_queue,
                          self._done_event, self._auto_collation, self._collate_fn,
                          self._drop_last, self._base_seed, loader.worker_init_fn, worker_id,
                          self._num_workers))
                process.start()
                self._index_queues.append(index_queue)
                self._workers.append(process)
        except BaseException:           # e.g. a dataset that "spawn" cannot pickle
            self._shutdown_workers()
            raise
        self._reset_tasks()

    def reset(self, loader):
        """A new pass over the data with the same (persistent) workers."""
        self._start_pass(loader)
        for index_queue in self._index_queues:
            index_queue.put(_worker.ResumeIteration())
        pending = self._num_workers
        while pending:          # drops the results of the previous pass still in flight
            task_id, _ = self._get()
            pending -= isinstance(task_id, _worker.ResumeIteration)
        self._reset_tasks()

    def _reset_tasks(self):
        self._send_id = self._receive_id = 0
        self._tasks = {}            # task id -> [worker id] or [worker id, result]
        self._active = [True] * self._num_workers
        self._next_worker = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch):
            self._put_task()

    def _put_task(self):
        """Send the next batch of indices to the next worker still producing."""
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._next_worker)
            if self._active[worker_id]:
                break
        else:
            return
        self._index_queues[worker_id].put((self._send_id, index))
        self._tasks[self._send_id] = [worker_id]
        self._send_id += 1

    def _get(self):
        """The next ``(task_id, result)`` from any worker; raises if a worker died or, with a
        ``timeout``, if none came in time."""
        waited = 0.0
        while True:
            wait = _worker.STATUS_CHECK_INTERVAL
            if self._timeout > 0:
                wait = min(wait, self._timeout - waited)
            try:
                return self._result_queue.get(timeout=wait)
            except queue.Empty:
                waited += wait
            dead = [w.pid for w in self._workers if not w.is_alive()]
            if dead:
                self._shutdown_workers()
                pids = ", ".join(str(p) for p in dead)
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly")
            if self._timeout > 0 and waited >= self._timeout:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")

    def __next__(self):
        while True:
            while self._receive_id < self._send_id:
                task = self._tasks.get(self._receive_id)
                if task is not None and (len(task) == 2 or self._active[task[0]]):
                    break
                self._tasks.pop(self._receive_id, None)     # its worker ran out of data
                self._receive_id += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            task = self._tasks[self._receive_id]
            if len(task) == 2:
                del self._tasks[self._receive_id]
                return self._deliver(task[1])
            task_id, result = self._get()
            if isinstance(result, _worker.IterableDatasetStopIteration):
                self._active[result.worker_id] = False
                self._put_task()
                continue
            if task_id != self._receive_id:
                self._tasks[task_id].append(result)
                continue
            del self._tasks[task_id]
            return self._deliver(result)

    def _deliver(self, result):
        self._receive_id += 1
        self._put_task()
        if isinstance(result, _worker.ExceptionWrapper):
            result.reraise()
        return result

    def _shutdown_workers(self):
        """Ask every worker to exit, wait a moment, then terminate those still running.

        This may run from ``__del__`` wherever the garbage collector runs: in a queue's feeder
        thread (which then cannot deliver the ``None`` it queues, so workers also watch the
        done event), or in a worker forked while this iterator was garbage (which must leave
        the workers alone: they are not its children)."""
        if self._shutdown or os.getpid() != self._owner:
            return
        self._shutdown = True
        try:
            self._done_event.set()
            for index_queue in self._index_queues:
                index_queue.put(None)
            deadline = time.monotonic() + 12 * _worker.STATUS_CHECK_INTERVAL
            for process in self._workers:
                process.join(timeout=max(deadline - time.monotonic(), 0.0))
            for index_queue in self._index_queues:
                index_queue.close()
            self._result_queue.cancel_join_thread()
            self._result_queue.close()
        finally:
            for process in self._workers:
                if process.is_alive():
                    process.terminate()

    def __del__(self):
        self._shutdown_workers()
