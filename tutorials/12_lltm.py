"""A custom operator from a te declaration: the LLTM cell, trained, next to PyTorch.

PyTorch's C++-extension tutorial writes a custom recurrent cell, the LLTM ("long-long-term
memory"), three times: in PyTorch operators, in C++ and in CUDA, with the backward pass written
by hand each time. Here the cell is written once, in te; ``nn.autograd.Function.from_te``
compiles its forward with a default schedule and derives its backward with ``te.gradient``
(no hand-written derivative), giving an ``nn`` function that runs on CPU and cuda tensors.

    1. the cell in te, and the loop nest of its compiled forward
    2. the adjoints that te.gradient derives (reductions over the batch and the gate axis,
       not Jacobians)
    3. an ``nn.Module`` around it, checked against the same cell in nn operators and in
       PyTorch operators (outputs and gradients), and trained for a few steps
    4. forward + backward timed next to the PyTorch-operator cell
"""
import math
import os
import statistics
import time

import numpy as np
import torch

import nn
import nn.optim
import te
from nn.functions.from_te import default_schedule

small = os.environ.get("TW_TUTORIAL_SMALL") == "1"
batch, features, state = (4, 8, 16) if small else (16, 32, 128)


# 1. The cell, as PyTorch's tutorial writes it in PyTorch operators:
#      X = cat([old_h, input], 1);  gates = X @ W^T + b, split into three
#      new_cell = old_cell + elu(g2) * sigmoid(g0);  new_h = tanh(new_cell) * sigmoid(g1)
def lltm(x, old_h, old_cell, weights, bias):
    B, F = (int(d.value) for d in x.shape)
    S = int(old_h.shape[1].value)
    X = te.compute((B, S + F), lambda b, k: te.if_then_else(
        k < S, old_h[b, te.min(k, S - 1)], x[b, te.max(k - S, 0)]), name="X")
    k = te.reduce_axis((0, S + F), name="k")
    product = te.compute((B, 3 * S), lambda b, j: te.sum(X[b, k] * weights[j, k], axis=k),
                         name="product")
    gates = te.compute((B, 3 * S), lambda b, j: product[b, j] + bias[j], name="gates")

    def elu(v):
        return te.select(v > 0.0, v, te.exp(v) - 1.0)
    new_cell = te.compute((B, S), lambda b, j: old_cell[b, j]
                          + elu(gates[b, 2 * S + j]) * te.sigmoid(gates[b, j]), name="new_cell")
    new_h = te.compute((B, S), lambda b, j: te.tanh(new_cell[b, j])
                       * te.sigmoid(gates[b, S + j]), name="new_h")
    return new_h, new_cell


LLTMFunction = nn.autograd.Function.from_te(lltm, name="LLTM")

shapes = [(batch, features), (batch, state), (batch, state), (3 * state, state + features),
          (3 * state,)]
inputs = [te.placeholder(s, name=n) for s, n in
          zip(shapes, ["input", "old_h", "old_cell", "weights", "bias"])]
new_h, new_cell = lltm(*inputs)
s = default_schedule([new_h, new_cell])
print("1. the forward, as from_te compiles it (elementwise stages inlined, outer axes parallel):")
print(te.lower(s, inputs + [new_h, new_cell], name="lltm_forward"))

# 2. The backward: te.gradient of each output for its output gradient (the head).
heads = [te.placeholder(t.shape, name=f"grad_{t.op.name}") for t in (new_h, new_cell)]
d_h = te.gradient(new_h, inputs[1:], heads[0])
d_c = te.gradient(new_cell, inputs[1:], heads[1])
d_weights = d_h[2]
print("\n2. d new_h / d weights, from te.gradient (a sum over the batch, not a Jacobian):")
print(te.lower(te.create_schedule(d_weights.op), inputs + heads[:1] + [d_weights],
               name="lltm_grad_weights"))


# 3. A module around the function; the same cell in nn operators and in PyTorch operators.
class LLTM(nn.Module):
    def __init__(self, input_features, state_size):
        super().__init__()
        self.weights = nn.Parameter(nn.empty(3 * state_size, input_features + state_size))
        self.bias = nn.Parameter(nn.empty(3 * state_size))
        stdv = 1.0 / math.sqrt(state_size)
        for p in self.parameters():
            nn.init.uniform_(p, -stdv, stdv)

    def forward(self, x, hidden):
        old_h, old_cell = hidden
        return LLTMFunction(x, old_h, old_cell, self.weights, self.bias)


def lltm_nn(x, old_h, old_cell, weights, bias):
    gates = nn.functional.linear(nn.cat([old_h, x], 1), weights, bias).chunk(3, dim=1)
    new_cell = old_cell + nn.functional.elu(gates[2]) * gates[0].sigmoid()
    return new_cell.tanh() * gates[1].sigmoid(), new_cell


def lltm_torch(x, old_h, old_cell, weights, bias):
    gates = torch.nn.functional.linear(torch.cat([old_h, x], 1), weights, bias).chunk(3, dim=1)
    new_cell = old_cell + torch.nn.functional.elu(gates[2]) * torch.sigmoid(gates[0])
    return torch.tanh(new_cell) * torch.sigmoid(gates[1]), new_cell


nn.manual_seed(0)
rng = np.random.default_rng(0)
cell = LLTM(features, state)
x_np, h_np, c_np = (rng.standard_normal(s).astype("float32") for s in shapes[:3])
x, h, c = nn.tensor(x_np), nn.tensor(h_np), nn.tensor(c_np)

params_nn = [nn.tensor(p.detach().numpy(), requires_grad=True)
             for p in (cell.weights, cell.bias)]
params_torch = [torch.tensor(p.detach().numpy(), requires_grad=True)
                for p in (cell.weights, cell.bias)]
out_te = cell(x, (h, c))
out_nn = lltm_nn(x, h, c, *params_nn)
out_torch = lltm_torch(torch.tensor(x_np), torch.tensor(h_np), torch.tensor(c_np), *params_torch)
for out in (out_te, out_nn):
    (out[0].sum() + 2 * out[1].sum()).backward()
(out_torch[0].sum() + 2 * out_torch[1].sum()).backward()
for a, b, t in zip(out_te, out_nn, out_torch):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)
for p, q, t in zip((cell.weights, cell.bias), params_nn, params_torch):
    np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)
print("\n3. outputs and gradients agree with the nn-operator cell and the PyTorch cell")

target = nn.tensor(np.tanh(rng.standard_normal((batch, state))).astype("float32"))
optimizer = nn.optim.Adam(cell.parameters(), lr=1e-2)
losses = []
for step in range(5 if small else 20):
    optimizer.zero_grad()
    hidden = (h, c)
    for _ in range(3):                              # three steps of the recurrence
        hidden = cell(x, hidden)
    loss = ((hidden[0] - target) ** 2).mean()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("   training loss:", " ".join(f"{v:.4f}" for v in losses))
assert losses[-1] < losses[0], losses


# 4. Forward + backward of one cell step: the te cell next to the PyTorch-operator cell.
def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def median_times(fns, rounds):
    """Median seconds per call of each function, in interleaved rounds (a shared machine's
    load falls on both alike)."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(rounds):
        for fn, spent in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            spent.append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def step_te():
    cell.zero_grad()
    new_h, new_cell = cell(x, (h, c))
    (new_h.sum() + new_cell.sum()).backward()


torch_params = [torch.tensor(p.detach().numpy(), requires_grad=True)
                for p in (cell.weights, cell.bias)]
tx, th, tc = torch.tensor(x_np), torch.tensor(h_np), torch.tensor(c_np)


def step_torch():
    for p in torch_params:
        p.grad = None
    new_h, new_cell = lltm_torch(tx, th, tc, *torch_params)
    (new_h.sum() + new_cell.sum()).backward()


# One thread each: the cell's kernels are small, and on a shared (loaded) machine a parallel
# loop's threads wait for cores more than they compute.
te.set_num_threads(1)
torch.set_num_threads(1)
t_te, t_torch = median_times([step_te, step_torch], 20 if small else 100)
print(f"\n4. forward + backward, batch {batch}, {features} features, state {state} "
      f"({cpu_name()}, 1 thread each):")
print(f"   te cell (from_te): {t_te * 1e3:.3f} ms   PyTorch operators: {t_torch * 1e3:.3f} ms   "
      f"torch / te = {t_torch / t_te:.2f}")
