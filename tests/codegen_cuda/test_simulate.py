"""codegen_cuda.simulate: the block-at-a-time runner of our kernels on the simulator gives what
numba's thread-per-thread simulator gives, bit for bit, and keeps CUDA's rules for barriers and
shared memory."""
import numpy as np
import pytest

import te
import gpu_cases
from codegen_cuda import simulate, simulator

# cases with barriers and shared memory (cross-thread reductions, tiles, a scan), bit counts
CASES = [gpu_cases.row_sum_cross_thread, gpu_cases.argmax_cross_thread,
         gpu_cases.gemm_shared_local, gpu_cases.gemm_double_buffer, gpu_cases.softmax_rows,
         gpu_cases.scan_cumsum, gpu_cases.reduce_in_a_wider_block, gpu_cases.tvm_intrinsics]


def _run(case, monkeypatch, ours):
    with monkeypatch.context() as m:
        m.setattr(gpu_cases, "RNG", np.random.default_rng(1))     # the same inputs twice
        s, args, ins, outs, _ = case()
        if not ours:
            m.setattr(simulate, "runs_here", lambda source: False)
        mod = te.build(s, args, target="cuda")
        assert isinstance(mod._globals["cuda"], simulate.SimulatedCuda) == ours
        mod(*ins, *outs)
    return outs


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_the_runner_gives_what_numbas_simulator_gives(case, monkeypatch):
    assert simulator()
    ours = _run(case, monkeypatch, True)
    numbas = _run(case, monkeypatch, False)
    for a, b in zip(ours, numbas):
        np.testing.assert_array_equal(a, b)


def _kernel(source, name="k"):
    g = {"np": np, "cuda": simulate.SimulatedCuda()}
    exec(compile(simulate.barriers_as_yields(source), "<test>", "exec"), g)
    return g[name]


def test_a_barrier_waits_for_every_thread_of_the_block():
    """Each thread writes its slot, then (after the barrier) reads its neighbour's: without the
    barrier the first threads would read slots not yet written."""
    k = _kernel("""
@cuda.jit
def k(out):
    tile = cuda.shared.array(8, np.int64)
    t = cuda.threadIdx.x
    tile[t] = (cuda.blockIdx.x + 1) * 100 + t
    cuda.syncthreads()
    out[cuda.blockIdx.x * 8 + t] = tile[(t + 1) % 8]
""")
    out = np.zeros(24, np.int64)
    k[3, 8](out)
    expect = [(b + 1) * 100 + (t + 1) % 8 for b in range(3) for t in range(8)]
    np.testing.assert_array_equal(out, expect)


def test_shared_arrays_are_one_per_block_and_call_site_and_local_arrays_one_per_call():
    k = _kernel("""
@cuda.jit
def k(out):
    a = cuda.shared.array(4, np.int64)
    b = cuda.shared.array(4, np.int64)
    mine = cuda.local.array(1, np.int64)
    t = cuda.threadIdx.x
    if t == 0:
        for i in range(4):
            a[i] = 0
            b[i] = 0
    cuda.syncthreads()
    a[t] = 1
    b[3 - t] = 2
    mine[0] = t
    cuda.syncthreads()
    out[cuda.blockIdx.x, t] = a[t] * 10 + b[t] + mine[0] * 1000
""")
    out = np.zeros((2, 4), np.int64)
    k[(2,), (4,)](out)
    np.testing.assert_array_equal(out, [[12 + 1000 * t for t in range(4)]] * 2)


def test_indices_and_dimensions_in_three_dimensions():
    k = _kernel("""
@cuda.jit
def k(out):
    x = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    y = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    z = cuda.threadIdx.z
    out[z, y, x] = x + 10 * y + 100 * z + 1000 * (cuda.gridDim.x + cuda.gridDim.y)
""")
    out = np.zeros((2, 6, 4), np.int64)
    k[(2, 3, 1), (2, 2, 2)](out)
    z, y, x = np.indices(out.shape)
    np.testing.assert_array_equal(out, x + 10 * y + 100 * z + 5000)


def test_bit_counts_follow_the_width_of_the_value():
    cu = simulate.SimulatedCuda()
    assert cu.clz(np.uint32(1)) == 31 and cu.clz(np.uint64(1)) == 63
    assert cu.clz(np.uint32(0)) == 32 and cu.clz(np.uint64(2 ** 40)) == 23
    assert cu.popc(np.uint64(2 ** 63 + 5)) == 3 and cu.popc(np.uint32(0xFFFFFFFF)) == 32


def test_an_exception_in_a_thread_reaches_the_caller():
    k = _kernel("""
@cuda.jit
def k(out):
    out[cuda.threadIdx.x + 3] = 1
""")
    with pytest.raises(IndexError):
        k[1, 4](np.zeros(4, np.int64))


def test_sources_with_extern_device_functions_stay_on_numbas_simulator():
    assert not simulate.runs_here("import codegen_cuda.emit_calls as _tw_calls\n")
    assert simulate.runs_here("@cuda.jit\ndef k(a):\n    a[0] = 1\n")


def test_grid_atomics_and_device_functions_of_hand_written_kernels():
    """The sparse rulebook's kind of kernel: cuda.grid, a device function, atomic add/max
    returning the old value, and a compare-and-swap insert into a probing table."""
    cu = simulate.SimulatedCuda()

    @cu.jit(device=True)
    def slot(key, mask):
        return (key * 7) & mask

    @cu.jit
    def insert(keys, table, count, biggest, order):
        i = cu.grid(1)
        if i < keys.shape[0]:
            h = slot(keys[i], 7)
            while True:
                old = cu.atomic.cas(table, h, -1, keys[i])
                if old == -1 or old == keys[i]:
                    break
                h = (h + 1) & 7
            order[cu.atomic.add(count, 0, 1)] = i
            cu.atomic.max(biggest, 0, keys[i])

    keys = np.array([3, 11, 3, 5, 19], np.int64)
    table, count = np.full(8, -1, np.int64), np.zeros(1, np.int64)
    biggest, order = np.zeros(1, np.int64), np.full(5, -1, np.int64)
    insert[2, 4](keys, table, count, biggest, order)
    assert sorted(table[table >= 0]) == [3, 5, 11, 19]
    assert count[0] == 5 and biggest[0] == 19 and sorted(order) == list(range(5))
    assert cu.gridsize(1) == 8
