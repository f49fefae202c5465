"""GPU kernels on numba's CUDA simulator (a few blocks each), compared with numpy; the same
kernels compiled to PTX for sm_90 in a separate process (the simulator cannot compile)."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import te
import gpu_cases
from codegen_cuda import simulator

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _check(mod, ins, outs, ref, rtol=1e-4, atol=1e-5):
    mod(*ins, *outs)
    expected = ref(*ins)
    expected = expected if isinstance(expected, list) else [expected]
    for o, e in zip(outs, expected):
        np.testing.assert_allclose(o.astype("float64"), e.astype("float64"), rtol=rtol,
                                   atol=atol)


@pytest.mark.parametrize("case", gpu_cases.CASES, ids=lambda c: c.__name__)
def test_case_matches_numpy(case):
    assert simulator(), "these tests run on numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
    s, args, ins, outs, ref = case()
    mod = te.build(s, args, target="cuda")
    assert "@cuda.jit" in mod.get_source()
    _check(mod, ins, outs, ref)


@pytest.mark.slow
def test_every_case_compiles_to_ptx():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    proc = subprocess.run([sys.executable, os.path.join(HERE, "ptx_check.py")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("bytes of PTX") == len(gpu_cases.CASES)


ROW_STACK_GONE = """
import os
os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
import numpy as np
del np.row_stack                # as numpy 2.5, which removed it
import te
from codegen_cuda import compile_ptx
A = te.placeholder((64,), name="A")
B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
s = te.create_schedule(B.op)
s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
print(".entry" in compile_ptx(te.build(s, [A, B], target="cuda"), cc=(9, 0)))
"""


def test_compiles_with_a_numpy_without_row_stack():
    """numba-cuda's CUDA target overloads np.row_stack when it loads; with numpy 2.5 (no
    row_stack) the first compile failed."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    proc = subprocess.run([sys.executable, "-c", ROW_STACK_GONE], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[-1] == "True"


def test_scalar_parameter_before_the_buffers():
    """The kernel arguments follow the calling convention whatever the order of te.build's
    argument list (a scalar first here)."""
    alpha = te.var("alpha", "float32")
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] * alpha, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=4)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    a = np.arange(10, dtype="float32")
    b = np.empty(10, "float32")
    te.build(s, [alpha, A, B], target="cuda")(2.5, a, b)
    np.testing.assert_allclose(b, a * 2.5)


def test_device_arrays_are_used_in_place():
    from numba import cuda
    s, args, ins, outs, ref = gpu_cases.vector_add()
    mod = te.build(s, args, target="cuda")
    d_in = [cuda.to_device(x) for x in ins]
    d_out = cuda.device_array(outs[0].shape, outs[0].dtype)
    mod(*d_in, d_out)
    np.testing.assert_allclose(d_out.copy_to_host(), ref(*ins), rtol=1e-6)


def test_simulated_launch_shortens_the_switch_interval_and_restores_it():
    """On numba's simulator (sources that call extern device functions run there), its
    polling thread would hold the GIL for the default 5 ms after each shared-array allocation:
    launches run at a short switch interval, restored afterwards, also when the kernel raises."""
    from codegen_cuda.module import SIMULATOR_SWITCH_INTERVAL, _globals
    before = sys.getswitchinterval()
    seen = []

    class Failing:
        __name__ = "failing"

        def __getitem__(self, config):
            def run(*args):
                seen.append(sys.getswitchinterval())
                raise IndexError("out of bounds")
            return run

    with pytest.raises(IndexError, match="out of bounds"):
        _globals()["_launch"](Failing(), (1, 1, 1), (1, 1, 1))
    assert seen == [pytest.approx(SIMULATOR_SWITCH_INTERVAL)]
    assert sys.getswitchinterval() == before


@pytest.mark.parametrize("seed", range(6))
def test_random_bound_schedules_agree_with_cpu_build(seed):
    """A random split/fuse/bind of an elementwise or reduction stage agrees with the CPU."""
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(3, 9)), int(rng.integers(3, 12))
    A = te.placeholder((m, n), name="A")
    if seed % 2:
        k = te.reduce_axis((0, n), "k")
        B = te.compute((m,), lambda i: te.sum(A[i, k] * 2, axis=k), name="B")
    else:
        B = te.compute((m, n), lambda i, j: te.max(A[i, j], 0.25) - A[i, j] * A[i, j],
                       name="B")
    s = te.create_schedule(B.op)
    axes = list(B.op.axis)
    if len(axes) == 2 and rng.integers(2):
        axes = [s[B].fuse(*axes)]
    outer, inner = s[B].split(axes[0], factor=int(rng.integers(2, 6)))
    s[B].bind(outer, te.thread_axis("blockIdx.x"))
    s[B].bind(inner, te.thread_axis("threadIdx.x"))
    if len(axes) == 2:
        jo, ji = s[B].split(axes[1], nparts=int(rng.integers(1, 4)))
        s[B].bind(jo, te.thread_axis("blockIdx.y"))
    a = rng.uniform(-1, 1, (m, n)).astype("float32")
    gpu_out = np.empty([int(d.value) for d in B.shape], "float32")
    te.build(s, [A, B], target="cuda")(a, gpu_out)
    cpu_out = np.empty_like(gpu_out)
    te.build(te.create_schedule(B.op), [A, B], target="llvm")(a, cpu_out)
    ref = (a * 2).sum(1) if seed % 2 else np.maximum(a, 0.25) - a * a
    np.testing.assert_allclose(gpu_out, cpu_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gpu_out, ref, rtol=1e-5, atol=1e-6)


def test_unrolled_tile_loads_share_their_index_base():
    """In the unrolled k body each thread's shared-tile loads differ by constants; the base
    they share is computed once per run (fewer operations for numba to compile), and the
    result is unchanged."""
    s, args, ins, outs, ref = gpu_cases.gemm_double_buffer()
    mod = te.build(s, args, target="cuda")
    src = mod.get_source()
    body = src[src.index("for k_outer"):]
    loads = [line.split("= ", 1)[1] for line in body.splitlines()
             if re.match(r"\s+[AB]_shared_local_\d+ = [AB]_shared\[", line)]
    assert loads and all(re.fullmatch(r"[AB]_shared\[u64\(i(_\d+)?( \+ \d+)?\)\]", x)
                         for x in loads), loads
    bases = {re.search(r"u64\((i(_\d+)?)", x)[1] for x in loads}
    assert len(bases) == 2, bases            # one for the A tile, one for the B tile
    _check(mod, ins, outs, ref)


def test_tensor_names_that_the_kernel_source_uses_itself():
    """Tensors named like the kernel's own modules, casts or Python keywords are renamed."""
    names = ["np", "u64", "f32", "cuda", "lambda", "host"]
    A = te.placeholder((8,), name=names[0])

    def plus_one(t, name):
        return te.compute((8,), lambda i: t[i] + 1.0, name=name)
    stages = [A]
    for name in names[1:]:
        stages.append(plus_one(stages[-1], name))
    prev = stages[-1]
    s = te.create_schedule(prev.op)
    for t in stages[1:]:                # each its own kernel, its buffers named as the tensor
        xo, xi = s[t].split(t.op.axis[0], factor=4)
        s[t].bind(xo, te.thread_axis("blockIdx.x"))
        s[t].bind(xi, te.thread_axis("threadIdx.x"))
    a = np.arange(8, dtype="float32")
    out = np.empty(8, "float32")
    te.build(s, [A, prev], target="cuda")(a, out)
    np.testing.assert_allclose(out, a + 5)


def test_shared_fills_share_their_barriers():
    """GEMM's A and B tiles are filled between one pair of barriers per k step (all global
    loads of both tiles in flight together), not four."""
    s, args, ins, outs, ref = gpu_cases.gemm_vthread()
    mod = te.build(s, args, target="cuda")
    src = mod.get_source()
    loop = src[src.index("for k_outer"):]
    assert src.count("cuda.syncthreads()") == 2, src
    body = loop.splitlines()
    fills = [k for k, line in enumerate(body) if line.strip().startswith(("A_shared[",
                                                                         "B_shared["))]
    syncs = [k for k, line in enumerate(body) if "syncthreads" in line]
    assert syncs[0] < min(fills) and max(fills) < syncs[1]
    _check(mod, ins, outs, ref)


def test_unrolled_local_buffers_become_variables():
    """Accumulators and fragments accessed only at constant indices (unrolled) are emitted as
    one variable per element (registers; numba compiles them faster than array accesses);
    local buffers indexed by loop variables stay arrays. Both agree with numpy."""
    from nn.ops import gpu
    s, args, ins, outs, ref = gpu_cases.gemm_vthread()
    mod = te.build(s, args, target="cuda")
    src = mod.get_source()
    assert "C_local_0" in src and "A_shared_local_0" in src and "cuda.local.array" not in src
    _check(mod, ins, outs, ref)
    C = args[-1]
    s = gpu.schedule_matmul(C, num_thread=4, vthread=2, per_thread=2, step=4, unroll=False)
    mod = te.build(s, args, target="cuda")
    assert "C_local = cuda.local.array(16, f32)" in mod.get_source()
    _check(mod, ins, outs, ref)


def test_double_buffer_meets_one_barrier_per_k_step():
    """Double-buffered tiles: the k loop's body loads the next step into register variables,
    computes, stores them into the other half and meets one barrier; the kernel asks for two
    blocks per SM. With a thread's share too large for registers the other half is filled
    directly. Both agree with numpy at sizes no tile divides."""
    s, args, ins, outs, ref = gpu_cases.gemm_double_buffer(M=13, K=22, N=11)
    mod = te.build(s, args, target="cuda")
    src = mod.get_source()
    bodies = _k_loop_bodies(src)        # the main loop, then the partial last step's
    for body in bodies:
        assert body.count("cuda.syncthreads()") == 1 and body[-1] == "cuda.syncthreads()"
    main = "\n".join(bodies[0])
    assert main.index("A_shared_next_0 = A[") < main.index("A_shared_local_0 = A_shared[") \
        < main.index("= A_shared_next_0")
    assert "cuda.local.array" not in src and mod.kernels[0].launch_bounds == (4, 2)
    _check(mod, ins, outs, ref)
    s, args, ins, outs, ref = gpu_cases.gemm_vthread(M=13, K=50, N=11, num_thread=1, vthread=1,
                                                     per_thread=8, step=12, unroll=False,
                                                     double_buffer=True)
    mod = te.build(s, args, target="cuda")
    assert "_next" not in mod.get_source()
    bodies = _k_loop_bodies(mod.get_source())
    for body in bodies:
        assert body.count("cuda.syncthreads()") == 1 and body[-1] == "cuda.syncthreads()"
    assert any(line.startswith("A_shared[") and "((k_outer + 1) % 2) * 96)" in line
               for line in bodies[0])       # the next half, filled directly
    _check(mod, ins, outs, ref)


def _k_loop_bodies(src):
    """The stripped lines of the body of every ``for k_outer`` loop in ``src`` (at least one)."""
    lines, bodies = src.splitlines(), []
    for k, line in enumerate(lines):
        if line.lstrip().startswith("for k_outer"):
            indent, body = len(line) - len(line.lstrip()), []
            for inner in lines[k + 1:]:
                if inner.strip() and len(inner) - len(inner.lstrip()) <= indent:
                    break
                body.append(inner.strip())
            bodies.append(body)
    assert bodies, src
    return bodies


CACHE_CHECK = """
import os, sys
sys.path.insert(0, {here!r})
import te, gpu_cases
from codegen_cuda import compile_ptx
s, args, *_ = gpu_cases.gemm_double_buffer()
mod = te.build(s, args, target="cuda")
kernel = mod._globals[mod.kernels[0].name]
print(kernel.py_func.__code__.co_filename)
print(type(kernel._cache).__name__)
print(len(compile_ptx(mod)) > 0)
"""


@pytest.mark.parametrize("cache_on", [True, False])
def test_kernels_run_from_the_compile_cache_directory(tmp_path, cache_on):
    """On a real GPU (here: NUMBA_ENABLE_CUDASIM=0, no launch) the kernels' source is written
    to <TW_CACHE_DIR>/cuda/k<hash>.py and jitted with cache=True, so that numba keeps their
    machine code beside it for the next process; with the cache off they run from memory."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0",
               TW_CACHE_DIR=str(tmp_path) if cache_on else "")
    proc = subprocess.run([sys.executable, "-c", CACHE_CHECK.format(here=HERE)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    filename, cache_kind, compiled = proc.stdout.splitlines()[-3:]
    assert compiled == "True"
    if cache_on:
        files = list((tmp_path / "cuda").glob("k*.py"))
        assert [str(f) for f in files] == [filename] and cache_kind == "CUDACache"
        assert "@cuda.jit(cache=True, launch_bounds=(4, 2))" in files[0].read_text()
    else:
        assert filename.startswith("<tensorweave cuda") and cache_kind == "NullCache"


@pytest.mark.parametrize("seed", range(4))
def test_random_double_buffered_products_match_numpy(seed):
    """Random sizes and tilings of a double-buffered product (square or not, partial tiles, a
    partial last k step, registers or direct fills, unrolled or not) agree with numpy."""
    from nn.ops import gpu
    rng = np.random.default_rng(100 + seed)

    def knob(values):           # an int, or a (rows, columns) pair: non-square blocks
        pick = [int(v) for v in rng.choice(values, 2)]
        return tuple(pick) if rng.integers(2) else pick[0]
    cfg = dict(num_thread=knob([1, 2]), vthread=knob([1, 2]), per_thread=knob([1, 2, 3]),
               step=int(rng.choice([2, 3, 4, 8])), unroll=bool(rng.integers(2)),
               double_buffer=True)
    rows, cols = gpu.matmul_block(cfg)
    M, N = int(rng.integers(rows, 3 * rows + 1)), int(rng.integers(cols, 3 * cols + 1))
    K = int(rng.integers(1, 4 * cfg["step"] + 2))
    s, args, ins, outs, ref = gpu_cases.gemm_vthread(M=M, K=K, N=N, **cfg)
    _check(te.build(s, args, target="cuda"), ins, outs, ref)


def test_store_predicate_on_an_axis_that_was_split():
    """A store predicate may name the stage's own axes after they were split (TVM substitutes
    their values); on the GPU and the CPU only the elements where it holds are written."""
    A = te.placeholder((40,), name="A")
    B = te.compute((40,), lambda i: A[i] + 1, name="B")
    a = np.arange(40, dtype="float32")
    expected = np.where(np.arange(40) % 3 == 1, a + 1, -7).astype("float32")
    for target in ("llvm", "cuda"):
        s = te.create_schedule(B.op)
        xo, xi = s[B].split(B.op.axis[0], factor=16)
        s[B].set_store_predicate(B.op.axis[0] % 3 == 1)
        if target == "cuda":
            s[B].bind(xo, te.thread_axis("blockIdx.x"))
            s[B].bind(xi, te.thread_axis("threadIdx.x"))
        b = np.full(40, -7, "float32")
        te.build(s, [A, B], target=target)(a, b)
        np.testing.assert_array_equal(b, expected, err_msg=target)


def test_float_to_int_casts():
    """Float -> int casts truncate toward zero (numba's simulator hands kernels numpy float32
    scalars, which math.trunc does not take)."""
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i].astype("int32") + te.trunc(A[i]).astype("int32"),
                   name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    a = np.array([-2.7, -1.5, -0.2, 0, 0.3, 1.5, 2.9, 100.99], "float32")
    b = np.empty(8, "int32")
    te.build(s, [A, B], target="cuda")(a, b)
    np.testing.assert_array_equal(b, 2 * np.trunc(a).astype("int32"))


@pytest.mark.parametrize("M,K,N,batch", [(5, 7, 6, (3, 1)), (9, 16, 8, (2, 2)),
                                         (4, 40, 3, (1, 2)), (3, 2100, 2, (1, 1))])
def test_transposed_operand_tile_is_k_major(M, K, N, batch):
    """nn's products declared for the GPU copy an operand read transposed (Linear's weight,
    bmm(q, k^T)) k-major into its shared tile, filled along the operand's rows (stored in its
    own layout, a warp's fragment loads met on the same banks: 3x slower on an H200); batch
    broadcast, padded tiles and split-K still agree with numpy."""
    from te.target import Target
    from nn.ops import cpu_matmul, gpu
    A = te.placeholder((batch[0], M, K), name="A")
    B = te.placeholder((batch[1], N, K), name="B")
    with Target("cuda"):
        C = cpu_matmul.batch_matmul(A, B, transpose_b=True)
    s = gpu.schedule_auto([C])
    tiles = [st for st in s.stages if getattr(st.op, "attrs", {}).get("transposed")]
    assert len(tiles) == 1 and tiles[0].op.input_tensors() == [B]
    kp, np_ = (d.value for d in tiles[0].op.output(0).shape[1:])
    assert kp >= K and np_ >= N and tiles[0].scope == "shared"
    rng = np.random.default_rng(M)
    a = rng.standard_normal((batch[0], M, K)).astype("float32")
    b = rng.standard_normal((batch[1], N, K)).astype("float32")
    out = np.empty((max(batch), M, N), "float32")
    _check(te.build(s, [A, B, C], target="cuda"), [a, b], [out],
           lambda a, b: a @ b.transpose(0, 2, 1), rtol=1e-4, atol=1e-4)
