"""RMSNorm and F.rms_norm against PyTorch: values and gradients of input and weight."""
import numpy as np
import pytest
import torch

import nn
from torch_compare import close, close_grads, pair

rng = np.random.default_rng(0)


@pytest.mark.parametrize("shape, eps, affine", [(4, None, True), ((3, 4), 1e-3, True),
                                                ((4,), None, False)])
def test_rmsnorm_matches_torch(shape, eps, affine):
    theirs = torch.nn.RMSNorm(shape, eps=eps, elementwise_affine=affine)
    ours = nn.RMSNorm(shape, eps=eps, elementwise_affine=affine)
    if affine:
        w = rng.standard_normal(theirs.weight.shape).astype("float32")
        with torch.no_grad():
            theirs.weight.copy_(torch.tensor(w))
        ours.load_state_dict({"weight": nn.tensor(w)})
    x, tx = pair(rng.standard_normal((2, 3, 4)).astype("float32") * 0.1)
    y, ty = ours(x), theirs(tx)
    close(y, ty)
    g = rng.standard_normal(y.shape).astype("float32")
    y.backward(nn.tensor(g))
    ty.backward(torch.tensor(g))
    close(x.grad, tx.grad)
    close_grads(ours, theirs)


def test_functional_rms_norm():
    x, tx = pair(rng.standard_normal((5, 6)).astype("float32"))
    w, tw = pair(rng.standard_normal(6).astype("float32"))
    y = nn.functional.rms_norm(x, (6,), w, eps=1e-6)
    ty = torch.nn.functional.rms_norm(tx, (6,), tw, eps=1e-6)
    close(y, ty)
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    close(x.grad, tx.grad)
    close(w.grad, tw.grad)
    with pytest.raises(RuntimeError):
        nn.functional.rms_norm(x, (5,))
