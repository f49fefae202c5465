"""double_buffer and the min_blocks_per_sm pragma refuse what they cannot do, naming the stage,
loop or value and saying what to do instead."""
import pytest

import te
from codegen_cuda import CudaCodegenError
from te import ScheduleError


def _tiled(attach="ko"):
    """C = A @ B with A staged through shared memory at loop ``attach`` of C."""
    A = te.placeholder((8, 8), name="A")
    B = te.placeholder((8, 8), name="B")
    k = te.reduce_axis((0, 8), name="k")
    C = te.compute((8, 8), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    i, j = s[C].op.axis
    bx, tx = s[C].split(i, factor=4)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    ko, ki = s[C].split(s[C].op.reduce_axis[0], factor=4)
    s[C].reorder(bx, tx, ko, j, ki)
    if attach is not None:
        s[AA].compute_at(s[C], ko if attach == "ko" else tx)
    return s, (A, B, C), AA, bx


def test_placeholder_has_no_buffer_to_double():
    s, (A, _, _), _, _ = _tiled()
    with pytest.raises(ScheduleError, match=r"double_buffer: stage A is a placeholder"):
        s[A].double_buffer()


@pytest.mark.parametrize("attach,message", [
    (None, r"double_buffer on stage A.shared: the stage is not computed at a loop; attach it to "
           r"the loop whose iterations should overlap"),
    ("tx", r"double_buffer on stage A.shared: it is computed at loop \w+, which is threadIdx.x; "
           r"compute it at a serial loop")])
def test_stage_not_at_a_serial_loop(attach, message):
    s, args, AA, _ = _tiled(attach=attach)
    s[AA].double_buffer()
    with pytest.raises(ScheduleError, match=message):
        te.lower(s, list(args), target="cuda")


def test_fill_that_reads_what_the_loop_writes():
    s, args, AA, _ = _tiled()
    AL = s.cache_read(AA, "local", [args[2]])
    s[AL].compute_at(s[args[2]], s[args[2]].leaf_iter_vars[2])    # ko, after AA's fill
    s[AL].double_buffer()
    with pytest.raises(ScheduleError, match=r"double_buffer on stage A.shared.local: its fill "
                                            r"must read only data that loop \w+ does not write"):
        te.lower(s, list(args), target="cuda")


@pytest.mark.parametrize("value", [0, "2", 1.5])
def test_min_blocks_pragma_value(value):
    s, args, _, bx = _tiled()
    s[args[2]].pragma(bx, "min_blocks_per_sm", value)
    with pytest.raises(CudaCodegenError, match=rf"pragma min_blocks_per_sm on loop \w+ \(kernel "
                                               rf"computing C, A.shared\) must be a positive int, got "
                                               rf"{value!r}"):
        te.build(s, list(args), target="cuda")


def test_min_blocks_needs_a_constant_block():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], nparts=4)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    s[B].pragma(bx, "min_blocks_per_sm", 2)
    with pytest.raises(CudaCodegenError, match=r"pragma min_blocks_per_sm on loop \w+ \(kernel "
                                               r"computing B\) needs a constant number of threads "
                                               r"per block"):
        te.build(s, [A, B], target="cuda")


def _loop_over(buf, *items):
    """for ko in range(4): <buf allocated, double-buffered> items"""
    from schedule.ir import Allocate, For, ForKind, seq
    ko = te.var("ko")
    body = Allocate(buf, seq(*(item(ko) for item in items)), ("double_buffer",))
    return For(ko, te.const(0), te.const(4), ForKind.SERIAL, body)


def test_buffer_read_before_its_fill():
    from schedule.ir import Buffer, BufferLoad, BufferStore
    from schedule.passes.inject_double_buffer import inject_double_buffer
    S = Buffer("S", (te.const(8),), "float32", "shared")
    out = Buffer("out", (te.const(4),), "float32")
    loop = _loop_over(S, lambda ko: BufferStore(out, BufferLoad(S, (te.const(0),), "float32"),
                                                (ko,)),
                      lambda ko: BufferStore(S, te.const(1.0, "float32"), (te.const(0),)))
    with pytest.raises(ScheduleError, match=r"double_buffer on stage S: the body of loop ko "
                                            r"must fill it once before reading it"):
        inject_double_buffer(loop)


def test_buffer_of_non_constant_size():
    from schedule.ir import Buffer, BufferStore
    from schedule.passes.inject_double_buffer import inject_double_buffer
    n = te.var("n")
    S = Buffer("S", (n,), "float32", "shared")
    loop = _loop_over(S, lambda ko: BufferStore(S, te.const(1.0, "float32"), (ko,)))
    with pytest.raises(ScheduleError, match=r"double_buffer on stage S: its size n is not a "
                                            r"constant; split the loops it is computed at by "
                                            r"constant factors"):
        inject_double_buffer(loop)
