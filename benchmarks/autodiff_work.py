"""The work of te.gradient's adjoints next to nn.ops' hand-written backward declarations.

For a matrix product and a convolution (stride 1 and 2), the gradients w.r.t. both operands
are declared twice: by ``te.gradient`` from the forward declaration, and by the declarations
that nn's autograd runs (``nn.ops.dense`` / ``matmul_tn`` for the product,
``conv2d_grad_input`` / ``conv2d_grad_weight`` for the convolution). Each is lowered with the
naive schedule (every stage at the root, no tiling) and its work counted from the loop nest:
FLOPs = iterations of each innermost store x the floating-point operations in its value
(guarded stores count as executed), memory = bytes of the intermediate buffers it allocates.
Then both are compiled (the adjoint with ``from_te``'s generic default schedule, nn.ops' with
their tuned ones) and timed, with PyTorch's autograd backward of the same operation, medians
of interleaved rounds.

    python benchmarks/autodiff_work.py [--threads 1] [--rounds 5] [--small]
"""
from __future__ import annotations

import argparse
import math
import os

import numpy as np

from bench_util import cpu_name, measure, torch  # first: puts the repository on sys.path
import te
from te.expr import Binary, Call, Expr
from te.functor import post_order_visit
from schedule.ir import Allocate, BufferStore, For, IfThenElse, LetStmt, SeqStmt
from nn.functions.from_te import default_schedule
from nn.ops import cpu
from nn.ops import conv as conv_ops
from nn.ops.cpu_matmul import dense, matmul_tn, schedule_matmul


def _flops(value):
    count = [0]

    def visit(node):
        if isinstance(node, (Binary, Call)) and isinstance(node, Expr) and \
                node.dtype.startswith("float"):
            count[0] += 1
    post_order_visit(value, visit)
    return count[0]


def work(stmt):
    """(FLOPs, bytes allocated) of a lowered loop nest."""
    if isinstance(stmt, For):
        flops, mem = work(stmt.body)
        return int(stmt.extent.value) * flops, mem
    if isinstance(stmt, SeqStmt):
        parts = [work(s) for s in stmt.seq]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)
    if isinstance(stmt, IfThenElse):
        parts = [work(s) for s in (stmt.then_case, stmt.else_case) if s is not None]
        return max(p[0] for p in parts), sum(p[1] for p in parts)
    if isinstance(stmt, LetStmt):
        return work(stmt.body)
    if isinstance(stmt, Allocate):
        flops, mem = work(stmt.body)
        size = math.prod(int(d.value) for d in stmt.buffer.shape)
        return flops, mem + size * np.dtype(stmt.buffer.dtype).itemsize
    if isinstance(stmt, BufferStore):
        return _flops(stmt.value), 0
    return 0, 0


def naive_work(outs, args):
    s = te.create_schedule([o.op for o in outs])
    return work(te.lower(s, list(args) + list(outs)).body)


# ----------------------------------------------------------------------------- the cases

def matmul_decl(A, B):
    k = te.reduce_axis((0, A.shape[1]), "k")
    return te.compute((A.shape[0], B.shape[1]),
                      lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")


def conv_decl(stride, padding):
    def declare(X, W):
        N, C, H, Wd = (int(d.value) for d in X.shape)
        F, _, KH, KW = (int(d.value) for d in W.shape)
        p = padding
        P = te.compute((N, C, H + 2 * p, Wd + 2 * p), lambda n, c, h, w: te.if_then_else(
            te.all(h >= p, h < H + p, w >= p, w < Wd + p), X[n, c, h - p, w - p],
            te.const(0, X.dtype)), name="pad")
        OH, OW = (H + 2 * p - KH) // stride + 1, (Wd + 2 * p - KW) // stride + 1
        c = te.reduce_axis((0, C), "c")
        ry = te.reduce_axis((0, KH), "ry")
        rx = te.reduce_axis((0, KW), "rx")
        return te.compute((N, F, OH, OW), lambda n, f, y, x: te.sum(
            P[n, c, y * stride + ry, x * stride + rx] * W[f, c, ry, rx], axis=[c, ry, rx]),
            name="conv")
    return declare


def adjoint_declare(forward):
    """A declaration (inputs..., head) -> gradients of ``forward`` by te.gradient."""
    def declare(*placeholders):
        *xs, head = placeholders
        return list(te.gradient(forward(*xs), xs, head))
    return declare


def matmul_case(M, N, K):
    shapes = [(M, K), (K, N)]
    head_shape = (M, N)

    def grad_a(A, B, G):                  # dA = G @ B^T: nn's dense kernel
        return dense(G, B)

    def grad_b(A, B, G):                  # dB = A^T @ G: nn's matmul_tn kernel
        return matmul_tn(A, G)
    handwritten = [(grad_a, schedule_matmul), (grad_b, schedule_matmul)]

    def torch_backward(a, b, g):
        ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        out = ta @ tb
        tg = torch.tensor(g)
        return lambda: torch.autograd.grad(out, [ta, tb], tg, retain_graph=True)
    return f"matmul {M}x{K} @ {K}x{N}", matmul_decl, shapes, head_shape, handwritten, \
        torch_backward, 2 * M * N * K


def conv_case(N, C, H, F, KS, stride, padding):
    OH = (H + 2 * padding - KS) // stride + 1
    shapes = [(N, C, H, H), (F, C, KS, KS)]
    head_shape = (N, F, OH, OH)
    pads = (padding,) * 4

    def grad_input(X, W, G):
        return conv_ops.conv2d_grad_input(G, W, in_size=(H, H), stride=(stride, stride),
                                          padding=pads)

    def grad_weight(X, W, G):
        return conv_ops.conv2d_grad_weight(X, G, kernel_size=(KS, KS), stride=(stride, stride),
                                           padding=pads)
    handwritten = [(grad_input, conv_ops.schedule_conv2d_grad_input),
                   (grad_weight, conv_ops.schedule_conv2d_grad_weight)]

    def torch_backward(x, w, g):
        tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
        out = torch.nn.functional.conv2d(tx, tw, stride=stride, padding=padding)
        tg = torch.tensor(g)
        return lambda: torch.autograd.grad(out, [tx, tw], tg, retain_graph=True)
    name = f"conv2d {N}x{C}x{H}x{H}, {F} out, {KS}x{KS}, stride {stride}, pad {padding}"
    return name, conv_decl(stride, padding), shapes, head_shape, handwritten, \
        torch_backward, 2 * N * F * OH * OH * C * KS * KS


def run_case(case, rounds):
    name, forward, shapes, head_shape, handwritten, torch_backward, fwd_flops = case
    xs = [te.placeholder(s, name=f"x{k}") for k, s in enumerate(shapes)]
    head = te.placeholder(head_shape, name="head")
    ad_flops, ad_mem = naive_work(te.gradient(forward(*xs), xs, head), xs + [head])
    hw_flops = hw_mem = 0
    for declare, _ in handwritten:
        flops, mem = naive_work([declare(*xs, head)], xs + [head])
        hw_flops, hw_mem = hw_flops + flops, hw_mem + mem

    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype("float32") for s in shapes]
    g = rng.standard_normal(head_shape).astype("float32")
    f_ad = cpu.build(adjoint_declare(forward), shapes + [head_shape],
                     schedule=default_schedule)
    f_hw = [cpu.build(declare, shapes + [head_shape], schedule=schedule)
            for declare, schedule in handwritten]
    got = f_ad(*arrays, g)
    for a, f in zip(got, f_hw):
        b = f(*arrays, g)
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3 * np.abs(b).max())
    cands = {"te.gradient": lambda: f_ad(*arrays, g),
             "nn.ops": lambda: [f(*arrays, g) for f in f_hw]}
    if torch is not None:
        cands["torch"] = torch_backward(*arrays, g)
    times = measure(cands, rounds)
    print(f"\n{name}   (forward: {fwd_flops / 1e6:.2f} MFLOP)")
    print(f"  {'':14s} {'MFLOP':>9s} {'KiB alloc':>10s} {'ms':>9s}")
    print(f"  {'te.gradient':14s} {ad_flops / 1e6:9.2f} {ad_mem / 1024:10.1f} "
          f"{times['te.gradient'] * 1e3:9.3f}")
    print(f"  {'nn.ops':14s} {hw_flops / 1e6:9.2f} {hw_mem / 1024:10.1f} "
          f"{times['nn.ops'] * 1e3:9.3f}")
    if "torch" in times:
        print(f"  {'torch autograd':14s} {'':>9s} {'':>10s} {times['torch'] * 1e3:9.3f}")
    print(f"  FLOPs te.gradient / nn.ops = {ad_flops / hw_flops:.2f}; memory "
          f"{ad_mem / max(hw_mem, 1):.2f}; time te.gradient / nn.ops = "
          f"{times['te.gradient'] / times['nn.ops']:.2f}" +
          (f", te.gradient / torch = {times['te.gradient'] / times['torch']:.2f}"
           if "torch" in times else ""))
    return ad_flops / hw_flops


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1,
                        help="threads of the te kernels and of PyTorch (default 1)")
    parser.add_argument("--small", action="store_true", help="small sizes (a quick check)")
    args = parser.parse_args()
    small = args.small or os.environ.get("TW_TUTORIAL_SMALL") == "1"
    te.set_num_threads(args.threads)
    if torch is not None:
        torch.set_num_threads(args.threads)
    print(f"CPU: {cpu_name()}, {os.cpu_count()} cores; {args.threads} thread(s) for te and "
          "torch")
    if small:
        cases = [matmul_case(32, 24, 40), conv_case(1, 4, 8, 4, 3, 1, 1),
                 conv_case(1, 4, 8, 4, 3, 2, 1)]
    else:
        cases = [matmul_case(256, 256, 256), conv_case(1, 32, 28, 32, 3, 1, 1),
                 conv_case(1, 32, 28, 32, 3, 2, 1)]
    ratios = [run_case(c, args.rounds) for c in cases]
    print(f"\nlargest FLOP ratio te.gradient / nn.ops: {max(ratios):.2f} (target <= 2)")


if __name__ == "__main__":
    main()
