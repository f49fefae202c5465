"""BERT next to PyTorch and transformers, in one run: a BERT-base encoder layer (hidden 768,
12 heads, intermediate 3072, batch 8) at seq 128 and 512, forward (eval, no_grad) and
forward + backward (eval mode, so no dropout: both sides compute the same thing), and
scaled_dot_product_attention alone (fused kernel vs torch's) at seq 512 and 2048.

nn's layer is ``nn.models.BertLayer`` with the weights of transformers' ``BertLayer``
(``attn_implementation="sdpa"``, which calls torch's fused CPU attention). Both run with the
same thread count, in interleaved rounds (nn, torch, nn, ...), so that both see the same load
on a shared machine; the table gives medians in milliseconds and torch / nn (> 1: nn faster).
Each case checks nn's result against torch's first.

    python benchmarks/bert.py [--threads 2] [--rounds 5] [--quick]
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from bench_util import cpu_name, measure  # first: puts the repository on sys.path
import te
import nn
import torch
import transformers
from nn.models import BertConfig, BertLayer, convert_state_dict

transformers.logging.set_verbosity_error()


def _layers(hidden=768, heads=12, inter=3072):
    kw = dict(hidden_size=hidden, num_attention_heads=heads, intermediate_size=inter,
              num_hidden_layers=1, max_position_embeddings=2048)
    torch.manual_seed(0)
    hf_cfg = transformers.BertConfig(**kw, attn_implementation="sdpa")
    theirs = transformers.models.bert.modeling_bert.BertLayer(hf_cfg).eval()
    ours = BertLayer(BertConfig(**kw)).eval()
    ours.load_state_dict(convert_state_dict(theirs.state_dict()), strict=True)
    return ours, theirs


def _mask(batch, seq):
    keep = np.ones((batch, 1, 1, seq), bool)
    keep[0, ..., seq * 3 // 4:] = False                 # one padded sequence
    return np.where(keep, 0.0, np.finfo(np.float32).min).astype("float32")


def bench_layer(ours, theirs, batch, seq, rounds, g_seed=0):
    rng = np.random.default_rng(g_seed)
    x = rng.standard_normal((batch, seq, 768)).astype("float32")
    m = _mask(batch, seq)
    g = rng.standard_normal(x.shape).astype("float32")
    nx, tx = nn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    nm, tm = nn.tensor(m), torch.tensor(m)
    ng, tg = nn.tensor(g), torch.tensor(g)
    with nn.no_grad():
        y = ours(nx, nm)[0]
    with torch.no_grad():
        ty = theirs(tx, tm)[0]
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=2e-3, atol=2e-3)

    def fwd_nn():
        with nn.no_grad():
            ours(nx, nm)

    def fwd_torch():
        with torch.no_grad():
            theirs(tx, tm)

    nparams, tparams = list(ours.parameters()) + [nx], list(theirs.parameters()) + [tx]

    def fb_nn():
        for p in nparams:
            p.grad = None
        ours(nx, nm)[0].backward(ng)

    def fb_torch():
        for p in tparams:
            p.grad = None
        theirs(tx, tm)[0].backward(tg)
    fwd = measure({"nn": fwd_nn, "torch": fwd_torch}, rounds)
    fb = measure({"nn": fb_nn, "torch": fb_torch}, rounds)
    return fwd, fb


def bench_sdpa(batch, heads, seq, rounds, backward=False):
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((batch, heads, seq, 64)).astype("float32")
               for _ in range(3))
    nq, nk, nv = (nn.tensor(a, requires_grad=backward) for a in (q, k, v))
    tq, tk, tv = (torch.tensor(a, requires_grad=backward) for a in (q, k, v))
    out = nn.functional.scaled_dot_product_attention(nq, nk, nv)
    tout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-3,
                               atol=1e-4)
    g = rng.standard_normal(q.shape).astype("float32")
    ng, tg = nn.tensor(g), torch.tensor(g)

    def run_nn():
        o = nn.functional.scaled_dot_product_attention(nq, nk, nv)
        if backward:
            nq.grad = nk.grad = nv.grad = None
            o.backward(ng)

    def run_torch():
        o = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv)
        if backward:
            tq.grad = tk.grad = tv.grad = None
            o.backward(tg)
    return measure({"nn": run_nn, "torch": run_torch}, rounds)


def _row(what, t):
    ratio = t["torch"] / t["nn"]
    print(f"{what:<44} {t['nn'] * 1e3:10.2f} {t['torch'] * 1e3:10.2f} {ratio:9.2f}x")
    return ratio


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="seq 128 layer and seq 512 SDPA only")
    args = ap.parse_args()
    te.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    print(f"{cpu_name()}, {args.threads} threads; torch {torch.__version__}, transformers "
          f"{transformers.__version__}; medians of {args.rounds} interleaved rounds")
    print(f"{'case':<44} {'nn ms':>10} {'torch ms':>10} {'torch/nn':>10}")
    ours, theirs = _layers()
    for seq in ((128,) if args.quick else (128, 512)):
        fwd, fb = bench_layer(ours, theirs, 8, seq, args.rounds)
        _row(f"BERT-base layer fwd, batch 8, seq {seq}", fwd)
        _row(f"BERT-base layer fwd+bwd, batch 8, seq {seq}", fb)
    for batch, seq in (((8, 512),) if args.quick else ((8, 512), (1, 2048))):
        _row(f"SDPA fwd, {batch}x12 heads, seq {seq}, d 64", bench_sdpa(batch, 12, seq,
                                                                       args.rounds))
        _row(f"SDPA fwd+bwd, {batch}x12 heads, seq {seq}, d 64",
             bench_sdpa(batch, 12, seq, args.rounds, backward=True))


if __name__ == "__main__":
    main()
