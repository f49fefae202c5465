"""The kernels of a training step on the GPU, compiled to PTX for sm_90 without a GPU.

    python tests/nn/gpu_kernels.py record FILE    # numba's simulator: run a small CNN's
                                                  # training step, recording every GPU build,
                                                  # and emit each as it would be for a real GPU
    python tests/nn/gpu_kernels.py compile FILE   # NUMBA_ENABLE_CUDASIM=0: compile those
                                                  # kernels to PTX

Recording does not run the kernels (outputs are zeros): only the declarations, shapes and
parameters matter. The real-GPU builds differ from the simulated ones (tile sizes, cross-thread
and cross-block reductions), which is why they are compiled here: NVVM rejects what the
simulator accepts. (Tensors on "cuda" need the simulator without a GPU, and the simulator
cannot compile: hence two processes, the sources passing between them in FILE.)
"""
import os
import pickle
import sys
import time

MODE, FILE = sys.argv[1], sys.argv[2]
os.environ["NUMBA_ENABLE_CUDASIM"] = "1" if MODE == "record" else "0"
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import numpy as np  # noqa: E402

import nn  # noqa: E402
from nn.ops import gpu  # noqa: E402


def record():
    from numba import cuda
    builds = []
    real_build = gpu._build

    def recording(declare, shapes, dtypes, params):
        builds.append((declare, shapes, dtypes, params))
        return real_build(declare, shapes, dtypes, params)

    def outputs_only(self, *arrays):          # the simulator would take minutes
        outs = tuple(cuda.to_device(np.zeros(s or (1,), d))
                     for s, d in zip(self.out_shapes, self.out_dtypes))
        outs = tuple(o if s else o.reshape(()) for o, s in zip(outs, self.out_shapes))
        return outs if self.multiple else outs[0]
    gpu._build = recording
    gpu.GpuOpFunction.__call__ = outputs_only
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Flatten(), nn.Linear(16 * 2 * 2, 20), nn.BatchNorm1d(20), nn.ReLU(),
        nn.AlphaDropout(0.4), nn.Linear(20, 10)).cuda()
    optimizer = nn.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
    x = nn.randn(4, 1, 10, 10).cuda()
    y = nn.tensor([1, 2, 3, 4]).cuda()
    loss = nn.CrossEntropyLoss()(model(x), y) + model(x).softmax(1).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    # one build per operator: other shapes of it make the same kernels with other constants
    unique = list({build[0].__name__: build for build in reversed(builds)}.values())[::-1]
    sources = [real_gpu_source(*build) for build in unique]
    with open(FILE, "wb") as f:
        pickle.dump(sources, f)
    print(f"{len(unique)} GPU builds recorded")


def real_gpu_source(declare, shapes, dtypes, params):
    """(name, kernel source, kernels) of a build as ``gpu.build`` makes it on a real GPU."""
    import codegen_cuda.emit as emit
    import te
    from codegen_llvm import _shape_vars
    saved = (gpu.simulator, emit.simulator, emit.jit_takes_launch_bounds,
             emit.shared_takes_alignment)
    gpu.simulator = emit.simulator = lambda: False
    emit.jit_takes_launch_bounds = emit.shared_takes_alignment = lambda: True
    try:
        s, args, *_ = gpu.declare_for_gpu(declare, shapes, dtypes, params)
        func = te.lower(s, args, target="cuda")
        source, kernels, _ = emit.emit_source(func, _shape_vars(func))
    finally:
        (gpu.simulator, emit.simulator, emit.jit_takes_launch_bounds,
         emit.shared_takes_alignment) = saved
    return f"{declare.__name__} {shapes}", source, kernels


def compile_all():
    from codegen_cuda import kernels_ptx
    from codegen_cuda.module import _load
    with open(FILE, "rb") as f:
        sources = pickle.load(f)
    total = 0
    for name, source, kernels in sources:
        t0 = time.perf_counter()
        ptx = kernels_ptx(_load(source, "op"), kernels, cc=(9, 0))
        assert ptx.count(".entry") == len(kernels), name
        total += len(kernels)
        print(f"{name}: {len(kernels)} kernel(s), {time.perf_counter() - t0:.1f} s", flush=True)
    print(f"{total} kernels of {len(sources)} builds compiled to PTX")


if __name__ == "__main__":
    record() if MODE == "record" else compile_all()
