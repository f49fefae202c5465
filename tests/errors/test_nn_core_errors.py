"""Misuse of nn's core (devices, random state, in-place operations) gets PyTorch's errors."""
import numpy as np
import pytest
import torch

import nn


def test_bad_rng_state():
    with pytest.raises(RuntimeError, match="expected a uint8 tensor of 37 bytes"):
        nn.set_rng_state(nn.tensor(np.zeros(5, np.uint8)))


def test_unknown_device():
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda device type"):
        nn.zeros(2, device="tpu")
    with pytest.raises(RuntimeError, match="device index 1 is not available"):
        nn.device("cuda:1")


def test_tensors_on_two_devices():
    a, b = nn.ones(3), nn.ones(3).cuda()
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, "
                                           "but found at least two devices, cuda:0 and cpu!"):
        a + b


def test_numpy_of_a_gpu_tensor():
    with pytest.raises(TypeError, match=r"can't convert cuda:0 device type tensor to numpy\. "
                                        r"Use Tensor\.cpu\(\)"):
        nn.ones(2).cuda().numpy()


def test_in_place_on_a_view_of_a_leaf_that_requires_grad():
    """As PyTorch: in place on a view of a non-leaf works (tests/nn), on a leaf's view not."""
    w = nn.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is "
                                           "being used in an in-place operation"):
        w.view(3).add_(1)
    assert w.tolist() == [1.0, 2.0, 3.0]


def test_backward_after_a_saved_tensor_was_modified():
    w = nn.tensor([1.0, 2.0], requires_grad=True)
    a = w.exp()
    b = a * w
    a.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


# ----------------------------------------------------------------------------- PyTorch's texts

OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to tensor "
           "refer to a single memory location. Please clone() the tensor before performing the "
           "operation.")


@pytest.mark.parametrize("write", [
    lambda y: y[1:].add_(y[:-1]),
    lambda y: y[1:].copy_(y[:-1]),
    lambda y: y[1:].clamp_(min=y[:-1]),
    lambda y: y[:4].view(2, 2).add_(y[:4].view(2, 2).t())])
def test_in_place_from_overlapping_memory(write):
    y = nn.arange(6.0)
    with pytest.raises(RuntimeError, match=OVERLAP.replace("(", r"\(").replace(")", r"\)")):
        write(y)
    assert y.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_assigned_grad_that_is_not_a_tensor():
    import nn.optim
    a, b = nn.Parameter(nn.ones(3)), nn.Parameter(nn.ones(4))
    opt = nn.optim.Adam([a, b], lr=0.1)
    a.grad = nn.ones(3)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None but got "
                                        "grad of type numpy.ndarray"):
        b.grad = np.ones(4, "float32")
    with pytest.raises(TypeError, match="got grad of type list"):
        b.grad = [1.0] * 4
    assert b.grad is None
    opt.step()                                  # a full step over the parameter with a grad
    ta, tb = torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(4))
    topt = torch.optim.Adam([ta, tb], lr=0.1)
    ta.grad = torch.ones(3)
    topt.step()
    np.testing.assert_allclose(a.detach().numpy(), ta.detach().numpy(), rtol=1e-6)
    assert b.tolist() == tb.tolist() == [1.0] * 4


def test_backward_with_a_numpy_gradient():
    x = nn.ones(2, 3, requires_grad=True)
    with pytest.raises(TypeError, match="gradients can be either Tensors or None, but got "
                                        "ndarray"):
        (x * 2).backward(np.ones((2, 3)))
    with pytest.raises(TypeError, match="gradients can be either Tensors or None"):
        nn.autograd.grad([x * 2], [x], [np.ones((2, 3))])
    assert x.grad is None


def test_cat_of_a_tensor():
    with pytest.raises(TypeError, match=r"cat\(\): argument 'tensors' \(position 1\) must be "
                                        r"tuple of Tensors, not Tensor"):
        nn.cat(nn.ones(2))
    with pytest.raises(TypeError, match=r"stack\(\): argument 'tensors' \(position 1\) must be "
                                        r"tuple of Tensors, not Tensor"):
        nn.stack(nn.ones(2))


@pytest.mark.parametrize("dim,kind", [(1.0, "float"), ("x", "str")])
def test_reduction_dim_that_is_not_an_int(dim, kind):
    with pytest.raises(TypeError, match=f"argument 'dim' must be tuple of ints, not {kind}"):
        nn.ones(2, 3).sum(dim=dim)
    with pytest.raises(TypeError, match=f"found element of type {kind} at pos 1"):
        nn.ones(2, 3).mean(dim=(0, dim))


def test_reshape_to_float_sizes():
    with pytest.raises(TypeError, match=r"reshape\(\): argument 'shape' \(position 1\) must be "
                                        r"tuple of ints, but found element of type float at "
                                        r"pos 0"):
        nn.ones(6).reshape(2.0, 3)
    with pytest.raises(TypeError, match="must be tuple of ints, but found element of type float"):
        nn.ones(6).view(2, 3.0)
    assert nn.ones(6).reshape(nn.tensor(2), 3).shape == (2, 3)


@pytest.mark.parametrize("make,message", [
    (lambda a, b: nn.matmul(a, b), "expected m1 and m2 to have the same dtype, but got: "
                                   "float != double"),
    (lambda a, b: a @ b, "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda a, b: nn.mm(a, b), "expected m1 and m2 to have the same dtype, but got: "
                               "float != double"),
    (lambda a, b: nn.mm(a.int(), a), "expected m1 and m2 to have the same dtype, but got: "
                                     "int != float"),
    (lambda a, b: nn.matmul(a[None], b), "expected m1 and m2 to have the same dtype"),
    (lambda a, b: nn.matmul(a[None], b[None]), "expected scalar type Float but found Double"),
    (lambda a, b: nn.bmm(b[None], a[None]), "expected scalar type Double but found Float"),
    (lambda a, b: nn.matmul(a[0], b[0]), "dot : expected both vectors to have same dtype, but "
                                         "found Float and Double"),
    (lambda a, b: nn.dot(a[0], b[0]), "dot : expected both vectors to have same dtype"),
    (lambda a, b: nn.mv(b, a[0]), "addmv input tensors must have the same dtype, but got "
                                  "Float, Double, and Float"),
    (lambda a, b: nn.matmul(a, b[0]), "addmv input tensors must have the same dtype, but got "
                                      "Double, Float, and Double")])
def test_matmul_of_two_dtypes(make, message):
    a, b = nn.ones(2, 2), nn.ones(2, 2, dtype=nn.float64)
    with pytest.raises(RuntimeError, match=message):
        make(a, b)


# ----------------------------------------------------------------------------- scatter_reduce,
# index_put, cdist, nn.linalg, LBFGS, post-accumulate-grad hooks

@pytest.mark.parametrize("make, kind, message", [
    (lambda: nn.zeros(3).scatter_reduce(0, nn.tensor([0]), nn.ones(1), "foo"), RuntimeError,
     "reduce argument must be either sum, prod, mean, amax or amin, got foo"),
    (lambda: nn.zeros(3).scatter_reduce(0, nn.tensor([0]), nn.ones(1, dtype=nn.float64),
                                        "sum"), RuntimeError,
     r"scatter\(\): Expected self.dtype to be equal to src.dtype"),
    (lambda: nn.zeros(3).scatter_reduce(0, nn.tensor([3]), nn.ones(1), "sum"), RuntimeError,
     "index 3 is out of bounds for dimension 0 with size 3"),
    (lambda: nn.zeros(3).index_put((nn.tensor([0, 1]),), nn.ones(3)), RuntimeError,
     r"shape mismatch: value tensor of shape \[3\] cannot be broadcast to indexing result "
     r"of shape \[2\]"),
    (lambda: nn.zeros(3).index_put((nn.tensor([0.0]),), nn.ones(1)), IndexError,
     "tensors used as indices must be long, int, byte or bool tensors"),
    (lambda: nn.zeros(2, 2).index_put((nn.tensor([0]),) * 3, nn.ones(1)), IndexError,
     r"too many indices for tensor of dimension 2 \(got 3\)"),
    (lambda: nn.zeros(3).index_put((nn.tensor([0]),), nn.ones(1, dtype=nn.float64)),
     RuntimeError, "Index put requires the source and destination dtypes match, got Float "
                   "for the destination and Double for the source."),
    (lambda: nn.cdist(nn.ones(3), nn.ones(2, 3)), RuntimeError,
     "cdist only supports at least 2D tensors, X1 got: 1D"),
    (lambda: nn.cdist(nn.ones(2, 3), nn.ones(2, 4)), RuntimeError,
     "X1 and X2 must have the same number of columns. X1: 3 X2: 4"),
    (lambda: nn.cdist(nn.ones(2, 3), nn.ones(2, 3), -1), RuntimeError,
     "cdist only supports non-negative p values"),
    (lambda: nn.cdist(nn.ones(2, 3, dtype=nn.int64), nn.ones(2, 3, dtype=nn.int64)),
     RuntimeError, "cdist only supports floating-point dtypes, X1 got: Long"),
    (lambda: nn.linalg.inv(nn.ones(2, 3)), RuntimeError,
     "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda: nn.linalg.inv(nn.ones(3)), RuntimeError,
     "linalg.inv: The input tensor A must have at least 2 dimensions."),
    (lambda: nn.linalg.inv(nn.ones(2, 2)), RuntimeError,
     "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed "
     "because the input matrix is singular."),
    (lambda: nn.linalg.cholesky(nn.tensor([[1.0, 2.0], [2.0, 1.0]])), RuntimeError,
     r"linalg.cholesky: The factorization could not be completed because the input is not "
     r"positive-definite \(the leading minor of order 2 is not positive-definite\)."),
    (lambda: nn.linalg.solve(nn.eye(3), nn.ones(4, 1)), RuntimeError,
     r"linalg.solve: Incompatible shapes of A and B for the equation AX = B \(3x3 and 4x1\)"),
    (lambda: nn.linalg.det(nn.ones(2, 3)), RuntimeError,
     "linalg.det: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda: nn.linalg.matrix_norm(nn.ones(3, 3), 3), RuntimeError,
     "linalg.matrix_norm: Order 3 not supported."),
    (lambda: nn.linalg.matrix_norm(nn.ones(3)), RuntimeError,
     "linalg.matrix_norm: The input tensor A must have at least 2 dimensions."),
    (lambda: nn.linalg.norm(nn.ones(2, 2, 2), 2), RuntimeError,
     "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D."),
    (lambda: nn.linalg.vector_norm(nn.ones(3), "fro"), TypeError,
     r"linalg_vector_norm\(\): argument 'ord' \(position 2\) must be Number, not str"),
    (lambda: nn.optim.LBFGS([nn.ones(1, requires_grad=True)], lr=-1), ValueError,
     "Invalid learning rate: -1"),
    (lambda: nn.optim.LBFGS([{"params": [nn.ones(1, requires_grad=True)]},
                             {"params": [nn.ones(1, requires_grad=True)]}]), ValueError,
     r"LBFGS doesn't support per-parameter options \(parameter groups\)"),
    (lambda: nn.ones(3).register_post_accumulate_grad_hook(print), RuntimeError,
     "cannot register a hook on a tensor that doesn't require gradient"),
    (lambda: (nn.ones(3, requires_grad=True) * 2).register_post_accumulate_grad_hook(print),
     RuntimeError, "post accumulate grad hooks cannot be registered on non-leaf tensors"),
])
def test_scatter_reduce_index_put_cdist_linalg_lbfgs_hook_errors(make, kind, message):
    with pytest.raises(kind, match=message):
        make()


def test_lbfgs_line_search_must_be_strong_wolfe():
    w = nn.ones(2, requires_grad=True)
    opt = nn.optim.LBFGS([w], line_search_fn="armijo")

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)
