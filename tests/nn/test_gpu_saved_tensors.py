"""What host-only Functions (run on host copies of GPU tensors) save for backward is what they
would save on the GPU: the real arguments and outputs, so that in-place writes after forward
are detected there as on the CPU, and backward runs on the device."""
import numpy as np
import pytest
import torch

import nn

rng = np.random.default_rng(0)
MODIFIED = "one of the variables needed for gradient computation has been modified by an " \
           "inplace operation"


def _leaf(array, device):
    return nn.tensor(array, device=device, requires_grad=True)


def _modified_after_det(device):
    x = _leaf(rng.standard_normal((3, 3)), device)
    y = x * 1
    d = nn.linalg.det(y)
    y.add_(1)
    with pytest.raises(RuntimeError) as err:
        d.backward()
    return str(err.value)


def test_det_input_written_in_place_fails_on_the_gpu_as_on_the_cpu():
    cpu, gpu = _modified_after_det("cpu"), _modified_after_det("cuda")
    assert MODIFIED in cpu
    assert gpu == cpu
    t = torch.randn(3, 3, dtype=torch.float64, requires_grad=True)
    u = t * 1
    e = torch.linalg.det(u)
    u.add_(1)
    with pytest.raises(RuntimeError, match=MODIFIED):
        e.backward()


def test_inv_output_written_in_place_fails_on_the_gpu():
    x = _leaf(rng.standard_normal((3, 3)) + 3 * np.eye(3), "cuda")
    out = nn.linalg.inv(x)
    loss = out.sum()
    out.mul_(2)
    with pytest.raises(RuntimeError, match=MODIFIED):
        loss.backward()


def test_saved_tensors_of_a_host_only_function_are_the_gpu_ones():
    x = _leaf(rng.standard_normal((3, 3)), "cuda")
    y = x * 1
    d = nn.linalg.det(y)
    A, out = d.grad_fn.saved_tensors
    assert A is y and out.is_cuda and A.is_cuda
    s = nn.linalg.svdvals(y)
    assert all(t.is_cuda for t in s.grad_fn.saved_tensors)


def _grads(fn, arrays, device):
    leaves = [_leaf(a, device) for a in arrays]
    out = fn(*leaves)
    g = rng.standard_normal(out.shape)
    out.backward(nn.tensor(g, device=device))
    for t in leaves:
        assert t.grad.is_cuda == (device == "cuda")
    return [t.grad.cpu().numpy() for t in leaves], g


@pytest.mark.parametrize("name", ["det", "inv", "svdvals", "slogdet", "cholesky"])
def test_linalg_gradients_on_the_gpu_equal_the_cpu_and_torch(name):
    a = rng.standard_normal((2, 3, 3))
    a = a @ np.swapaxes(a, -1, -2) + 3 * np.eye(3)          # positive definite
    ours = {"slogdet": lambda A: nn.linalg.slogdet(A).logabsdet}.get(
        name, getattr(nn.linalg, name, None))
    theirs = {"slogdet": lambda A: torch.linalg.slogdet(A).logabsdet}.get(
        name, getattr(torch.linalg, name, None))
    state = rng.bit_generator.state
    (cpu,), g = _grads(ours, [a], "cpu")
    rng.bit_generator.state = state
    (gpu,), g2 = _grads(ours, [a], "cuda")
    np.testing.assert_array_equal(g, g2)
    np.testing.assert_allclose(gpu, cpu, rtol=1e-10, atol=1e-12)
    t = torch.tensor(a, requires_grad=True)
    theirs(t).backward(torch.tensor(g))
    np.testing.assert_allclose(gpu, t.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_solve_gradients_on_the_gpu_equal_torch():
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((3, 2))
    (ga, gb), g = _grads(nn.linalg.solve, [a, b], "cuda")
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    torch.linalg.solve(ta, tb).backward(torch.tensor(g))
    np.testing.assert_allclose(ga, ta.grad.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(gb, tb.grad.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin", "mean", "sum"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("src_columns", [4, 5])
def test_scatter_reduce_gradients_on_the_gpu_equal_the_cpu_and_torch(reduce, include_self,
                                                                     src_columns):
    """A ``src`` larger than ``index`` (its leading block scattered) is compared between the
    devices only: torch's backward of prod / amax / amin refuses it."""
    x = rng.uniform(0.5, 2.0, (3, 4))
    src = rng.uniform(0.5, 2.0, (3, src_columns))
    src[0, 1] = src[0, 0]                   # ties share the gradient of amax / amin
    index = np.array([[0, 0, 1, 3], [1, 2, 2, 0], [3, 3, 3, 1]])

    def ours(device):
        def fn(a, s):
            return a.scatter_reduce(1, nn.tensor(index, device=device), s, reduce,
                                    include_self=include_self)
        return fn

    state = rng.bit_generator.state
    cpu, g = _grads(ours("cpu"), [x, src], "cpu")
    rng.bit_generator.state = state
    gpu, _ = _grads(ours("cuda"), [x, src], "cuda")
    for ours_cpu, ours_gpu in zip(cpu, gpu):
        np.testing.assert_allclose(ours_gpu, ours_cpu, rtol=1e-10, atol=1e-12)
    if src_columns == index.shape[1]:
        tx, ts = torch.tensor(x, requires_grad=True), torch.tensor(src, requires_grad=True)
        tx.scatter_reduce(1, torch.tensor(index), ts, reduce,
                          include_self=include_self).backward(torch.tensor(g))
        for ours_gpu, theirs in zip(gpu, (tx.grad, ts.grad)):
            np.testing.assert_allclose(ours_gpu, theirs.numpy(), rtol=1e-8, atol=1e-10)
    else:
        assert not gpu[1][:, index.shape[1]:].any()        # the unused columns of src


def test_scatter_reduce_input_written_in_place_fails_on_the_gpu():
    x = _leaf(rng.uniform(0.5, 2.0, (2, 3)), "cuda")
    y = x * 1
    out = y.scatter_reduce(1, nn.tensor([[0, 1], [2, 2]], device="cuda"),
                           nn.ones(2, 2, dtype="float64", device="cuda"), "prod")
    y.add_(1)
    with pytest.raises(RuntimeError, match=MODIFIED):
        out.sum().backward()
