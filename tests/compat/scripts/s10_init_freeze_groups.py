# Custom initialization with model.apply, counting and freezing parameters, parameter groups.
import json

import nn as torch


def init_weights(m):
    if isinstance(m, torch.nn.Linear):
        torch.nn.init.xavier_uniform_(m.weight)
        torch.nn.init.zeros_(m.bias)


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.ReLU(),
                            torch.nn.Dropout(0.2), torch.nn.Linear(6, 3))
model.apply(init_weights)
total = sum(p.numel() for p in model.parameters())
for p in model[0].parameters():
    p.requires_grad_(False)
trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
opt = torch.optim.SGD([{"params": model[1].parameters(), "lr": 0.1},
                       {"params": model[4].parameters()}], lr=0.01, momentum=0.9)
before = model[0].weight.clone()
loss = model(torch.randn(8, 4)).pow(2).mean()
loss.backward()
opt.step()
assert torch.equal(before, model[0].weight) and model[0].weight.grad is None
names = [n for n, _ in model.named_parameters()]
buffers = [n for n, _ in model.named_buffers()]
print("RESULT", json.dumps({"exact": {"total": total, "trainable": trainable, "names": names,
                                      "buffers": buffers, "lrs": [g["lr"] for g in
                                                                  opt.param_groups],
                                      "keys": list(model.state_dict().keys())}}))
