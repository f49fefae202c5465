"""The GPU rulebook's kernels (nn/ops/spconv_rulebook_kernels.py) compile to PTX for sm_90 by
NVVM with the argument types nn/spconv/rulebook_gpu.py launches them with: the simulator
accepts what NVVM may reject (typing, atomics). Compiled in a separate process with
NUMBA_ENABLE_CUDASIM=0 (no GPU is needed for PTX; the
device functions' compile asks for the current device's compute capability, which the
script answers with sm_90)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import types
from numba import cuda, types as t
from numba.cuda import dispatcher
# device functions (the hash probe) are compiled for the current device: there is none here
dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
from nn.ops import spconv_rulebook_kernels as k
i32, i64 = t.int32[::1], t.int64[::1]
i32x2, i64x2 = t.int32[:, ::1], t.int64[:, ::1]
n = t.int64
SIGS = {
    "site_keys": [(i32x2, i64, n, i64, i32)],
    "insert_sites": [(i64, i64, i32, n, i32)],
    "insert_keys": [(i64x2, i64, n, i64, i32)],
    "subm_pairs": [(i32x2, i64, i64x2, i64, i64, i64, i32, n, i32x2)],
    "conv_candidates": [(i32x2, i64, i64x2, i64, i64, i64, t.boolean, i64x2)],
    "bitonic_step": [(i64, n, n)],
    "set_rank": [(i64, n, i64, i32, n)],
    "decode": [(i64, i64, i32x2)],
    "conv_scatter": [(i64x2, i64, i32, n, i32x2)],
    "fill": [(i32, n), (i64, n)],
    "count_segments": [(i32x2, n, i32x2)],
    "scan_segments": [(i32x2, i64)],
    "write_pairs": [(i32x2, n, i32x2, i64, i32, i32)],
    "clamp0": [(i32, i32)],
    "slot_count": [(i32, i32)],
    "max_of": [(i32, i32)],
    "slot_fill": [(i32, i32, i32x2)],
    "slot_sort": [(i32x2, i32)],
}
kernels = [name for name, f in vars(k).items() if hasattr(f, "py_func") and
           name not in ("slot_of", "find")]
assert sorted(kernels) == sorted(SIGS), (sorted(kernels), sorted(SIGS))
count = 0
for name, sigs in SIGS.items():
    for sig in sigs:
        ptx, _ = cuda.compile_ptx(getattr(k, name).py_func, sig, cc=(9, 0))
        assert ".entry" in ptx, name
        if name.startswith("insert"):
            assert "atom.global.cas.b64" in ptx, name
        count += 1
print(count, "kernels compiled")
"""


@pytest.mark.slow          # ~20 s: NVVM compiles 19 kernels
def test_rulebook_kernels_compile_to_ptx():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, ROOT], capture_output=True,
                          text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "19 kernels compiled" in proc.stdout
