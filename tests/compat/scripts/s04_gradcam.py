# Grad-CAM with a forward hook (activations) and a full backward hook (gradients).
import json

import nn as torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(torch.nn.Conv2d(3, 6, 3, padding=1),
                                            torch.nn.ReLU(),
                                            torch.nn.Conv2d(6, 8, 3, padding=1),
                                            torch.nn.ReLU())
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(self.pool(self.features(x)).flatten(1))


torch.manual_seed(0)
net = Net().eval()
saved = {}
layer = net.features[2]
h1 = layer.register_forward_hook(lambda m, i, o: saved.__setitem__("act", o.detach()))
h2 = layer.register_full_backward_hook(
    lambda m, gi, go: saved.__setitem__("grad", go[0].detach()))
image = torch.rand(1, 3, 8, 8)
scores = net(image)
cls = scores.argmax(1).item()
net.zero_grad()
scores[0, cls].backward()
weights = saved["grad"].mean(dim=(2, 3), keepdim=True)
cam = torch.relu((weights * saved["act"]).sum(1))
cam = cam / (cam.max() + 1e-8)
h1.remove()
h2.remove()
assert cam.shape == (1, 8, 8) and float(cam.max()) <= 1.0 and float(cam.min()) >= 0.0
print("RESULT", json.dumps({"exact": {"act": list(saved["act"].shape),
                                      "grad": list(saved["grad"].shape),
                                      "cam": list(cam.shape)}}))
