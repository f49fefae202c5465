# Learning-rate schedules stepped once per epoch, the usual scheduler loop.
import json

import nn as torch

model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
step = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
lrs = []
for epoch in range(8):
    opt.zero_grad()
    model(torch.ones(4, 2)).sum().backward()
    opt.step()
    step.step()
    lrs.append(round(opt.param_groups[0]["lr"], 10))
opt2 = torch.optim.Adam(model.parameters(), lr=0.01)
cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt2, T_max=5, eta_min=0.001)
cos = []
for epoch in range(6):
    opt2.step()
    cosine.step()
    cos.append(round(cosine.get_last_lr()[0], 10))
print("RESULT", json.dumps({"exact": {"step_lr": lrs, "cosine": cos}}))
