"""``python -m nn.distributed.run -n 4 train.py [args]``: start ``train.py`` in 4 processes
with the ``mpiexec`` of this Python's environment (the mpich wheel's), as ``torchrun`` starts
a script. Each process gets ``TW_NUM_THREADS`` = cores // processes unless it is set, so the
ranks of one machine do not oversubscribe its cores. ``--hosts a,b`` spreads the ranks over
machines (mpiexec's ``-hosts``; each needs the same environment and paths).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys


def find_mpiexec() -> str:
    """The ``mpiexec`` next to this Python (a virtual environment's), else the one on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(here, os.X_OK):
        return here
    found = shutil.which("mpiexec")
    if found is None:
        raise FileNotFoundError("nn.distributed.run: no mpiexec found next to "
                                f"{sys.executable} or on PATH; install it with "
                                "pip install -e \".[distributed]\" (the mpich wheel)")
    return found


def command(argv=None) -> tuple[list, dict]:
    """The mpiexec command line and environment for the launcher's arguments."""
    parser = argparse.ArgumentParser(prog="python -m nn.distributed.run",
                                     description="Run a script in N MPI processes.")
    parser.add_argument("-n", "--nproc-per-node", "--nproc_per_node", dest="n", type=int,
                        default=1, help="number of processes")
    parser.add_argument("--hosts", default=None, help="comma-separated host names")
    parser.add_argument("--threads", type=int, default=None,
                        help="TW_NUM_THREADS of each process (default: cores // n)")
    parser.add_argument("-m", dest="module", action="store_true",
                        help="run the target as a module (python -m)")
    parser.add_argument("script", help="the script (or module with -m)")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    if ns.n < 1:
        parser.error(f"-n must be at least 1, got {ns.n}")
    env = dict(os.environ)
    threads = ns.threads or max(1, (os.cpu_count() or 1) // ns.n)
    if ns.threads is not None or "TW_NUM_THREADS" not in env:
        env["TW_NUM_THREADS"] = str(threads)
    cmd = [find_mpiexec(), "-n", str(ns.n)]
    if ns.hosts:
        cmd += ["-hosts", ns.hosts]
    cmd += [sys.executable] + (["-m"] if ns.module else []) + [ns.script] + ns.args
    return cmd, env


def main(argv=None):
    cmd, env = command(argv)
    os.execvpe(cmd[0], cmd, env)


if __name__ == "__main__":
    main()
