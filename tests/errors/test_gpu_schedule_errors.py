"""nn.ops.gpu.schedule_matmul refuses what it cannot schedule, naming the stage or knob."""
import re

import pytest

import te
from nn.ops import gpu


def _product(M=8, K=4, N=8):
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    return A, B, te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")


def test_not_a_product():
    A = te.placeholder((8, 8), name="A")
    R = te.compute((8, 8), lambda i, j: A[i, j] * 2.0, name="R")
    with pytest.raises(ValueError, match=r"schedule_matmul: R must be a product C\[\.\.\., i, "
                                         r"j\] = sum_k .*for other computations use "
                                         r"schedule_auto"):
        gpu.schedule_matmul(R)


def test_a_row_sum_is_not_a_product():
    A = te.placeholder((8, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    S = te.compute((8,), lambda i: te.sum(A[i, k], axis=k), name="S")
    with pytest.raises(ValueError, match=r"schedule_matmul: S must be a product"):
        gpu.schedule_matmul(S)


@pytest.mark.parametrize("knob,value", [("step", 2.5), ("min_blocks", 0)])
def test_bad_knob(knob, value):
    *_, C = _product()
    with pytest.raises(ValueError, match=rf"schedule_matmul: {knob} must be a positive int, "
                                         rf"got {value!r}"):
        gpu.schedule_matmul(C, **{knob: value})


@pytest.mark.parametrize("knob,value", [("num_thread", 0), ("vthread", True),
                                        ("per_thread", (2, 0)), ("num_thread", (4, 4, 4))])
def test_bad_tile_knob(knob, value):
    *_, C = _product()
    with pytest.raises(ValueError, match=rf"schedule_matmul: {knob} must be a positive int or "
                                         rf"a pair of them \(rows, columns\), got "
                                         rf"{re.escape(repr(value))}"):
        gpu.schedule_matmul(C, **{knob: value})


@pytest.mark.parametrize("num_thread,threads", [(33, 1089), ((16, 128), 2048)])
def test_too_many_threads(num_thread, threads):
    *_, C = _product()
    with pytest.raises(ValueError, match=rf"num_thread={re.escape(repr(num_thread))} makes "
                                         rf"blocks of {threads} threads, over 1024; use fewer "
                                         rf"threads \(at most 32 x 32\)"):
        gpu.schedule_matmul(C, num_thread=num_thread)


def _row_sums():
    A = te.placeholder((4, 100), name="A")
    k = te.reduce_axis((0, 100), name="k")
    return A, te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="B")


@pytest.mark.parametrize("knob,value", [("parts", 0), ("num_thread", 2.5),
                                        ("combine_threads", True)])
def test_reduce_across_blocks_bad_knob(knob, value):
    _, B = _row_sums()
    s = te.create_schedule(B.op)
    knobs = {"parts": 2, knob: value}
    with pytest.raises(ValueError, match=rf"reduce_across_blocks: {knob} must be a positive "
                                         rf"int, got {value!r}"):
        gpu.reduce_across_blocks(s, B, **knobs)


def test_reduce_across_blocks_needs_a_reduction():
    A, _ = _row_sums()
    C = te.compute((4,), lambda i: A[i, 0] * 2.0, name="C")
    with pytest.raises(ValueError, match=r"reduce_across_blocks: C must be a reduction with "
                                         r"one output"):
        gpu.reduce_across_blocks(te.create_schedule(C.op), C, parts=2)
