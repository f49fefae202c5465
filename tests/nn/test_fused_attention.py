"""The fused attention kernels (nn/ops/attention.py) against PyTorch's
scaled_dot_product_attention and nn's composed path: forward and backward, masks, causal,
sizes that are not multiples of the tiles; each case that falls back to the composed path;
and the memory of the fused path, which grows as L, not L^2."""
import tracemalloc

import numpy as np
import pytest
import torch

import nn
from nn.functions import attention as attn
from nn.functions.base import kernel_calls
from torch_compare import close, pair

rng = np.random.default_rng(0)
F = nn.functional


def randn(*shape):
    return rng.standard_normal(shape).astype("float32")


def _mask(kind, B, H, L, S):
    """(nn mask, torch mask) of one kind, or Nones."""
    if kind is None:
        return None, None
    if kind == "bool":
        m = rng.random((L, S)) > 0.3
        m[:, 0] = True
    elif kind == "padding":                     # BERT's key padding, (B, 1, 1, S), additive
        keep = np.ones((B, 1, 1, S), bool)
        keep[0, ..., S // 2:] = False
        m = np.where(keep, 0.0, np.finfo(np.float32).min).astype("float32")
    elif kind == "float":
        m = randn(B, H, L, S)
    elif kind == "heads":                        # one (L, S) mask per head, batch broadcast
        m = randn(H, L, S)
    else:
        raise ValueError(kind)
    return nn.tensor(m), torch.tensor(m)


def _run(q, k, v, mask, causal, scale, g):
    """Forward + backward of ours and torch's on the same values; returns both sets."""
    (nq, tq), (nk, tk), (nv, tv) = pair(q), pair(k), pair(v)
    nm, tm = mask
    out = F.scaled_dot_product_attention(nq, nk, nv, attn_mask=nm, is_causal=causal,
                                         scale=scale)
    tout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm,
                                                            is_causal=causal, scale=scale)
    out.backward(nn.tensor(g))
    tout.backward(torch.tensor(g))
    return (out, nq.grad, nk.grad, nv.grad), (tout, tq.grad, tk.grad, tv.grad)


CASES = [  # B, H, L, S, E, Ev, mask, causal
    (2, 3, 32, 64, 16, 16, None, False),
    (1, 2, 37, 70, 8, 12, "bool", False),
    (2, 2, 70, 70, 16, 16, None, True),
    (2, 2, 64, 130, 64, 64, "padding", False),
    (2, 3, 32, 64, 16, 16, "float", False),
    (2, 3, 32, 64, 16, 16, "heads", False),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[6]}-causal{c[7]}-L{c[2]}" for c in CASES])
def test_fused_matches_torch_forward_and_backward(case):
    B, H, L, S, E, Ev, kind, causal = case
    q, k, v, g = randn(B, H, L, E), randn(B, H, S, E), randn(B, H, S, Ev), randn(B, H, L, Ev)
    before = kernel_calls["flash_attention"], kernel_calls["flash_attention_backward"]
    ours, theirs = _run(q, k, v, _mask(kind, B, H, L, S), causal, 0.3, g)
    assert kernel_calls["flash_attention"] == before[0] + 1
    assert kernel_calls["flash_attention_backward"] == before[1] + 1
    for a, b in zip(ours, theirs):
        close(a, b, rtol=1e-4, atol=2e-5)


def test_head_views_of_projections_are_read_in_place():
    """q, k, v as (B, L, H, E) arrays seen transposed (B, H, L, E), as a multi-head layer
    makes them: the kernel reads them in place ("blhe"), and the output and gradients are
    such views too; values as torch's."""
    B, H, L, S, E = 2, 3, 20, 40, 8
    arrays = [randn(B, L, H, E), randn(B, S, H, E), randn(B, S, H, E)]
    mine = [nn.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    views = [t.transpose(1, 2) for t in mine]
    assert attn._layout(*views) == "blhe"
    m = np.where(rng.random((B, 1, 1, S)) < 0.2, -1e9, 0).astype("float32")
    out = F.scaled_dot_product_attention(*views, attn_mask=nn.tensor(m))
    tout = torch.nn.functional.scaled_dot_product_attention(
        *(t.transpose(1, 2) for t in theirs), attn_mask=torch.tensor(m))
    close(out, tout)
    g = randn(B, H, L, E)
    out.backward(nn.tensor(g))
    tout.backward(torch.tensor(g))
    for a, b in zip(mine, theirs):
        close(a.grad, b.grad)


def test_fused_matches_the_composed_path():
    q, k, v = randn(2, 2, 45, 16), randn(2, 2, 50, 16), randn(2, 2, 50, 16)
    mask = nn.tensor(randn(2, 1, 45, 50))
    pairs = []
    for fn in (lambda *a: attn._fused_attention(*a, mask, False, 0.25),
               lambda *a: attn._composed_attention(*a, mask, 0.0, False, 0.25)):
        ts = [nn.tensor(x.copy(), requires_grad=True) for x in (q, k, v)]
        out = fn(*ts)
        out.backward(nn.tensor(np.cos(np.arange(out.numel()).reshape(out.shape))
                               .astype("float32")))
        pairs.append([out.detach().numpy()] + [t.grad.numpy() for t in ts])
    for a, b in zip(*pairs):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_three_dimensional_inputs_and_default_scale():
    q, k, v = randn(3, 20, 8), randn(3, 24, 8), randn(3, 24, 4)
    ours, theirs = _run(q, k, v, (None, None), False, None, randn(3, 20, 4))
    for a, b in zip(ours, theirs):
        close(a, b)


def test_fully_masked_row_gives_zero_as_torch():
    m = np.ones((5, 7), bool)
    m[2] = False
    q, k, v = randn(1, 1, 5, 8), randn(1, 1, 7, 8), randn(1, 1, 7, 8)
    ours, theirs = _run(q, k, v, (nn.tensor(m), torch.tensor(m)), False, None,
                        randn(1, 1, 5, 8))
    assert np.all(ours[0].detach().numpy()[0, 0, 2] == 0)
    for a, b in zip(ours, theirs):
        close(a, b)


def test_double_backward_matches_torch():
    (q, tq), (k, tk), (v, tv) = pair(randn(1, 2, 9, 8)), pair(randn(1, 2, 11, 8)), \
        pair(randn(1, 2, 11, 8))
    out = F.scaled_dot_product_attention(q, k, v)
    # torch's fused CPU backward has no derivative: its math formula as the reference
    tout = torch.softmax(tq @ tk.transpose(-2, -1) / np.sqrt(8), -1) @ tv
    (gq,) = nn.autograd.grad((out * out).sum(), [q], create_graph=True)
    (tgq,) = torch.autograd.grad((tout * tout).sum(), [tq], create_graph=True)
    close(gq, tgq)
    gq.sum().backward()
    tgq.sum().backward()
    for a, b in ((k, tk), (v, tv)):
        close(a.grad, b.grad, rtol=1e-3, atol=1e-4)


# ----------------------------------------------------------------------------- fall-backs

def _calls():
    return kernel_calls["flash_attention"]


def _composed_case(fn, *arrays, torch_fn=None, grad=True):
    """``fn`` runs the composed path (no fused call) and agrees with ``torch_fn``."""
    before = _calls()
    mine, theirs = zip(*(pair(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays))
    out, tout = fn(*mine), (torch_fn or fn)(*theirs)
    assert _calls() == before, "the fused kernel ran"
    close(out, tout)
    return mine, theirs, out, tout


def test_fallback_dropout():
    before = _calls()
    q = nn.tensor(randn(1, 2, 6, 4))
    out = F.scaled_dot_product_attention(q, q, q, dropout_p=1.0)     # every weight dropped
    assert _calls() == before
    np.testing.assert_array_equal(out.numpy(), 0)


def test_fallback_float64():
    arrays = [rng.standard_normal((1, 2, 6, 4)) for _ in range(3)]
    before = _calls()
    out = F.scaled_dot_product_attention(*(nn.tensor(a) for a in arrays))
    tout = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(a) for a in arrays))
    assert _calls() == before and out.dtype == "float64"
    np.testing.assert_allclose(out.numpy(), tout.numpy(), rtol=1e-10)


def test_fallback_mask_that_needs_a_gradient():
    q, k, v, m = randn(1, 2, 6, 4), randn(1, 2, 7, 4), randn(1, 2, 7, 4), randn(6, 7)
    mine, theirs, out, tout = _composed_case(
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), q, k, v, m,
        torch_fn=lambda q, k, v, m: torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=m))
    out.sum().backward()
    tout.sum().backward()
    close(mine[3].grad, theirs[3].grad)


def test_fallback_broadcast_batch():
    q, k, v = randn(2, 3, 6, 4), randn(1, 3, 7, 4), randn(1, 3, 7, 4)
    _composed_case(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), q, k, v,
                   torch_fn=lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(
                       q, k, v))


def test_fallback_mask_shape_the_kernel_cannot_index():
    q, k, v = randn(2, 3, 2, 5, 4), randn(2, 3, 2, 6, 4), randn(2, 3, 2, 6, 4)
    m = randn(3, 1, 5, 6)           # broadcast over the first axis but not the second
    _composed_case(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                   q, k, v, m, grad=False,
                   torch_fn=lambda q, k, v, m: torch.nn.functional.scaled_dot_product_attention(
                       q, k, v, attn_mask=m))


def test_fallback_empty():
    q, k, v = randn(1, 2, 0, 4), randn(1, 2, 3, 4), randn(1, 2, 3, 4)
    _composed_case(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), q, k, v,
                   grad=False,
                   torch_fn=lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(
                       q, k, v))


def test_fallback_reasons_named():
    t = nn.tensor(randn(1, 1, 4, 4))
    assert attn._fused_unsupported(t, t, t, None, 0.1) == "dropout"
    assert attn._fused_unsupported(t.double(), t.double(), t.double(), None, 0.0) == "dtype"
    assert attn._fused_unsupported(t, t, t, None, 0.0) is None
    g = t.cuda()            # numba's simulator in the suite (GPU kernels: test_gpu_fused_*)
    assert attn._fused_unsupported(g, g, g, None, 0.0) is None
    assert attn._fused_unsupported(g, t, g, None, 0.0) == "devices"


# ----------------------------------------------------------------------------- memory

def _peak_bytes(L, fused):
    q = nn.tensor(randn(1, 1, L, 64), requires_grad=True)
    k = nn.tensor(randn(1, 1, L, 64), requires_grad=True)
    v = nn.tensor(randn(1, 1, L, 64), requires_grad=True)
    g = nn.tensor(randn(1, 1, L, 64))

    def run():
        if fused:
            out = F.scaled_dot_product_attention(q, k, v)
        else:
            out = attn._composed_attention(q, k, v, None, 0.0, False, 0.125)
        out.backward(g)
    run()                                   # compiled before measuring
    tracemalloc.start()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


@pytest.mark.slow
def test_fused_memory_grows_as_L_not_L_squared():
    """Forward + backward at L = 1024 and 2048 (one head of 64): the fused path's peak of
    traced allocations is a few O(L) arrays (well under one L x L float32 matrix) and
    doubles with L; the composed path's is several L x L matrices."""
    small, big = _peak_bytes(1024, True), _peak_bytes(2048, True)
    square = 2048 * 2048 * 4
    assert big < square / 4, (big, square)
    assert big / small < 2.6, (small, big)
    composed = _peak_bytes(2048, False)
    assert composed > square, composed
