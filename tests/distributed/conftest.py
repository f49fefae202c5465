"""The MPI tests: collected only inside an MPI job of two or more processes
(``mpiexec -n 2 python -m pytest tests/distributed -n 0 -p no:cacheprovider``), where every
process runs the same tests in the same order and the default process group spans them. In
an ordinary ``pytest`` run this directory collects nothing (the single-process and 3-rank
checks live in tests/nn/test_distributed_*.py). A test that fails on one rank aborts the
whole MPI job (after printing its report), since the other ranks would wait forever in their
next collective."""
import os
import sys

import pytest


def mpi_world_size() -> int:
    """The size of the MPI job this process belongs to, from the launcher's environment
    (MPICH/Hydra sets PMI_SIZE, Open MPI OMPI_COMM_WORLD_SIZE), without initializing MPI."""
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE"):
        if os.environ.get(name):
            return int(os.environ[name])
    return 1


if mpi_world_size() < 2:
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session", autouse=True)
def world():
    """The default process group for the whole session; (rank, world size)."""
    import nn.distributed as dist
    os.environ.setdefault("TW_NUM_THREADS", "1")
    dist.init_process_group("mpi")
    yield dist.get_rank(), dist.get_world_size()
    dist.barrier()
    dist.destroy_process_group()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        from mpi4py import MPI
        rank = MPI.COMM_WORLD.Get_rank()
        sys.stderr.write(f"\n[rank {rank}] {report.nodeid} failed ({report.when}):\n"
                         f"{report.longreprtext}\n[rank {rank}] aborting the MPI job\n")
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)
