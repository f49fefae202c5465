"""The same small models in nn and in torch (weights copied from nn), for the flow tests."""
import numpy as np
import torch
import torch.ao.quantization as tq

import nn
from nn import quantization as nq


class Net(nn.Module):
    """The issue's example: QuantStub, conv, relu, FloatFunctional.add, fc, DeQuantStub."""

    def __init__(self):
        super().__init__()
        self.quant, self.dequant = nq.QuantStub(), nq.DeQuantStub()
        self.conv = nn.Conv2d(1, 8, 3)
        self.relu = nn.ReLU()
        self.fc = nn.Linear(8 * 6 * 6, 10)
        self.skip = nn.quantized.FloatFunctional()

    def forward(self, x):
        x = self.quant(x)
        y = self.relu(self.conv(x))
        y = self.skip.add(y, y)
        return self.dequant(self.fc(y.flatten(1)))


class TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.conv = torch.nn.Conv2d(1, 8, 3)
        self.relu = torch.nn.ReLU()
        self.fc = torch.nn.Linear(8 * 6 * 6, 10)
        self.skip = torch.ao.nn.quantized.FloatFunctional()

    def forward(self, x):
        x = self.quant(x)
        y = self.relu(self.conv(x))
        y = self.skip.add(y, y)
        return self.dequant(self.fc(y.flatten(1)))


class BnNet(nn.Module):
    """conv + bn + relu, conv + bn, linear + relu: the fusions of a small CNN."""

    def __init__(self):
        super().__init__()
        self.quant, self.dequant = nq.QuantStub(), nq.DeQuantStub()
        self.conv1, self.bn1, self.relu1 = nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), \
            nn.ReLU()
        self.conv2, self.bn2 = nn.Conv2d(4, 4, 3, stride=2), nn.BatchNorm2d(4)
        self.fc, self.relu2 = nn.Linear(4 * 3 * 3, 6), nn.ReLU()

    def forward(self, x):
        x = self.quant(x)
        x = self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x)))))
        return self.dequant(self.relu2(self.fc(x.flatten(1))))


class TorchBnNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.conv1, self.bn1, self.relu1 = torch.nn.Conv2d(2, 4, 3, padding=1), \
            torch.nn.BatchNorm2d(4), torch.nn.ReLU()
        self.conv2, self.bn2 = torch.nn.Conv2d(4, 4, 3, stride=2), torch.nn.BatchNorm2d(4)
        self.fc, self.relu2 = torch.nn.Linear(4 * 3 * 3, 6), torch.nn.ReLU()

    def forward(self, x):
        x = self.quant(x)
        x = self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x)))))
        return self.dequant(self.relu2(self.fc(x.flatten(1))))


BN_FUSIONS = [["conv1", "bn1", "relu1"], ["conv2", "bn2"], ["fc", "relu2"]]


def randomize_bn(model, seed):
    """Non-trivial BatchNorm statistics and affine parameters (nn model)."""
    rng = np.random.default_rng(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean = nn.tensor(rng.standard_normal(c).astype(np.float32))
            m.running_var = nn.tensor(rng.uniform(0.5, 2.0, c).astype(np.float32))
            m.weight.data = nn.tensor(rng.uniform(0.5, 1.5, c).astype(np.float32))
            m.bias.data = nn.tensor(rng.standard_normal(c).astype(np.float32) * 0.1)


def twin(ours, theirs):
    """``theirs`` with every parameter and buffer of ``ours`` copied in."""
    state = {k: torch.from_numpy(np.array(v.detach().numpy()))
             for k, v in ours.state_dict().items()}
    theirs.load_state_dict(state)
    return theirs


def batches(seed, n, shape):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]
