"""What the GPU would run, without a GPU: the GEMM and conv2d benchmark kernels compiled to PTX
(NVVM), then to sm_90 machine code by ptxas; prints registers, spills and shared memory per
thread block, and the instruction mix of the machine code (FFMA against shared/global loads
and barriers). Registers decide how many blocks share an SM; FFMA per shared load is the
arithmetic intensity of the inner loop.

Needs ptxas, cuobjdump and nvdisasm on PATH (the pip wheels nvidia-cuda-nvcc==13.0.*,
nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm hold them under nvidia/cu13/bin):

    PATH=$PWD/nvidia/cu13/bin:$PATH python benchmarks/gpu/sass_report.py
"""
from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "codegen_cuda"))

import te  # noqa: E402
import gpu_cases  # noqa: E402
from codegen_cuda import compile_ptx  # noqa: E402

OPCODE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)")
SHOWN = ("FFMA", "LDS.128", "LDS", "LDG.E.128", "LDG.E", "STS.128", "STS", "BAR.SYNC", "LDL", "STL")


def report(name, schedule, args):
    mod = te.build(schedule, args, target="cuda")
    with tempfile.TemporaryDirectory() as tmp:
        ptx, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        with open(ptx, "w") as f:
            f.write(compile_ptx(mod))
        info = subprocess.run(["ptxas", "-arch=sm_90", "-v", ptx, "-o", cubin],
                              capture_output=True, text=True, check=True).stderr
        sass = subprocess.run(["cuobjdump", "-sass", cubin], capture_output=True, text=True,
                              check=True).stdout
    used = "; ".join(m.strip() for m in re.findall(r"Used ([^\n]*)", info))
    spills = "; ".join(sorted(set(re.findall(r"(\d+ bytes spill stores)", info))))
    ops = collections.Counter(m.split(".DEFER")[0] for m in OPCODE.findall(sass))
    total = sum(ops.values())
    print(f"{name}: {used}; {spills}")
    print("  " + ", ".join(f"{op} {ops[op]}" for op in SHOWN if ops[op]) +
          f"; {total} instructions, FFMA {ops['FFMA'] / max(total, 1):.0%}")


def main():
    missing = [t for t in ("ptxas", "cuobjdump", "nvdisasm") if shutil.which(t) is None]
    if missing:
        sys.exit(f"{', '.join(missing)} not on PATH; see this script's docstring")
    gemm = dict(num_thread=16, vthread=2, per_thread=4, step=16)
    s, args, *_ = gpu_cases.gemm_vthread(M=4096, K=4096, N=4096, **gemm)
    report(f"GEMM 4096^3 {gemm}", s, args)
    s, args, *_ = gpu_cases.nn_dense_padded(M=1000, K=1000, N=1000)
    report("nn dense 1000x1000x1000 + bias (schedule_auto)", s, args)
    conv = dict(batch=256, in_channel=256, out_channel=512, in_size=14, tile=8, num_thread=8,
                step=8, vthread=2)
    s, args, *_ = gpu_cases.conv2d_hwcn(**conv)
    report("conv2d HWCN (TVM GPU tutorial problem)", s, args)


if __name__ == "__main__":
    main()
