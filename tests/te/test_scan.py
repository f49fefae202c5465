"""te.scan on the CPU: the recurrence against numpy, for symbolic and constant shapes, several
states, multi-stage updates and scheduled init/update stages; the reference interpreter agrees."""
import numpy as np
import pytest

import te
from schedule import interp

RNG = np.random.default_rng(0)


def _cumsum(shape=None):
    m, n = shape if shape else (te.var("m"), te.var("n"))
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n), name="s_state")
    s_init = te.compute((1, n), lambda _, i: X[0, i], name="s_init")
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i], name="s_update")
    s_scan = te.scan(s_init, s_update, s_state, inputs=[X])
    return X, s_init, s_update, s_scan


def _run(s, args, *arrays, out_shapes):
    f = te.build(s, args)
    outs = [np.full(shape, 7, "float32") for shape in out_shapes]
    f(*arrays, *outs)
    return outs


def test_scan_op_fields():
    X, s_init, s_update, s_scan = _cumsum()
    op = s_scan.op
    assert isinstance(op, te.ScanOp)
    assert op.scan_axis.dom.min.value == 1
    assert s_scan.shape == op.state_placeholder[0].shape
    assert list(op.input_tensors) == [s_init, s_update]


@pytest.mark.parametrize("shape", [None, (6, 5)], ids=["symbolic", "constant"])
def test_cumsum_matches_numpy(shape):
    X, _, _, s_scan = _cumsum(shape)
    s = te.create_schedule(s_scan.op)
    x = RNG.uniform(size=(6, 5)).astype("float32")
    (out,) = _run(s, [X, s_scan], x, out_shapes=[(6, 5)])
    np.testing.assert_allclose(out, np.cumsum(x, axis=0), rtol=1e-5)


def test_lowered_scan_loops_over_steps_after_the_init():
    X, _, _, s_scan = _cumsum()
    text = str(te.lower(te.create_schedule(s_scan.op), [X, s_scan]))
    assert "for scan.idx in range(m - 1):" in text
    assert text.index("scan[i] = X[i]") < text.index("for scan.idx")
    func = te.lower(te.create_schedule(s_scan.op), [X, s_scan])
    x = RNG.uniform(size=(4, 3)).astype("float32")
    out = np.zeros_like(x)
    interp.run(func, x, out)
    np.testing.assert_allclose(out, np.cumsum(x, axis=0), rtol=1e-5)


def test_one_row_only_runs_the_init():
    X, _, _, s_scan = _cumsum()
    x = RNG.uniform(size=(1, 4)).astype("float32")
    (out,) = _run(te.create_schedule(s_scan.op), [X, s_scan], x, out_shapes=[(1, 4)])
    np.testing.assert_allclose(out, x)


def test_scheduled_init_and_update():
    X, s_init, s_update, s_scan = _cumsum()
    s = te.create_schedule(s_scan.op)
    io, ii = s[s_init].split(s_init.op.axis[1], factor=4)
    s[s_init].vectorize(ii)
    uo, ui = s[s_update].split(s_update.op.axis[1], factor=4)
    s[s_update].parallel(uo)
    s[s_update].vectorize(ui)
    x = RNG.uniform(size=(9, 13)).astype("float32")
    (out,) = _run(s, [X, s_scan], x, out_shapes=[(9, 13)])
    np.testing.assert_allclose(out, np.cumsum(x, axis=0), rtol=1e-5)


def test_init_of_several_rows_and_reads_further_back():
    """A Fibonacci-like recurrence: two init rows, the update reads t - 1 and t - 2."""
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    st = te.placeholder((m, n), name="st")
    init = te.compute((2, n), lambda r, i: X[r, i], name="init")
    upd = te.compute((m, n), lambda t, i: st[t - 1, i] + st[t - 2, i] * 0.5, name="upd")
    res = te.scan(init, upd, st)
    x = RNG.uniform(size=(7, 3)).astype("float32")
    (out,) = _run(te.create_schedule(res.op), [X, res], x, out_shapes=[(7, 3)])
    ref = x.copy()
    for t in range(2, 7):
        ref[t] = ref[t - 1] + ref[t - 2] * 0.5
    np.testing.assert_allclose(out, ref, rtol=1e-5)


def _two_stage():
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n), name="s_state")
    s_init = te.compute((1, n), lambda _, i: X[0, i], name="s_init")
    s1 = te.compute((m, n), lambda t, i: s_state[t - 1, i] * 2, name="s1")
    s2 = te.compute((m, n), lambda t, i: s1[t, i] + X[t, i], name="s2")
    return X, s1, s2, te.scan(s_init, s2, s_state, inputs=[X])


def _two_stage_ref(x):
    ref = x.copy()
    for t in range(1, len(x)):
        ref[t] = ref[t - 1] * 2 + x[t]
    return ref


@pytest.mark.parametrize("place", ["step", "compute_at", "inline"])
def test_multi_stage_update(place):
    X, s1, s2, res = _two_stage()
    s = te.create_schedule(res.op)
    assert s[s1].scan_role == "body"
    if place == "compute_at":
        xo, _ = s[s2].split(s2.op.axis[1], factor=4)
        s[s1].compute_at(s[s2], xo)
    elif place == "inline":
        s[s1].compute_inline()
    x = RNG.uniform(size=(6, 10)).astype("float32")
    (out,) = _run(s, [X, res], x, out_shapes=[(6, 10)])
    np.testing.assert_allclose(out, _two_stage_ref(x), rtol=1e-5)


def test_compute_root_of_a_body_stage_keeps_it_in_the_step():
    X, s1, s2, res = _two_stage()
    s = te.create_schedule(res.op)
    s[s1].compute_root()
    x = RNG.uniform(size=(5, 3)).astype("float32")
    (out,) = _run(s, [X, res], x, out_shapes=[(5, 3)])
    np.testing.assert_allclose(out, _two_stage_ref(x), rtol=1e-5)


def test_two_states():
    m, n, l = te.var("m"), te.var("n"), 3
    X = te.placeholder((m, n), name="X")
    st1 = te.placeholder((m, n), name="st1")
    st2 = te.placeholder((m, l), name="st2")
    i1 = te.compute((1, n), lambda _, i: X[0, i], name="i1")
    i2 = te.compute((1, l), lambda _, i: te.const(0.0, "float32"), name="i2")
    u1 = te.compute((m, n), lambda t, i: st1[t - 1, i] + X[t, i], name="u1")
    u2 = te.compute((m, l), lambda t, i: st2[t - 1, i] + st1[t - 1, 0], name="u2")
    r1, r2 = te.scan([i1, i2], [u1, u2], [st1, st2], inputs=[X])
    assert r1.op is r2.op and r2.value_index == 1
    x = RNG.uniform(size=(5, 4)).astype("float32")
    o1, o2 = _run(te.create_schedule(r2.op), [X, r1, r2], x, out_shapes=[(5, 4), (5, l)])
    e1 = np.cumsum(x, axis=0)
    e2 = np.zeros((5, l), "float32")
    for t in range(1, 5):
        e2[t] = e2[t - 1] + e1[t - 1, 0]
    np.testing.assert_allclose(o1, e1, rtol=1e-5)
    np.testing.assert_allclose(o2, e2, rtol=1e-5)


def test_scan_read_by_a_later_stage():
    X, _, _, s_scan = _cumsum()
    Y = te.compute(s_scan.shape, lambda i, j: s_scan[i, j] * 3, name="Y")
    s = te.create_schedule(Y.op)
    text = str(te.lower(s, [X, Y]))
    assert 'scan = allocate([m, n], "float32", "global")' in text
    x = RNG.uniform(size=(4, 6)).astype("float32")
    (out,) = _run(s, [X, Y], x, out_shapes=[(4, 6)])
    np.testing.assert_allclose(out, np.cumsum(x, axis=0) * 3, rtol=1e-5)
