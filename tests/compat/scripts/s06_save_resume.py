# Save a checkpoint mid-training, resume into fresh objects: the losses continue exactly.
import json
import os

import nn as torch


def make():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    return model, torch.optim.Adam(model.parameters(), lr=0.01)


x, y = torch.ones(16, 3), torch.zeros(16, 1)
x[::2] = -1.0
y[::2] = 1.0


def train(model, opt, steps):
    out = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


model, opt = make()
straight = train(model, opt, 6)
model, opt = make()
first = train(model, opt, 3)
torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 2}, "ck.pth")
model2, opt2 = make()
checkpoint = torch.load("ck.pth", map_location="cpu")
model2.load_state_dict(checkpoint["model"])
opt2.load_state_dict(checkpoint["optimizer"])
resumed = first + train(model2, opt2, 3)
os.remove("ck.pth")
assert resumed == straight, (resumed, straight)
print("RESULT", json.dumps({"exact": {"epoch": checkpoint["epoch"], "resumed_equal": True}}))
