"""Measuring tuning candidates on a Dask cluster (``distributed``).

``DaskExecutor(client)`` is a ``concurrent.futures.Executor`` over a ``distributed.Client``:
``MeasureOption(executor=DaskExecutor(client), n_parallel=k)`` (or simply
``executor=client``, which ``measure_batch`` wraps in one) sends each candidate's
``run_candidate`` call to a Dask worker, where it is built, checked and timed in an isolated
``python -m nn.tune.worker`` process of that worker's machine, exactly as the local executor
does; results and records are the same. Tasks are submitted with ``pure=False`` (a candidate
measured twice is run twice, never taken from Dask's cache). For honest timings give each
machine's workers one thread (``dask worker --nthreads 1``) or a resource that one candidate
holds (``resources={"measure": 1}``), so that candidates do not share cores.
"""
from __future__ import annotations

from concurrent.futures import Executor

__all__ = ["DaskExecutor", "is_dask_client", "as_executor"]


def is_dask_client(obj) -> bool:
    """Whether ``obj`` is a ``distributed.Client`` (without importing distributed)."""
    return any(c.__name__ == "Client" and c.__module__.startswith("distributed")
               for c in type(obj).__mro__)


class DaskExecutor(Executor):
    """A ``concurrent.futures.Executor`` that runs calls on the workers of ``client``;
    ``resources`` (a dict) is passed with every task."""

    def __init__(self, client, resources=None):
        if not is_dask_client(client):
            raise TypeError(f"DaskExecutor: client must be a distributed.Client, got "
                            f"{type(client).__name__} (pip install -e \".[distributed]\" "
                            "brings dask and distributed)")
        self.client = client
        self.resources = resources
        self._executor = client.get_executor(pure=False, resources=resources)

    def submit(self, fn, /, *args, **kwargs):
        """Run ``fn(*args, **kwargs)`` on a worker; a concurrent.futures.Future of it."""
        return self._executor.submit(fn, *args, **kwargs)

    def shutdown(self, wait=True, *, cancel_futures=False):
        """Stop accepting calls (waiting for the submitted ones when ``wait``); the client
        stays open: it is the caller's."""
        self._executor.shutdown(wait=wait)

    def __repr__(self):
        return f"DaskExecutor({self.client!r})"


def as_executor(executor):
    """``executor``, with a ``distributed.Client`` wrapped in a ``DaskExecutor``."""
    return DaskExecutor(executor) if is_dask_client(executor) else executor
