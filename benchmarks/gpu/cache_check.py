"""On a machine with an NVIDIA GPU: the GPU compile cache across processes. Two fresh processes
build and run the same kernels (nn's Linear forward and a Conv2d forward) with one new
TW_CACHE_DIR; the second should load numba's cached machine code instead of compiling.

    python benchmarks/gpu/cache_check.py
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = """
import time
t0 = time.perf_counter()
import numpy as np
from numba import cuda
from nn.ops import conv, cpu_matmul, gpu
dense = gpu.build(cpu_matmul.dense, [(1024, 1024), (1024, 1024), (1024,)])
a = cuda.to_device(np.ones((1024, 1024), np.float32))
dense(a, a, cuda.to_device(np.ones(1024, np.float32)))
conv2d = gpu.build(conv.conv2d, [(8, 64, 28, 28), (64, 64, 3, 3)], padding=(1, 1, 1, 1))
conv2d(cuda.to_device(np.ones((8, 64, 28, 28), np.float32)),
       cuda.to_device(np.ones((64, 64, 3, 3), np.float32)))
cuda.synchronize()
print(f"{time.perf_counter() - t0:.1f}")
"""


def main():
    with tempfile.TemporaryDirectory() as cache_dir:
        env = dict(os.environ, TW_CACHE_DIR=cache_dir, NUMBA_ENABLE_CUDASIM="0",
                   PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        times = []
        for run in ("cold", "warm"):
            proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                                  text=True, timeout=600)
            if proc.returncode:
                print(proc.stdout[-2000:], proc.stderr[-3000:])
                sys.exit(f"{run} run failed")
            times.append(float(proc.stdout.split()[-1]))
            print(f"{run} process: build + first run of 2 nn kernels {times[-1]:.1f} s", flush=True)
        cached = sum(len(files) for _, _, files in os.walk(os.path.join(cache_dir, "cuda")))
        print(f"warm / cold = {times[1] / times[0]:.2f}; {cached} files in the cache")


if __name__ == "__main__":
    main()
