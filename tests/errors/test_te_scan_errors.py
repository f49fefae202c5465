"""Misuses of te.scan: each raises naming the tensor or axis and saying what to do."""
import pytest

import te
from te import ScheduleError, TEError


def _parts(m=None, n=None):
    m = m if m is not None else te.var("m")
    n = n if n is not None else te.var("n")
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    update = te.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    return m, n, X, state, init, update


def test_update_shape_must_match_the_state():
    m, n, X, state, init, _ = _parts()
    upd = te.compute((m, n + 1), lambda t, i: state[t - 1, 0] + 1.0, name="wide")
    with pytest.raises(TEError, match=r"update wide has shape .* declare the update"):
        te.scan(init, upd, state)


def test_init_shape_must_match_the_state_past_the_first_dimension():
    m, n, X, state, _, update = _parts()
    init = te.compute((1, 3), lambda _, i: X[0, i], name="init3")
    with pytest.raises(TEError, match=r"init init3 has shape .* all but its first dimension"):
        te.scan(init, update, state)


def test_rank_must_match():
    m, n, X, state, _, update = _parts()
    init = te.compute((n,), lambda i: X[0, i], name="flat")
    with pytest.raises(TEError, match=r"init flat has 1 dimensions but the state has 2"):
        te.scan(init, update, state)


def test_dtypes_must_match():
    m, n, X, state, init, _ = _parts()
    upd = te.compute((m, n), lambda t, i: (state[t - 1, i] + X[t, i]).astype("float64"),
                     name="upd64")
    with pytest.raises(TEError, match=r"update upd64 has dtype float64 but the state has "
                                      r"float32; .*astype"):
        te.scan(init, upd, state)


def test_lists_must_have_one_init_and_update_per_state():
    m, n, X, state, init, update = _parts()
    with pytest.raises(TEError, match="one init and one update per state"):
        te.scan([init, init], [update], [state])


def test_state_must_be_a_placeholder():
    m, n, X, state, init, update = _parts()
    with pytest.raises(TEError, match=r"state 0 \(update\): the state must be a te.placeholder"):
        te.scan(init, update, update)


@pytest.mark.parametrize("offset", [0, 1])
def test_update_may_read_only_earlier_steps(offset):
    m, n, X, state, init, _ = _parts()
    upd = te.compute((m, n), lambda t, i: state[t + offset, i] + X[t, i], name="peek")
    with pytest.raises(TEError, match=r"peek reads the state state\[.*\], but the update at "
                                      r"step t may read only earlier steps; .*t - 1"):
        te.scan(init, upd, state)


def test_an_intermediate_stage_may_not_read_the_current_step_either():
    m, n, X, state, init, _ = _parts()
    mid = te.compute((m, n), lambda t, i: state[t, i] * 2, name="mid")
    upd = te.compute((m, n), lambda t, i: mid[t, i] + X[t, i], name="upd")
    with pytest.raises(TEError, match="mid reads the state"):
        te.scan(init, upd, state)


@pytest.mark.parametrize("primitive", ["split", "bind", "parallel", "vectorize", "fuse"])
def test_time_axis_is_not_schedulable(primitive):
    m, n, X, state, init, update = _parts()
    res = te.scan(init, update, state)
    s = te.create_schedule(res.op)
    t, i = update.op.axis
    with pytest.raises(ScheduleError, match=r"axis t is the time axis of scan scan; .*"
                                            r"schedule the update's other axes"):
        if primitive == "split":
            s[update].split(t, factor=2)
        elif primitive == "bind":
            s[update].bind(t, te.thread_axis("blockIdx.x"))
        elif primitive == "fuse":
            s[update].fuse(t, i)
        else:
            getattr(s[update], primitive)(t)
    assert s[update].leaf_iter_vars == [t, i]


def test_update_and_init_are_placed_by_the_scan():
    m, n, X, state, init, update = _parts()
    res = te.scan(init, update, state)
    Y = te.compute((m, n), lambda a, b: res[a, b] + 1.0, name="Y")
    s = te.create_schedule(Y.op)
    with pytest.raises(ScheduleError, match=r"compute_at on stage update: it is the update of "
                                            r"scan scan"):
        s[update].compute_at(s[Y], Y.op.axis[0])
    with pytest.raises(ScheduleError, match=r"compute_inline on stage init: it is the init"):
        s[init].compute_inline()


def test_the_scan_stage_has_no_loops_to_schedule():
    m, n, X, state, init, update = _parts()
    res = te.scan(init, update, state)
    Y = te.compute((m, n), lambda a, b: res[a, b] + 1.0, name="Y")
    s = te.create_schedule(Y.op)
    with pytest.raises(ScheduleError, match=r"stage scan is a scan; .*schedule its init and "
                                            r"update stages"):
        s[res].compute_at(s[Y], Y.op.axis[0])


def test_graph_rewrites_of_the_update_are_refused():
    m, n, X, state, init, update = _parts()
    res = te.scan(init, update, state)
    s = te.create_schedule(res.op)
    stages = list(s.stages)
    # (cache_read of what the update reads rewrites the scan: tests/schedule/
    # test_tvm_behaviours.py)
    with pytest.raises(ScheduleError, match=r"stage update is the update of scan scan: "
                                            r"cache_write and rfactor cannot rewrite it"):
        s.cache_write(update, "local")
    assert s.stages == stages and s[update].op is update.op     # nothing half-done


def test_every_stage_of_a_gpu_step_must_be_bound():
    from codegen_cuda import CudaCodegenError
    m, n, X, state, init, _ = _parts()
    mid = te.compute((m, n), lambda t, i: state[t - 1, i] * 2, name="mid")
    upd = te.compute((m, n), lambda t, i: mid[t, i] + X[t, i], name="upd")
    res = te.scan(init, upd, state)
    s = te.create_schedule(res.op)
    for T in (init, upd):
        xo, xi = s[T].split(T.op.axis[1], factor=4)
        s[T].bind(xo, te.thread_axis("blockIdx.x"))
        s[T].bind(xi, te.thread_axis("threadIdx.x"))
    with pytest.raises(CudaCodegenError, match=r"a step of scan scan computes mid, scan, and "
                                               r"not every stage of it is bound"):
        te.build(s, [X, res], target="cuda")
