"""scatter_reduce, index_put, cdist, nn.linalg (norms, det, inv, solve, cholesky), LBFGS and
post-accumulate-grad hooks: values and gradients against PyTorch on the same inputs."""
import numpy as np
import pytest
import torch

import nn

RNG = np.random.default_rng(5)
INF = float("inf")


def run_both(torch_fn, nn_fn, *arrays, dtype="float64", device="cpu"):
    """Run both functions on leaves made of ``arrays``; backward a fixed random weighting of
    the output; return (torch output, nn output, torch leaves, nn leaves)."""
    ts = [torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    ns = [nn.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    to = torch_fn(*ts)
    no = nn_fn(*(n.to(device) for n in ns))
    w = np.random.default_rng(0).standard_normal(tuple(to.shape)).astype(dtype)
    (to * torch.tensor(w)).sum().backward()
    (no * nn.tensor(w).to(device)).sum().backward()
    return to, no.cpu(), ts, ns


def check(torch_fn, nn_fn, *arrays, dtype="float64", device="cpu", rtol=None):
    rtol = rtol or (1e-4 if dtype == "float32" else 1e-9)
    to, no, ts, ns = run_both(torch_fn, nn_fn, *arrays, dtype=dtype, device=device)
    assert no.shape == tuple(to.shape)
    np.testing.assert_allclose(no.detach().numpy(), to.detach().numpy(), rtol=rtol, atol=rtol)
    for t, n in zip(ts, ns):
        np.testing.assert_allclose(n.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=rtol)


# ----------------------------------------------------------------------------- scatter_reduce

X = RNG.standard_normal((3, 4)).astype("float32")
SRC = RNG.standard_normal((2, 4)).astype("float32")
SRC[1, 3] = X[1, 3]                 # a tie between self and src for amax / amin
INDEX = np.array([[0, 2, 2, 1], [2, 0, 2, 1]])


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_values_and_gradients(reduce, include_self):
    check(lambda x, s: x.scatter_reduce(0, torch.tensor(INDEX), s, reduce,
                                        include_self=include_self),
          lambda x, s: x.scatter_reduce(0, nn.tensor(INDEX), s, reduce,
                                        include_self=include_self),
          X, SRC, dtype="float32")


def test_scatter_reduce_along_dim_1_and_function_form():
    index = np.array([[1, 1, 0], [0, 0, 0], [2, 1, 2]])
    src = RNG.standard_normal((3, 3)).astype("float32")
    check(lambda x, s: torch.scatter_reduce(x, 1, torch.tensor(index), s, "amax"),
          lambda x, s: nn.scatter_reduce(x, 1, nn.tensor(index), s, "amax"), X, src,
          dtype="float32")


def test_scatter_reduce_integer_mean_floors():
    x, idx, src = np.array([1, 5, 3]), np.array([1, 1]), np.array([2, 4])
    ours = nn.tensor(x).scatter_reduce(0, nn.tensor(idx), nn.tensor(src), "mean")
    theirs = torch.tensor(x).scatter_reduce(0, torch.tensor(idx), torch.tensor(src), "mean")
    assert ours.tolist() == theirs.tolist()


def test_scatter_reduce_in_place():
    ours, theirs = nn.tensor(X.copy()), torch.tensor(X.copy())
    ours.scatter_reduce_(0, nn.tensor(INDEX), nn.tensor(SRC), "amin", include_self=False)
    theirs.scatter_reduce_(0, torch.tensor(INDEX), torch.tensor(SRC), "amin",
                           include_self=False)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())


def test_scatter_reduce_on_the_gpu():
    check(lambda x, s: x.scatter_reduce(0, torch.tensor(INDEX), s, "amax"),
          lambda x, s: x.scatter_reduce(0, nn.tensor(INDEX).cuda(), s, "amax"),
          X, SRC, dtype="float32", device="cuda")


# ----------------------------------------------------------------------------- index_put

@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_values_and_gradients(accumulate):
    rows, cols = np.array([0, 2, 0]), np.array([1, 3, 1])       # a repeated position
    check(lambda x, v: x.index_put((torch.tensor(rows), torch.tensor(cols)), v,
                                   accumulate=accumulate),
          lambda x, v: x.index_put((nn.tensor(rows), nn.tensor(cols)), v,
                                   accumulate=accumulate),
          X, SRC[0, :3], dtype="float32")


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_broadcast_value_and_mask(accumulate):
    mask = X > 0
    check(lambda x, v: torch.index_put(x, (torch.tensor(mask),), v, accumulate),
          lambda x, v: nn.index_put(x, (nn.tensor(mask),), v, accumulate),
          X, np.array([2.5]), dtype="float32")
    rows = np.array([2, 0])
    check(lambda x, v: x.index_put((torch.tensor(rows),), v, accumulate=accumulate),
          lambda x, v: x.index_put((nn.tensor(rows),), v, accumulate=accumulate),
          X, SRC[0], dtype="float32")


def test_index_put_in_place():
    rows = np.array([1, 1])
    ours, theirs = nn.tensor(X.copy()), torch.tensor(X.copy())
    ours.index_put_((nn.tensor(rows),), nn.tensor(SRC), accumulate=True)
    theirs.index_put_((torch.tensor(rows),), torch.tensor(SRC), accumulate=True)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_index_put_on_the_gpu():
    rows = np.array([2, 0])
    check(lambda x, v: x.index_put((torch.tensor(rows),), v),
          lambda x, v: x.index_put((nn.tensor(rows).cuda(),), v),
          X, SRC[0], dtype="float32", device="cuda")


# ----------------------------------------------------------------------------- cdist

X1 = RNG.standard_normal((2, 4, 3))
X2 = RNG.standard_normal((2, 5, 3))


@pytest.mark.parametrize("p", [2.0, 1.0, INF, 3.5, 0.5])
def test_cdist_batched(p):
    check(lambda a, b: torch.cdist(a, b, p), lambda a, b: nn.cdist(a, b, p), X1, X2,
          dtype="float32")


def test_cdist_unbatched_and_broadcast_batch():
    check(lambda a, b: torch.cdist(a, b), lambda a, b: nn.cdist(a, b), X1[0], X2[1],
          dtype="float32")
    check(lambda a, b: torch.cdist(a, b, 1), lambda a, b: nn.cdist(a, b, 1), X1[:1], X2,
          dtype="float32")


def test_cdist_on_the_gpu():
    check(lambda a, b: torch.cdist(a, b), lambda a, b: nn.cdist(a, b), X1[0, :2], X2[0, :2],
          dtype="float32", device="cuda")


# ----------------------------------------------------------------------------- nn.linalg

M = RNG.standard_normal((3, 4, 4))
SPD = M @ M.transpose(0, 2, 1) + 4 * np.eye(4)


@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, INF, -INF, 2, -2])
def test_matrix_norm(ord):
    check(lambda a: torch.linalg.matrix_norm(a, ord), lambda a: nn.linalg.matrix_norm(a, ord),
          M)


def test_matrix_norm_other_dims_keepdim():
    check(lambda a: torch.linalg.matrix_norm(a, INF, dim=(2, 0), keepdim=True),
          lambda a: nn.linalg.matrix_norm(a, INF, dim=(2, 0), keepdim=True), M)


@pytest.mark.parametrize("ord", [2, 1, INF, -INF, 3])
def test_vector_norm(ord):
    check(lambda a: torch.linalg.vector_norm(a, ord, dim=(1, 2)),
          lambda a: nn.linalg.vector_norm(a, ord, dim=(1, 2)), M)


def test_norm_dispatch():
    check(torch.linalg.norm, nn.linalg.norm, M)
    check(lambda a: torch.linalg.norm(a[0], "nuc"), lambda a: nn.linalg.norm(a[0], "nuc"), M)
    check(lambda a: torch.linalg.norm(a[0, 0], 3), lambda a: nn.linalg.norm(a[0, 0], 3), M)
    check(lambda a: torch.linalg.norm(a, 1, dim=-1), lambda a: nn.linalg.norm(a, 1, dim=-1), M)
    check(lambda a: a.norm(1, dim=1, keepdim=True), lambda a: a.norm(1, dim=1, keepdim=True), M)


def test_det_inv():
    check(torch.linalg.det, nn.linalg.det, M)
    check(torch.linalg.inv, nn.linalg.inv, M)


@pytest.mark.parametrize("name", ["det", "inv"])
def test_det_inv_double_backward(name):
    a = nn.tensor(M[0], requires_grad=True)
    t = torch.tensor(M[0], requires_grad=True)
    (g,) = nn.autograd.grad(getattr(nn.linalg, name)(a).sum(), a, create_graph=True)
    (tg,) = torch.autograd.grad(getattr(torch.linalg, name)(t).sum(), t, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-9)
    (g * g).sum().backward()
    (tg * tg).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-9)


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_dtype_names_in_messages_are_torchs(dtype):
    """One table of PyTorch's dtype names serves every message ("Int", not "Int32")."""
    calls = [lambda lib, x: lib.mean(x), lambda lib, x: lib.nanmean(x),
             lambda lib, x: lib.linalg.det(x), lambda lib, x: lib.mm(x, x.float())]
    for call in calls:
        with pytest.raises(RuntimeError) as theirs:
            call(torch, torch.zeros(2, 2, dtype=getattr(torch, dtype)))
        with pytest.raises(RuntimeError) as ours:
            call(nn, nn.zeros(2, 2, dtype=dtype))
        assert str(ours.value) == str(theirs.value)


def test_solve():
    b = RNG.standard_normal((3, 4, 2))
    check(torch.linalg.solve, nn.linalg.solve, M, b)
    check(torch.linalg.solve, nn.linalg.solve, M[0], b[0, :, 0])         # a vector
    check(torch.linalg.solve, nn.linalg.solve, M, b[0])                  # broadcast batch
    check(lambda a, x: torch.linalg.solve(a, x, left=False),
          lambda a, x: nn.linalg.solve(a, x, left=False), M, b.transpose(0, 2, 1))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(upper):
    check(lambda a: torch.linalg.cholesky(a, upper=upper),
          lambda a: nn.linalg.cholesky(a, upper=upper), SPD)


def test_linalg_on_the_gpu():
    check(torch.linalg.inv, nn.linalg.inv, M[0, :2, :2], device="cuda")
    check(torch.linalg.det, nn.linalg.det, M[0, :2, :2], device="cuda")


# ----------------------------------------------------------------------------- LBFGS

def _trajectories(make_model, loss_fn, line_search_fn, steps=3, **kwargs):
    """Parameter values after each step, for torch and nn, from the same start."""
    t_params, n_params = make_model()
    t_opt = torch.optim.LBFGS(t_params, line_search_fn=line_search_fn, **kwargs)
    n_opt = nn.optim.LBFGS(n_params, line_search_fn=line_search_fn, **kwargs)

    def closure(opt, params, lib):
        def run():
            opt.zero_grad()
            loss = loss_fn(params, lib)
            loss.backward()
            return loss
        return run
    out = []
    for _ in range(steps):
        t_loss = t_opt.step(closure(t_opt, t_params, torch))
        n_loss = n_opt.step(closure(n_opt, n_params, nn))
        assert n_loss.item() == pytest.approx(t_loss.item(), rel=1e-4)
        out.append(([p.detach().numpy().copy() for p in t_params],
                    [p.detach().numpy().copy() for p in n_params]))
    return out


A_LS = RNG.standard_normal((8, 3)).astype("float32")
B_LS = RNG.standard_normal(8).astype("float32")


def _least_squares():
    w0 = RNG.standard_normal(3).astype("float32")
    return [torch.tensor(w0, requires_grad=True)], [nn.tensor(w0, requires_grad=True)]


def _ls_loss(params, lib):
    return ((lib.tensor(A_LS) @ params[0] - lib.tensor(B_LS)) ** 2).sum()


XS = RNG.standard_normal((6, 3)).astype("float32")
YS = RNG.standard_normal((6, 1)).astype("float32")


def _mlp():
    shapes = [(4, 3), (4,), (1, 4), (1,)]
    values = [(RNG.standard_normal(s) * 0.5).astype("float32") for s in shapes]
    return ([torch.tensor(v, requires_grad=True) for v in values],
            [nn.tensor(v, requires_grad=True) for v in values])


def _mlp_loss(params, lib):
    w1, b1, w2, b2 = params
    hidden = lib.tanh(lib.tensor(XS) @ w1.T + b1)
    return ((hidden @ w2.T + b2 - lib.tensor(YS)) ** 2).mean()


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
@pytest.mark.parametrize("problem", ["least_squares", "mlp"])
def test_lbfgs_follows_torch(problem, line_search_fn):
    make, loss = {"least_squares": (_least_squares, _ls_loss),
                  "mlp": (_mlp, _mlp_loss)}[problem]
    for t_vals, n_vals in _trajectories(make, loss, line_search_fn, lr=0.5, max_iter=4,
                                        history_size=3):
        for t, n in zip(t_vals, n_vals):
            np.testing.assert_allclose(n, t, rtol=1e-4, atol=1e-5)


def test_lbfgs_tolerances_and_state():
    w = nn.tensor([0.0, 0.0, 0.0], requires_grad=True)
    opt = nn.optim.LBFGS([w], max_iter=50, tolerance_grad=1e-3, tolerance_change=1e-6)

    def closure():
        opt.zero_grad()
        loss = _ls_loss([w], nn)
        loss.backward()
        return loss
    opt.step(closure)
    state = opt.state[w]
    assert 0 < state["n_iter"] < 50 and state["func_evals"] >= state["n_iter"]
    expected = np.linalg.lstsq(A_LS, B_LS, rcond=None)[0]
    np.testing.assert_allclose(w.detach().numpy(), expected, atol=1e-3)


def test_lbfgs_on_the_gpu():
    """The GPU steps land where torch's LBFGS does from the same start."""
    start = [0.5, -0.5, 0.0]
    w = nn.tensor(start, requires_grad=True).cuda().detach().requires_grad_()
    a, b = nn.tensor(A_LS).cuda(), nn.tensor(B_LS).cuda()
    opt = nn.optim.LBFGS([w], max_iter=3)
    tw = torch.tensor(start, requires_grad=True)
    ta, tb = torch.tensor(A_LS), torch.tensor(B_LS)
    topt = torch.optim.LBFGS([tw], max_iter=3)

    def closure():
        opt.zero_grad()
        loss = ((a @ w - b) ** 2).sum()
        loss.backward()
        return loss

    def tclosure():
        topt.zero_grad()
        loss = ((ta @ tw - tb) ** 2).sum()
        loss.backward()
        return loss
    first = float(opt.step(closure))
    np.testing.assert_allclose(first, topt.step(tclosure).item(), rtol=1e-6)
    assert w.is_cuda and float(closure()) < first
    np.testing.assert_allclose(w.detach().cpu().numpy(), tw.detach().numpy(), rtol=1e-4,
                               atol=1e-5)


# ----------------------------------------------------------------------------- hooks

def test_post_accumulate_grad_hook():
    x = nn.tensor([1.0, 2.0, 3.0], requires_grad=True)
    seen = []
    handle = x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (x * x).sum().backward()
    (x * 2).sum().backward()
    handle.remove()
    (x * 2).sum().backward()
    assert seen == [[2.0, 4.0, 6.0], [4.0, 6.0, 8.0]]


def test_post_accumulate_grad_hook_steps_a_parameter():
    """The use PyTorch documents: an optimizer step fused into backward."""
    w = nn.tensor([1.0, -1.0], requires_grad=True)

    def step(p):
        with nn.no_grad():
            p.sub_(0.5 * p.grad)
        p.grad = None
    w.register_post_accumulate_grad_hook(step)
    (w * w).sum().backward(inputs=[w])
    assert w.tolist() == [0.0, 0.0] and w.grad is None


def test_lbfgs_state_dict_round_trip_after_steps():
    """LBFGS keeps vectors over all its parameters (d, prev_flat_grad): they load back."""
    def run(resume):
        w = nn.Parameter(nn.tensor(np.arange(6.).reshape(2, 3) / 10))
        b = nn.Parameter(nn.tensor([0.5, -0.5, 0.1]))
        opt = nn.optim.LBFGS([w, b], lr=0.5, max_iter=3)
        target = nn.tensor(np.ones((2, 3)))

        def closure():
            opt.zero_grad()
            loss = ((w + b - target) ** 2).sum()
            loss.backward()
            return loss
        opt.step(closure)
        if resume:
            state = opt.state_dict()
            opt = nn.optim.LBFGS([w, b], lr=0.5, max_iter=3)
            opt.load_state_dict(state)
        opt.step(closure)
        return w.detach().numpy().copy(), b.detach().numpy().copy()
    for straight, resumed in zip(run(False), run(True)):
        np.testing.assert_allclose(resumed, straight, rtol=1e-12)
