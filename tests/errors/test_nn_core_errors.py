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
