"""The fused attention kernels for the GPU (nn/ops/attention_gpu.py; numba's CUDA simulator
in the suite, so the sizes are tiny) against PyTorch's scaled_dot_product_attention on the
CPU: forward and backward, causal, masks, both layouts; results and gradients stay on the
GPU."""
import numpy as np
import pytest
import torch

import nn
from nn.functions.base import kernel_calls

RNG = np.random.default_rng(0)


def randn(*shape):
    return RNG.standard_normal(shape).astype("float32")


@pytest.mark.parametrize("kind", ["plain", "causal", "padding", "bool", "head_views"])
def test_gpu_fused_attention_matches_torch(kind):
    B, H, L, S, E = 1, 2, 5, 5 if kind == "causal" else 6, 4
    arrays = [randn(B, H, L, E), randn(B, H, S, E), randn(B, H, S, 3)]
    if kind == "head_views":            # (B, L, H, E) arrays seen transposed
        arrays = [np.ascontiguousarray(a.transpose(0, 2, 1, 3)) for a in arrays]
    mine = [nn.tensor(a).cuda().requires_grad_() for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    if kind == "head_views":
        qkv, tqkv = [t.transpose(1, 2) for t in mine], [t.transpose(1, 2) for t in theirs]
    else:
        qkv, tqkv = mine, theirs
    kw, tkw = {}, {}
    if kind == "causal":
        kw["is_causal"] = tkw["is_causal"] = True
    elif kind == "padding":
        m = np.zeros((B, 1, 1, S), np.float32)
        m[..., -2:] = np.finfo(np.float32).min
        kw["attn_mask"], tkw["attn_mask"] = nn.tensor(m).cuda(), torch.tensor(m)
    elif kind == "bool":
        m = RNG.random((L, S)) > 0.3
        m[:, 0] = True
        kw["attn_mask"], tkw["attn_mask"] = nn.tensor(m).cuda(), torch.tensor(m)
    before = kernel_calls["flash_attention"], kernel_calls["flash_attention_backward"]
    out = nn.functional.scaled_dot_product_attention(*qkv, scale=0.4, **kw)
    tout = torch.nn.functional.scaled_dot_product_attention(*tqkv, scale=0.4, **tkw)
    assert out.device.type == "cuda"
    g = randn(*out.shape)
    out.backward(nn.tensor(g).cuda())
    tout.backward(torch.tensor(g))
    assert kernel_calls["flash_attention"] == before[0] + 1
    assert kernel_calls["flash_attention_backward"] == before[1] + 1
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), rtol=1e-4,
                               atol=1e-5)
    for a, b in zip(mine, theirs):
        assert a.grad.device.type == "cuda"
        np.testing.assert_allclose(a.grad.cpu().numpy(), b.grad.numpy(), rtol=1e-4,
                                   atol=1e-5)
