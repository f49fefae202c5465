"""Compile every GPU test case's kernels to PTX for sm_90 (run without the simulator)."""
import os
import sys

os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import te  # noqa: E402
from codegen_cuda import compile_ptx  # noqa: E402
import gpu_cases  # noqa: E402


def main():
    for case in gpu_cases.CASES:
        s, args, _, _, _ = case()
        mod = te.build(s, args, target="cuda")
        ptx = compile_ptx(mod, cc=(9, 0))
        assert ".target sm_90" in ptx and ".entry" in ptx, case.__name__
        print(f"{case.__name__}: {len(mod.kernels)} kernel(s), {len(ptx)} bytes of PTX")


if __name__ == "__main__":
    main()
