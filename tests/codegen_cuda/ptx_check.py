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
        if case.__name__.startswith("gemm_"):
            # 16-byte aligned shared tiles: a thread's four neighbouring values of a tile row
            # come in one 128-bit load, never in four 32-bit ones
            assert "ld.shared.v4.f32" in ptx or "ld.shared.v2.f32" in ptx, case.__name__
        wide = ptx.count("ld.shared.v4") + ptx.count("ld.shared.v2")
        print(f"{case.__name__}: {len(mod.kernels)} kernel(s), {len(ptx)} bytes of PTX, "
              f"{wide} vector shared loads")


if __name__ == "__main__":
    main()
