"""Data-parallel training over MPI on this machine, and nn.distributed's all_reduce against
raw mpi4py.

1. Step time of a small CNN (SyncBatchNorm + DistributedDataParallel, SGD with momentum) on a
   global batch of ``--batch`` samples: 1 rank x 2 threads (the whole batch, parallel
   kernels) against 2 ranks x 1 thread (half the batch each, gradients all-reduced), with
   1 rank x 1 thread as the reference. On a machine shared with other work (a load average
   above the core count) both parallel forms wait for descheduled threads or ranks: quote
   ratios from one run, and the load average it prints.
2. all_reduce (SUM, float32) bandwidth on 2 ranks for buffers of 64 KB to 64 MB: through
   ``nn.distributed.all_reduce`` on an nn tensor, and ``comm.Allreduce(MPI.IN_PLACE, a)`` of
   mpi4py on the very same numpy buffer, interleaved; the overhead is the ratio of the
   medians (the target: under 10% from 4 MB up). Times are the slowest rank's per round.

    python benchmarks/distributed.py [--batch 32] [--steps 10] [--rounds 7]

The script starts its own MPI jobs with the venv's mpiexec (``--worker`` runs one part inside
a job). Prints medians, ratios, the CPU and the thread counts.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from bench_util import ROOT, cpu_name

SIZES = (64 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20)


# ----------------------------------------------------------------------------- inside a job

def _slowest(dist, seconds):
    """The largest of the ranks' ``seconds``."""
    import nn
    t = nn.tensor(np.array([seconds]))
    dist.all_reduce(t, dist.ReduceOp.MAX)
    return float(t.numpy()[0])


def worker_step(args):
    import nn
    import nn.distributed as dist
    from nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    nn.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32),
                        nn.ReLU(), nn.Conv2d(32, 32, 3, stride=2, padding=1),
                        nn.BatchNorm2d(32), nn.ReLU(), nn.Flatten(), nn.Linear(32 * 8 * 8, 10))
    model = DDP(nn.SyncBatchNorm.convert_sync_batchnorm(net))
    opt = nn.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(rank)
    local = args.batch // size
    x = nn.tensor(rng.standard_normal((local, 3, 32, 32)).astype("float32"))
    y = nn.tensor(rng.integers(0, 10, local))

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    for _ in range(2):                              # compiles every kernel
        step()
    times = []
    for _ in range(args.steps):
        dist.barrier()
        t0 = time.perf_counter()
        step()
        times.append(_slowest(dist, time.perf_counter() - t0))
    if rank == 0:
        print(json.dumps({"ranks": size, "step_s": statistics.median(times)}), flush=True)
    dist.destroy_process_group()


def worker_bandwidth(args):
    import nn
    import nn.distributed as dist
    from mpi4py import MPI
    dist.init_process_group("mpi")
    comm = MPI.COMM_WORLD
    rows = []
    for nbytes in SIZES:
        array = np.ones(nbytes // 4, np.float32)
        tensor = nn.from_numpy(array)               # the same memory as ``array``
        assert np.shares_memory(tensor._data, array)
        number = max(2, min(50, (16 << 20) // nbytes * 4))

        def ours():
            dist.all_reduce(tensor)

        def raw():
            comm.Allreduce(MPI.IN_PLACE, array, op=MPI.SUM)
        times = {"nn": [], "mpi4py": []}
        for fn in (ours, raw):
            fn()
        for _ in range(args.rounds):
            for name, fn in (("nn", ours), ("mpi4py", raw)):
                comm.Barrier()
                t0 = time.perf_counter()
                for _ in range(number):
                    fn()
                times[name].append(_slowest(dist, (time.perf_counter() - t0) / number))
        rows.append({"bytes": nbytes, **{k: statistics.median(v) for k, v in times.items()}})
    if comm.Get_rank() == 0:
        print(json.dumps(rows), flush=True)
    dist.destroy_process_group()


# ----------------------------------------------------------------------------- the driver

def run_job(ranks, threads, part, args):
    from nn.distributed.run import find_mpiexec
    env = dict(os.environ, TW_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               PYTHONPATH=ROOT)
    cmd = [find_mpiexec(), "-n", str(ranks), sys.executable, os.path.abspath(__file__),
           "--worker", part, "--batch", str(args.batch), "--steps", str(args.steps),
           "--rounds", str(args.rounds)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if out.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--worker", choices=("step", "bandwidth"), default=None)
    args = parser.parse_args()
    if args.worker == "step":
        return worker_step(args)
    if args.worker == "bandwidth":
        return worker_bandwidth(args)
    print(f"CPU: {cpu_name()}, {os.cpu_count()} logical cores, load average "
          f"{os.getloadavg()[0]:.1f}; float32")
    serial = run_job(1, 1, "step", args)
    one = run_job(1, 2, "step", args)
    two = run_job(2, 1, "step", args)
    print(f"\ntraining step, global batch {args.batch} (CNN 3-16-32-32 on 32x32, SyncBatchNorm"
          f" + DDP), median of {args.steps} steps:")
    print(f"  1 rank  x 1 thread : {serial['step_s'] * 1e3:8.1f} ms   (reference)")
    print(f"  1 rank  x 2 threads: {one['step_s'] * 1e3:8.1f} ms")
    print(f"  2 ranks x 1 thread : {two['step_s'] * 1e3:8.1f} ms   "
          f"(2 ranks / 1 rank x 2 threads: {two['step_s'] / one['step_s']:.2f}x the time)")
    rows = run_job(2, 1, "bandwidth", args)
    print(f"\nall_reduce SUM float32 on 2 ranks, median of {args.rounds} interleaved rounds "
          "(algorithm bandwidth = bytes / time):")
    print(f"  {'size':>8}  {'nn.distributed':>16}  {'raw mpi4py':>16}  overhead")
    for row in rows:
        size = row["bytes"]
        label = f"{size >> 20} MB" if size >= 1 << 20 else f"{size >> 10} KB"
        print(f"  {label:>8}  {size / row['nn'] / 1e9:10.2f} GB/s  "
              f"{size / row['mpi4py'] / 1e9:10.2f} GB/s  {row['nn'] / row['mpi4py'] - 1:+7.1%}")


if __name__ == "__main__":
    main()
