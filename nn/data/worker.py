"""What runs inside a DataLoader worker process, and the messages it exchanges with the loader.

A worker reads ``(task_id, indices)`` from its own index queue, fetches and collates the batch,
and puts ``(task_id, batch)`` on the result queue shared by all workers. A failure is sent back
as an ``ExceptionWrapper`` carrying the exception type and its traceback text, which the loader
re-raises; an iterable dataset that runs out sends ``IterableDatasetStopIteration``. ``None``
asks a worker to exit; ``ResumeIteration`` starts a new epoch (persistent workers). Each worker
seeds Python's ``random``, numpy's legacy global generator and nn's generator from the loader's
base seed plus its id, and runs compiled kernels on one thread (a forked OpenMP pool is unusable).
"""
from __future__ import annotations

import dataclasses
import multiprocessing.queues
import os
import queue
import random
import sys
import traceback

import numpy as np

from ..tensor import manual_seed

__all__ = ["WorkerInfo", "get_worker_info"]

STATUS_CHECK_INTERVAL = 0.25       # seconds between checks that the other side is still alive


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    """What ``get_worker_info()`` tells code running in a worker: its ``id`` (0 ..
    ``num_workers`` - 1), the ``seed`` it was given and its copy of the ``dataset``."""
    id: int
    num_workers: int
    seed: int
    dataset: object


_worker_info = None


def get_worker_info():
    """This worker's ``WorkerInfo``, or None in the main process."""
    return _worker_info


class ExceptionWrapper:
    """An exception caught in a worker, sent to the loader as its type (RuntimeError when the
    type cannot be pickled by name, e.g. a class defined in a function) and traceback text."""

    def __init__(self, where):
        exc_type, exc, _ = sys.exc_info()
        module = sys.modules.get(exc_type.__module__)
        importable = getattr(module, exc_type.__qualname__, None) is exc_type
        self.exc_type = exc_type if importable else RuntimeError
        self.type_name = exc_type.__name__
        self.where = where
        self.text = "".join(traceback.format_exception(exc_type, exc, exc.__traceback__))

    def reraise(self):
        """Raise the exception again in the loader, its message the worker's traceback."""
        message = f"Caught {self.type_name} {self.where}.\nOriginal {self.text}"
        try:
            error = self.exc_type(message)
        except Exception:
            raise RuntimeError(message) from None
        raise error


class ResultQueue(multiprocessing.queues.Queue):
    """The queue workers put ``(task_id, result)`` on. A result that cannot be pickled is
    replaced by the pickling error, so that the loader raises it instead of waiting forever
    for a batch that the queue's feeder thread dropped."""

    def _on_queue_feeder_error(self, error, obj):
        self.put((obj[0], ExceptionWrapper("in a DataLoader worker process, sending a batch to "
                                           "the main process (it must be picklable)")))


@dataclasses.dataclass(frozen=True)
class IterableDatasetStopIteration:
    """The worker's copy of an iterable dataset is exhausted."""
    worker_id: int


@dataclasses.dataclass(frozen=True)
class ResumeIteration:
    """Start a new epoch: recreate the fetcher, then echo this message back."""


class MapFetcher:
    """Reads a map-style dataset at the given index (or list of indices) and collates
    (``drop_last`` is the BatchSampler's business here; taken for a common signature)."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation = dataset, auto_collation
        self.collate_fn = collate_fn

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        many = getattr(self.dataset, "__getitems__", None)
        data = many(index) if callable(many) else [self.dataset[i] for i in index]
        return self.collate_fn(data)


class IterableFetcher:
    """Reads the next sample (or ``len(index)`` samples) of an iterable dataset; raises
    StopIteration when it is exhausted (or leaves a short batch with ``drop_last``)."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.iterator = iter(dataset)
        self.auto_collation, self.drop_last = auto_collation, drop_last
        self.collate_fn = collate_fn

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        data = []
        for _ in index:
            try:
                data.append(next(self.iterator))
            except StopIteration:
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def seed_worker(base_seed, worker_id):
    """Seed ``random``, numpy's global generator and nn's generator; returns the seed."""
    seed = base_seed + worker_id
    random.seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(4))
    manual_seed(seed)
    return seed


def worker_loop(dataset, fetcher_class, index_queue, result_queue, done_event, auto_collation,
                collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers):
    """The body of a worker process (see the module docstring)."""
    global _worker_info
    codegen = sys.modules.get("codegen_llvm")
    if codegen is not None:     # the parent may have started OpenMP's pool, unusable after fork
        codegen.set_num_threads(1)
    parent = os.getppid()
    try:
        seed = seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
        init_error, fetcher = None, None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = fetcher_class(dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = ExceptionWrapper(f"in DataLoader worker process {worker_id}")
        ended = False
        while os.getppid() == parent:
            try:
                message = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if done_event.is_set():     # the None sent after it may never come (see
                    break                   # DataLoader's shutdown), so the event suffices
                continue
            if message is None:
                break
            if isinstance(message, ResumeIteration):
                result_queue.put((message, None))
                ended = False
                if init_error is None:
                    fetcher = fetcher_class(dataset, auto_collation, collate_fn, drop_last)
                continue
            if done_event.is_set() or ended:
                continue
            task_id, index = message
            if init_error is not None:
                data = init_error               # this worker cannot load: say why, each time
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as error:
                    if isinstance(error, StopIteration) and fetcher_class is IterableFetcher:
                        data, ended = IterableDatasetStopIteration(worker_id), True
                    else:
                        data = ExceptionWrapper(f"in DataLoader worker process {worker_id}")
            result_queue.put((task_id, data))
            del data, index, message            # free the batch while waiting for the next
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        result_queue.cancel_join_thread()
        result_queue.close()
