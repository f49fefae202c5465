# Gradients: backward, retain_grad, no_grad, detach, and a custom autograd.Function.
import json

import nn as torch


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x ** 2


x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
y = Cube.apply(x) + torch.sin(x) * x
y.retain_grad()
z = y.sum()
z.backward()
with torch.no_grad():
    frozen = x * 2
w = x.detach()
g2 = torch.autograd.grad((x * x).sum(), x)[0]
print("RESULT", json.dumps({"approx": {"grad": [round(v, 4) for v in x.grad.tolist()]},
                            "exact": {"y_grad": y.grad.tolist(),
                                      "frozen_requires_grad": frozen.requires_grad,
                                      "detached": w.requires_grad, "g2": g2.tolist(),
                                      "leaf": x.is_leaf, "y_leaf": y.is_leaf}}))
