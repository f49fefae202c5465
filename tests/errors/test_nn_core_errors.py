"""Misuse of nn's core (devices, random state, in-place operations) gets PyTorch's errors."""
import numpy as np
import pytest

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
    assert a.tolist() != [1.0] * 3 and b.tolist() == [1.0] * 4


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
