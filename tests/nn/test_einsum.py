"""einsum (one or two operands), baddbmm and addbmm against PyTorch: values and gradients."""
import numpy as np
import pytest
import torch

import nn
from torch_compare import close, pair

rng = np.random.default_rng(0)

SHAPES = {"i": 3, "j": 4, "k": 5, "b": 2, "h": 2, "n": 3}


def _operand(sub):
    return rng.standard_normal([SHAPES[c] for c in sub]).astype("float32")


@pytest.mark.parametrize("equation", [
    "ij,jk->ik", "bij,bjk->bik", "i,j->ij", "ij->ji", "ij->", "ij->j", "i,i->", "ij,ij->ij",
    "ij,kj->ik", "bhik,bhjk->bhij", "bij,jk->bki", "ij,jk", "ij,ik->j", "bi,bij->bj",
    "ik,jk->", "...ij,...jk->...ik", "ij", "ji", "b...j,jk->b...k",
])
def test_einsum_matches_torch(equation):
    lhs = equation.split("->")[0]
    subs = [s.replace("...", "hn") for s in lhs.split(",")]
    if equation.startswith("b..."):
        subs = ["bnj", "jk"]
    pairs = [pair(_operand(s)) for s in subs]
    ours = nn.einsum(equation, *[p[0] for p in pairs])
    theirs = torch.einsum(equation, *[p[1] for p in pairs])
    assert tuple(ours.shape) == tuple(theirs.shape)
    close(ours, theirs)
    g = rng.standard_normal(theirs.shape).astype("float32")
    (ours * nn.tensor(g)).sum().backward()
    (theirs * torch.tensor(g)).sum().backward()
    for a, b in pairs:
        close(a.grad, b.grad)


def test_einsum_list_operands_and_broadcast():
    (a, ta), (b, tb) = pair(_operand("bij")), pair(rng.standard_normal((1, 4, 5)))
    close(nn.functional.einsum("bij,bjk->bik", [a, b]), torch.einsum("bij,bjk->bik", [ta, tb]))


@pytest.mark.parametrize("fn", ["baddbmm", "addbmm"])
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, 2.0), (0, 1)])
def test_baddbmm_addbmm(fn, beta, alpha):
    shape = (2, 3, 5) if fn == "baddbmm" else (3, 5)
    (c, tc), (a, ta), (b, tb) = (pair(rng.standard_normal(s)) for s in
                                 (shape, (2, 3, 4), (2, 4, 5)))
    ours = getattr(nn, fn)(c, a, b, beta=beta, alpha=alpha)
    theirs = getattr(torch, fn)(tc, ta, tb, beta=beta, alpha=alpha)
    close(ours, theirs)
    (ours * ours).sum().backward()
    (theirs * theirs).sum().backward()
    for x, y in ((a, ta), (b, tb)) + (((c, tc),) if beta else ()):
        close(x.grad, y.grad)
