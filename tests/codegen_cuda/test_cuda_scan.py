"""te.scan on the GPU (numba's simulator, tiny sizes): the time loop runs on the host around the
kernels of each step, its variable passed to them; any serial loop around kernels does too."""
import numpy as np

import te

RNG = np.random.default_rng(1)


def _bind(s, T, axis, factor=4):
    xo, xi = s[T].split(axis, factor=factor)
    s[T].bind(xo, te.thread_axis("blockIdx.x"))
    s[T].bind(xi, te.thread_axis("threadIdx.x"))


def _call(mod, *arrays, out_shapes):
    dev = te.cuda(0)
    outs = [te.nd.array(np.full(shape, 7, "float32"), dev) for shape in out_shapes]
    mod(*[te.nd.array(a, dev) for a in arrays], *outs)
    return [o.numpy() for o in outs]


def _cumsum():
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n), name="s_state")
    s_init = te.compute((1, n), lambda _, i: X[0, i], name="s_init")
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i], name="s_update")
    return X, s_init, s_update, te.scan(s_init, s_update, s_state, inputs=[X])


def test_scan_steps_are_host_loop_launches():
    X, s_init, s_update, s_scan = _cumsum()
    s = te.create_schedule(s_scan.op)
    _bind(s, s_init, s_init.op.axis[1])
    _bind(s, s_update, s_update.op.axis[1])
    mod = te.build(s, [X, s_scan], target="cuda")
    src = mod.get_source()
    host = src[src.index("def host("):]
    assert "    for scan_idx in range((m - 1)):\n        _launch(" in host
    assert host.rstrip().endswith("scan_idx)")
    assert len(mod.kernels) == 2 and [v.name for v in mod.kernels[1].scalars][-1] == "scan.idx"
    x = RNG.uniform(size=(5, 6)).astype("float32")
    (out,) = _call(mod, x, out_shapes=[(5, 6)])
    np.testing.assert_allclose(out, np.cumsum(x, axis=0), rtol=1e-5)


def test_two_stage_update_and_two_states():
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    st1 = te.placeholder((m, n), name="st1")
    st2 = te.placeholder((m, n), name="st2")
    i1 = te.compute((1, n), lambda _, i: X[0, i], name="i1")
    i2 = te.compute((1, n), lambda _, i: X[0, i] * 0.0, name="i2")
    mid = te.compute((m, n), lambda t, i: st1[t - 1, i] * 0.5, name="mid")
    u1 = te.compute((m, n), lambda t, i: mid[t, i] + X[t, i], name="u1")
    u2 = te.compute((m, n), lambda t, i: st2[t - 1, i] + st1[t - 1, i], name="u2")
    r1, r2 = te.scan([i1, i2], [u1, u2], [st1, st2], inputs=[X])
    s = te.create_schedule(r1.op)
    for T in (i1, i2, mid, u1, u2):
        _bind(s, T, T.op.axis[1])
    mod = te.build(s, [X, r1, r2], target="cuda")
    assert len(mod.kernels) == 5
    x = RNG.uniform(size=(4, 5)).astype("float32")
    o1, o2 = _call(mod, x, out_shapes=[(4, 5), (4, 5)])
    e1, e2 = x.copy(), np.zeros_like(x)
    for t in range(1, 4):
        e1[t] = e1[t - 1] * 0.5 + x[t]
        e2[t] = e2[t - 1] + e1[t - 1]
    np.testing.assert_allclose(o1, e1, rtol=1e-5)
    np.testing.assert_allclose(o2, e2, rtol=1e-5)


def test_any_serial_loop_around_kernels_runs_on_the_host():
    n = te.var("n")
    A = te.placeholder((3, n), name="A")
    B = te.compute((3, n), lambda r, i: A[r, i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    _bind(s, B, B.op.axis[1])
    mod = te.build(s, [A, B], target="cuda")
    host = mod.get_source().split("def host(")[1]
    assert "for r in range(3):" in host and "_launch(" in host.split("for r in range(3):")[1]
    a = RNG.uniform(size=(3, 9)).astype("float32")
    (out,) = _call(mod, a, out_shapes=[(3, 9)])
    np.testing.assert_allclose(out, a + 1.0, rtol=1e-6)
