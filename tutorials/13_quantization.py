# %% [markdown]
# # Quantizing a CNN to int8: post-training quantization and quantization-aware training
#
# PyTorch's eager-mode quantization flow with ``torch`` -> ``nn`` and
# ``torch.ao.quantization`` -> ``nn.quantization``. A small CNN learns scikit-learn's 8x8
# handwritten digits in float32; then
#
# 1. **post-training quantization** (PTQ): fuse conv + batch norm + ReLU, attach observers
#    (``prepare``), run a few training batches through the model to record the ranges of
#    the activations (calibration), and ``convert`` it: each layer becomes an int8 layer
#    (``nn.quantized.ConvReLU2d``...) whose products are uint8 x int8 with int32
#    accumulation, as te kernels;
# 2. **quantization-aware training** (QAT): the fused model is trained a little more with
#    fake quantization in its forward (``prepare_qat``: the weights and activations are
#    rounded to the int8 grid and back, gradients go straight through), then converted.
#
# Both are compared with the float model's test accuracy, and the model sizes are printed.
# ``TW_TUTORIAL_SMALL=1`` runs on a subset, for the test suite.

# %%
import copy
import io
import os
import time

import nn
import nn.data
import nn.datasets
import nn.optim
from nn import quantization as tq

SMALL = os.environ.get("TW_TUTORIAL_SMALL") == "1"
EPOCHS = 2 if SMALL else 10
QAT_EPOCHS = 1 if SMALL else 3
BATCH = 64

nn.manual_seed(0)
images, labels = nn.datasets.load_digits(image_size=8)
if SMALL:
    images, labels = images[:400], labels[:400]
dataset = nn.data.TensorDataset(images, labels)
n_test = len(dataset) // 5
train_set, test_set = nn.data.random_split(dataset, [len(dataset) - n_test, n_test])
train_loader = nn.data.DataLoader(train_set, batch_size=BATCH, shuffle=True, drop_last=True)
test_images = nn.stack([test_set[i][0] for i in range(len(test_set))])
test_labels = nn.stack([test_set[i][1] for i in range(len(test_set))])
print(f"{len(train_set)} training and {len(test_set)} test images of 8x8 pixels")

# %% [markdown]
# ## The float model
#
# ``QuantStub`` and ``DeQuantStub`` mark where the tensors become quantized and float again;
# in the float model they do nothing.

# %%


class DigitsNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv1, self.bn1, self.relu1 = nn.Conv2d(1, 16, 3, padding=1), \
            nn.BatchNorm2d(16), nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv2, self.bn2, self.relu2 = nn.Conv2d(16, 32, 3, padding=1), \
            nn.BatchNorm2d(32), nn.ReLU()
        self.fc1, self.relu3 = nn.Linear(32 * 4 * 4, 64), nn.ReLU()
        self.fc2 = nn.Linear(64, 10)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        x = self.pool(self.relu1(self.bn1(self.conv1(x))))
        x = self.relu2(self.bn2(self.conv2(x)))
        x = self.relu3(self.fc1(x.flatten(1)))
        return self.dequant(self.fc2(x))


FUSIONS = [["conv1", "bn1", "relu1"], ["conv2", "bn2", "relu2"], ["fc1", "relu3"]]


def train(model, epochs, lr, first=0):
    optimizer = nn.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(first, first + epochs):
        model.train()
        total = 0.0
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"  epoch {epoch}: mean loss {total / len(train_loader):.4f}")


def accuracy(model):
    model.eval()
    with nn.no_grad():
        predicted = model(test_images).argmax(1)
    return (predicted == test_labels).float().mean().item()


def size_of(model):
    """The bytes of the model's state dict as nn.save writes it."""
    buffer = io.BytesIO()
    nn.save(model.state_dict(), buffer)
    return buffer.getbuffer().nbytes


began = time.perf_counter()
float_model = DigitsNet()
print("training the float model")
train(float_model, EPOCHS, 3e-3)
float_accuracy = accuracy(float_model)
print(f"float32: test accuracy {float_accuracy:.4f}, {size_of(float_model)} bytes, "
      f"{time.perf_counter() - began:.1f} s")

# %% [markdown]
# ## Post-training quantization
#
# ``get_default_qconfig("x86")`` is PyTorch's: histogram observers for the activations
# (quint8 with ``reduce_range``: 7 bits, which keeps fbgemm's uint8 x int8 pair sums inside
# int16), per-channel symmetric qint8 observers for the weights. ``fuse_modules`` folds each
# batch norm into its convolution's weights (eval mode) and merges the ReLUs.

# %%
ptq_model = copy.deepcopy(float_model).eval()
ptq_model.qconfig = tq.get_default_qconfig("x86")
tq.fuse_modules(ptq_model, FUSIONS, inplace=True)
tq.prepare(ptq_model, inplace=True)
with nn.no_grad():
    for k, (x, _) in enumerate(train_loader):          # calibration
        ptq_model(x)
        if k == 3:
            break
tq.convert(ptq_model, inplace=True)
print(ptq_model)
ptq_accuracy = accuracy(ptq_model)
print(f"int8 (PTQ): test accuracy {ptq_accuracy:.4f} (float {float_accuracy:.4f}), "
      f"{size_of(ptq_model)} bytes")

# %% [markdown]
# ## Quantization-aware training
#
# ``fuse_modules_qat`` keeps each batch norm trainable (``nn.intrinsic.ConvBnReLU2d``);
# ``prepare_qat`` makes them ``nn.intrinsic.qat`` modules with fake-quantized weights and
# adds fake quantization after each activation. After the first epoch the batch-norm
# statistics are frozen and, for the last one, the observers too, as PyTorch's QAT recipe
# does; ``convert`` then folds the batch norms and quantizes.

# %%
qat_model = copy.deepcopy(float_model).train()
qat_model.qconfig = tq.get_default_qat_qconfig("x86")
tq.fuse_modules_qat(qat_model, FUSIONS, inplace=True)
tq.prepare_qat(qat_model, inplace=True)
print("quantization-aware training")
for epoch in range(QAT_EPOCHS):
    if epoch == 1:
        qat_model.apply(nn.intrinsic.qat.freeze_bn_stats)
    if epoch == QAT_EPOCHS - 1 and QAT_EPOCHS > 1:
        qat_model.apply(tq.disable_observer)
    train(qat_model, 1, 2e-4, first=epoch)
qat_int8 = tq.convert(qat_model.eval())
qat_accuracy = accuracy(qat_int8)
print(f"int8 (QAT): test accuracy {qat_accuracy:.4f} (float {float_accuracy:.4f}), "
      f"{size_of(qat_int8)} bytes")

# %% [markdown]
# ## Summary

# %%
print(f"model size: float32 {size_of(float_model)} bytes -> int8 {size_of(ptq_model)} bytes")
print(f"accuracy: float {float_accuracy:.4f}, PTQ {ptq_accuracy:.4f}, QAT {qat_accuracy:.4f}")
print(f"total {time.perf_counter() - began:.1f} s")
if not SMALL:
    assert float_accuracy - ptq_accuracy <= 0.01, (float_accuracy, ptq_accuracy)
    assert float_accuracy - qat_accuracy <= 0.005, (float_accuracy, qat_accuracy)
    assert size_of(ptq_model) < size_of(float_model) / 3
