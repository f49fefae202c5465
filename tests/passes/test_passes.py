"""Each pass on a small Before, compared structurally with an Expected."""
import numpy as np
import pytest

import te
from te.expr import IntImm, Var, const
from schedule.ir import (Buffer, BufferLoad, BufferStore, For, ForKind, IfThenElse,
                         broadcast, ramp, seq)
from schedule.passes.simplify import simplify_stmt
from schedule.passes.storage_flatten import storage_flatten
from schedule.passes.unroll_loops import unroll_loops
from schedule.passes.vectorize_loops import vectorize_loops
from schedule.structural import structural_equal

A = Buffer("A", (const(4), const(8)), "float32")
B = Buffer("B", (const(32),), "float32")


def loop(var, extent, body, kind=ForKind.SERIAL):
    return For(var, const(0), const(extent), kind, body)


def test_storage_flatten_row_major():
    i, j = Var("i"), Var("j")
    before = loop(i, 4, loop(j, 8, BufferStore(A, BufferLoad(A, (i, j), "float32"), (i, j))))
    i2, j2 = Var("i"), Var("j")
    flat = i2 * 8 + j2
    expected = loop(i2, 4, loop(j2, 8, BufferStore(A, BufferLoad(A, (flat,), "float32"),
                                                   (flat,))))
    assert structural_equal(storage_flatten(before), expected)


def test_unroll_replicates_body():
    k = Var("k")
    before = loop(k, 3, BufferStore(B, const(1.0), (k * 2,)), ForKind.UNROLLED)
    expected = seq(*[BufferStore(B, const(1.0), (const(c) * 2,)) for c in range(3)])
    after = simplify_stmt(unroll_loops(before))
    assert structural_equal(after, simplify_stmt(expected))


def test_vectorize_contiguous_store_becomes_ramp():
    i, v = Var("i"), Var("v")
    before = loop(i, 4, loop(v, 8, BufferStore(B, BufferLoad(B, (i * 8 + v,), "float32") + 1.0,
                                               (i * 8 + v,)), ForKind.VECTORIZED))
    after = simplify_stmt(vectorize_loops(before))
    i2 = Var("i")
    idx = ramp(i2 * 8, IntImm(1), 8)
    expected = loop(i2, 4, BufferStore(B, BufferLoad(B, (idx,), "float32x8")
                                       + broadcast(const(1.0), 8), (idx,)))
    assert structural_equal(after, expected)


def test_vectorize_keeps_loop_when_branch_varies_across_lanes():
    v = Var("v")
    before = loop(v, 8, IfThenElse(v < 5, BufferStore(B, const(0.0), (v,))),
                  ForKind.VECTORIZED)
    after = vectorize_loops(before)
    assert isinstance(after, For) and dict(after.annotations).get("scalarized")


def test_simplify_removes_provable_guard_and_empty_loop():
    i = Var("i")
    before = seq(loop(i, 8, IfThenElse(i < 8, BufferStore(B, const(0.0), (i,)))),
                 For(Var("z"), const(0), const(0), ForKind.SERIAL,
                     BufferStore(B, const(1.0), (const(0),))))
    i2 = Var("i")
    expected = loop(i2, 8, BufferStore(B, const(0.0), (i2,)))
    assert structural_equal(simplify_stmt(before), expected)


def test_structural_equal_distinguishes():
    i = Var("i")
    a = loop(i, 8, BufferStore(B, const(0.0), (i,)))
    j = Var("j")
    assert not structural_equal(a, loop(j, 7, BufferStore(B, const(0.0), (j,))))
    assert not structural_equal(a, loop(j, 8, BufferStore(B, const(1.0), (j,))))


def test_simplify_merges_a_flattened_div_and_mod():
    """[p // 7, p % 7] flattened with row stride 7 is p again, also after the modulo dropped
    a multiple of 7 (p = 28 * o + i: (28 o + i) // 7 * 7 + i % 7)."""
    from schedule.simplify import simplify
    p, o, i = Var("p"), Var("o"), Var("i")
    assert structural_equal(simplify(p // 7 * 7 + p % 7), p)
    assert structural_equal(simplify((p // 7 * 7 + p % 7) * 3 + 5), simplify(p * 3 + 5))
    ranges = {i: (0, 27)}
    flat = simplify((o * 28 + i) // 7 * 7 + (o * 28 + i) % 7, ranges)
    assert structural_equal(flat, simplify(o * 28 + i))
    # different divisors, or arguments that differ by a non-multiple, stay as they are
    assert not structural_equal(simplify(p // 7 * 7 + p % 5), p)
    assert not structural_equal(simplify((p + 1) // 7 * 7 + p % 7), simplify(p + 1))


def test_simplify_div_mod_by_a_multiple_of_the_small_part():
    """(tx*8 + ii) // 16 is tx // 2 and (tx*8 + ii) % 16 is tx % 2 * 8 + ii when 0 <= ii < 8
    (a thread's 8 neighbouring elements never cross a row of 16)."""
    from schedule.simplify import simplify
    ty, tx, ii = Var("ty"), Var("tx"), Var("ii")
    ranges = {ty: (0, 3), tx: (0, 15), ii: (0, 7)}
    e = (ty * 128 + tx * 8 + ii) // 16
    assert structural_equal(simplify(e, ranges), simplify(ty * 8 + tx // 2))
    m = (tx * 8 + ii) % 16
    assert structural_equal(simplify(m, ranges), simplify(tx % 2 * 8 + ii))
    # the small part may reach d - 1 but not d: (tx*8 + ii + 1) is not split
    assert "ii" in str(simplify((tx * 8 + ii + 1) // 16, ranges))


@pytest.mark.parametrize("f", [
    lambda a, b, c: (a * 128 + b * 8 + c) // 16, lambda a, b, c: (b * 8 + c) % 16,
    lambda a, b, c: (a * 24 + b * 12 + c % 4) // 48, lambda a, b, c: (b * -8 + c + 64) // 16,
    lambda a, b, c: (b * -8 + c) % 16, lambda a, b, c: (a * 6 + c % 3 + 12) // 6,
    lambda a, b, c: (a * 6 + c % 3 + 12) % 12, lambda a, b, c: (b * 8 + c + 1) // 16])
def test_div_mod_of_a_split_sum_against_numpy(f):
    """Integer division and modulo of sums over loop variables (the loop ranges let the
    simplifier split off the small part, also with negative coefficients), built and run,
    equal numpy's floor division and modulo at every point."""
    C = te.compute((4, 16, 8), f, name="C")
    out = np.empty((4, 16, 8), C.dtype)
    te.build(te.create_schedule(C.op), [C])(out)
    np.testing.assert_array_equal(out, f(*np.indices((4, 16, 8))))


def _double_buffered_gemm(num_thread, step=4, K=22):
    from nn.ops import gpu
    A = te.placeholder((16, K), name="A")
    B = te.placeholder((K, 16), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((16, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = gpu.schedule_matmul(C, num_thread=num_thread, vthread=2, per_thread=8 // num_thread // 2
                            or 1, step=step, double_buffer=True)
    return te.lower(s, [A, B, C], target="cuda")


def test_double_buffer_stages_the_next_tile_through_registers():
    """Each shared tile gets two halves; the loop loads the next k step's share of each thread
    into registers, computes on the current half, stores the registers into the other half
    and meets one barrier; the first step is filled before the loop."""
    text = str(_double_buffered_gemm(num_thread=2, K=20))
    loop = text[text.index("for k_outer"):]
    before = text[:text.index("for k_outer")]
    assert 'A.shared = allocate([64], "float32", "shared")' in before   # 2 x 8 x 4
    assert 'A.shared.next = allocate([8], "float32", "local")' in before
    assert before.count("tvm_storage_sync()") == 1
    assert loop.count("tvm_storage_sync()") == 1
    assert loop.index("A.shared.next[0] = A[") < loop.index("A.shared.local[0] = A.shared[") \
        < loop.index("= A.shared.next[0]") < loop.index("tvm_storage_sync()")
    assert "A.shared[k_outer % 2 * 32 +" in loop and "A.shared[(k_outer + 1) % 2 * 32 +" in loop


def test_double_buffer_fills_directly_when_a_thread_share_is_large():
    """A thread's share of the fill over STAGE_MAX elements: no registers, the other half is
    filled at the top of the iteration, still one barrier per step."""
    from schedule.passes.inject_double_buffer import STAGE_MAX
    text = str(_double_buffered_gemm(num_thread=1, step=16, K=48))
    loop = text[text.index("for k_outer"):]
    assert 8 * 16 > STAGE_MAX and ".next" not in text and loop.count("tvm_storage_sync()") == 1
    assert loop.index("A.shared[(k_outer + 1) % 2 * ") < loop.index("tvm_storage_sync()")


def _guarded_split(kind):
    """``for io in <kind>(3): for ii in range(8): if io * 8 + ii < 23: B[io * 8 + ii] = 1``"""
    io, ii = Var("io"), Var("ii")
    idx = io * 8 + ii
    store = BufferStore(B, const(1.0, "float32"), (idx,))
    return loop(io, 3, loop(ii, 8, IfThenElse(idx < 23, store)), kind), io


def _guards(stmt):
    found = []

    def visit(node):
        if isinstance(node, IfThenElse):
            found.append(node)
    from schedule.functor import post_order_visit
    post_order_visit(stmt, visit)
    return found


def test_loop_partition_peels_a_serial_loops_tail():
    from schedule.passes.loop_partition import loop_partition
    before, _ = _guarded_split(ForKind.SERIAL)
    main, tail = loop_partition(before).seq
    assert (main.extent.value, tail.min.value, tail.extent.value) == (2, 2, 1)
    assert not _guards(main) and len(_guards(tail)) == 1


def test_loop_partition_keeps_a_parallel_loops_tail_inside_it():
    # the tail as a loop after the parallel one would run alone once the threads are done
    from schedule.passes.loop_partition import loop_partition
    before, io = _guarded_split(ForKind.PARALLEL)
    after = loop_partition(before)
    assert isinstance(after, For) and after.kind == ForKind.PARALLEL
    assert after.extent.value == 3
    branch = after.body
    assert isinstance(branch, IfThenElse) and structural_equal(branch.condition, io < 2)
    assert not _guards(branch.then_case)
    # the last, one-iteration block with io = 2: its own loop splits the guard off too
    first, rest = branch.else_case.seq
    assert isinstance(first, For) and first.extent.value == 7 and not _guards(first)
    assert (rest.min.value, rest.extent.value) == (7, 1)


@pytest.mark.parametrize("n, factor", [(23, 8), (24, 8), (17, 8), (40, 3)])
def test_partitioned_parallel_loop_against_numpy(n, factor):
    A1 = te.placeholder((n,), name="A1")
    C1 = te.compute((n,), lambda i: A1[i] * 2.0 + 1.0, name="C1")
    s = te.create_schedule(C1.op)
    outer, _ = s[C1].split(C1.op.axis[0], factor=factor)
    s[C1].parallel(outer)
    text = str(te.lower(s, [A1, C1]))
    assert text.count("parallel(") == 1
    f = te.build(s, [A1, C1], target="llvm")
    a = np.random.rand(n).astype("float32")
    c = np.zeros(n, "float32")
    f(a, c)
    np.testing.assert_allclose(c, a * 2.0 + 1.0, rtol=1e-6)


def test_simplify_drops_an_allocation_nothing_uses():
    from schedule.ir import Allocate
    i = Var("i")
    scratch = Buffer("scratch", (const(8),), "float32")
    dead = loop(i, 4, Allocate(scratch, IfThenElse(i < 0, BufferStore(
        scratch, const(0.0, "float32"), (i,)))))
    assert structural_equal(simplify_stmt(dead), seq())
    kept = loop(i, 4, Allocate(scratch, BufferStore(scratch, const(0.0, "float32"), (i,))))
    assert structural_equal(simplify_stmt(kept), kept)
