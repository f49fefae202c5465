# An MLP fitting a noisy line: torch.nn.Sequential, MSELoss, SGD with momentum.
import json

import nn as torch

torch.manual_seed(0)
x = torch.linspace(-1, 1, 64).unsqueeze(1)
y = 3 * x + 0.5 + 0.05 * torch.randn(64, 1)
model = torch.nn.Sequential(torch.nn.Linear(1, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
loss_fn = torch.nn.MSELoss()
losses = []
for step in range(60):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
assert losses[-1] < 0.05 * losses[0], losses[::10]
print("RESULT", json.dumps({"exact": {"steps": len(losses), "fell_20x": True}}))
