"""Quantized Linear (batch 256, 1024 -> 1024) and Conv2d (1x64x56x56, 3x3, 64 out, padding
1): nn.quantized's modules (one te kernel each: uint8 x int8 products on vpdpbusd where the
host has AVX-512 VNNI, vpmaddwd on AVX-512BW, 256-bit vpmaddwd on AVX2-only hosts, the
requantization fused) next to PyTorch's quantized modules (x86 engine, and fbgemm for the
conv) and to our own float32 nn.Linear / nn.Conv2d, in the same run, on 1 and 2 threads.
Our integers are checked against PyTorch's (fbgemm) first: at most 1 LSB apart. Prints
medians over interleaved rounds, the ratios and the CPU. With
``--all-paths`` our modules are also timed on each slower product path the host can run
(``qgemm.available_paths()``: on an AVX-512 host ``pmaddwd``, ``pmaddwd256`` (what an
AVX2-only host such as Zen 2 / 3 runs) and ``plain``), their integers first checked equal to
the host path's.

    python benchmarks/quantized.py [--rounds 9] [--threads 1 2] [--all-paths]
"""
from __future__ import annotations

import argparse
import os
import warnings

import numpy as np

from bench_util import cpu_name, measure, torch

import te
import nn
from nn.quantized import qgemm

warnings.filterwarnings("ignore")


def _pair_weights(rng, shape, oc):
    ints = rng.integers(-128, 128, shape).astype("int8")
    scales = rng.uniform(0.001, 0.004, oc)
    ours = nn.quantized.QTensor(nn.Tensor(ints), nn.qint8, scales=scales,
                                zero_points=np.zeros(oc, "int64"), axis=0)
    theirs = torch._make_per_channel_quantized_tensor(
        torch.from_numpy(ints), torch.from_numpy(scales), torch.zeros(oc, dtype=torch.long), 0)
    return ours, theirs, (ints.astype("float32") * scales.reshape((-1,) + (1,) * (len(shape) - 1))
                          ).astype("float32")


def _pair_input(rng, shape, scale, zp):
    ints = rng.integers(0, 128, shape).astype("uint8")
    ours = nn.quantized.QTensor(nn.Tensor(ints), nn.quint8, scale, zp)
    theirs = torch._make_per_tensor_quantized_tensor(torch.from_numpy(ints), scale, zp)
    return ours, theirs, (ints.astype("float32") - zp) * scale


def cases(rng):
    """{name: (ours_q, torch_q (x86), torch_q (fbgemm), ours_f32, check)}"""
    out = {}
    # Linear 256 x 1024 -> 1024
    w, tw, wf = _pair_weights(rng, (1024, 1024), 1024)
    b = rng.normal(0, 0.1, 1024).astype("float32")
    x, tx, xf = _pair_input(rng, (256, 1024), 0.02, 10)
    q = nn.quantized.Linear(1024, 1024)
    q.set_weight_bias(w, nn.Tensor(b))
    q.scale, q.zero_point = 0.05, 64
    tq = torch.ao.nn.quantized.Linear(1024, 1024)
    tq.set_weight_bias(tw, torch.from_numpy(b))
    tq.scale, tq.zero_point = 0.05, 64
    f = nn.Linear(1024, 1024)
    f.weight.data = nn.Tensor(wf)
    xfn = nn.Tensor(xf)
    out["Linear 256x1024->1024"] = (lambda: q(x), lambda: tq(tx), lambda: f(xfn),
                                    lambda: (q(x), tq(tx)))
    # Conv2d 1x64x56x56, 3x3, 64 out, padding 1
    w, tw, wf = _pair_weights(rng, (64, 64, 3, 3), 64)
    b = rng.normal(0, 0.1, 64).astype("float32")
    x2, tx2, xf2 = _pair_input(rng, (1, 64, 56, 56), 0.02, 10)
    c = nn.quantized.Conv2d(64, 64, 3, padding=1)
    c.set_weight_bias(w, nn.Tensor(b))
    c.scale, c.zero_point = 0.05, 64
    tc = torch.ao.nn.quantized.Conv2d(64, 64, 3, padding=1)
    tc.set_weight_bias(tw, torch.from_numpy(b))
    tc.scale, tc.zero_point = 0.05, 64
    fc = nn.Conv2d(64, 64, 3, padding=1)
    fc.weight.data = nn.Tensor(wf)
    xfn2 = nn.Tensor(xf2)
    out["Conv2d 1x64x56x56 3x3 64"] = (lambda: c(x2), lambda: tc(tx2), lambda: fc(xfn2),
                                       lambda: (c(x2), tc(tx2)))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--all-paths", action="store_true",
                   help="also time our modules on the host's slower product paths "
                        "(vpmaddwd, 256-bit vpmaddwd, plain int32)")
    args = p.parse_args()
    if torch is None:
        raise SystemExit("benchmarks/quantized.py compares with PyTorch's quantized modules: "
                         "install torch")
    rng = np.random.default_rng(0)
    print(f"CPU: {cpu_name(llvm=True)}, {os.cpu_count()} cores; product path: {qgemm.PATH}; "
          f"medians of {args.rounds} interleaved rounds")
    torch.backends.quantized.engine = "fbgemm"
    all_cases = cases(rng)
    for name, (_, _, _, check) in all_cases.items():
        ours, theirs = check()
        diff = np.abs(ours.int_repr().numpy().astype(int) - theirs.int_repr().numpy())
        if diff.max() > 1:
            raise SystemExit(f"{name}: our integers differ from PyTorch's by {diff.max()}")
        print(f"  {name}: integers equal to PyTorch's (fbgemm) but {int((diff > 0).sum())} "
              f"of {diff.size} (1 LSB)")
        if args.all_paths:
            for path in qgemm.available_paths()[1:]:
                old = qgemm.set_path(path)
                try:
                    other = check()[0]
                finally:
                    qgemm.set_path(old)
                if not np.array_equal(other.int_repr().numpy(), ours.int_repr().numpy()):
                    raise SystemExit(f"{name}: the {path} path's integers differ from the "
                                     f"{qgemm.PATH} path's")
            print(f"  {name}: the paths {', '.join(qgemm.available_paths())} give the same "
                  "integers")
    for threads in args.threads:
        te.set_num_threads(threads)
        torch.set_num_threads(threads)
        print(f"threads: {threads}")
        for name, (ours, theirs, ours_f32, _) in all_cases.items():
            def theirs_x86(fn=theirs):
                torch.backends.quantized.engine = "x86"
                return fn()

            def theirs_fbgemm(fn=theirs):
                torch.backends.quantized.engine = "fbgemm"
                return fn()
            cands = {"ours": ours, "torch x86": theirs_x86, "torch fbgemm": theirs_fbgemm,
                     "ours f32": ours_f32}
            if args.all_paths:
                for path in qgemm.available_paths()[1:]:
                    def on_path(fn=ours, path=path):
                        old = qgemm.set_path(path)
                        try:
                            return fn()
                        finally:
                            qgemm.set_path(old)
                    on_path()
                    cands[f"ours ({path})"] = on_path
            with nn.no_grad():
                t = measure(cands, args.rounds, budget_s=0.1)
            best_torch = min(t["torch x86"], t["torch fbgemm"])
            print(f"  {name:26s} ours {t['ours'] * 1e3:7.3f} ms | torch x86 "
                  f"{t['torch x86'] * 1e3:7.3f} ms, fbgemm {t['torch fbgemm'] * 1e3:7.3f} ms | "
                  f"ours float32 {t['ours f32'] * 1e3:7.3f} ms")
            print(f"  {'':26s} vs torch's best quantized: {best_torch / t['ours']:.2f}x, "
                  f"vs our float32: {t['ours f32'] / t['ours']:.2f}x")
            for key in t:
                if key.startswith("ours ("):
                    print(f"  {'':26s} {key}: {t[key] * 1e3:.3f} ms "
                          f"({t['ours f32'] / t[key]:.2f}x our float32)")


if __name__ == "__main__":
    main()
