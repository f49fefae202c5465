# %% [markdown]
# # Training a CNN on handwritten digits
#
# A PyTorch training script with ``torch`` replaced by ``nn``: every layer's forward and
# backward, the loss and each optimizer step run as te kernels that tensorweave compiled for
# this machine. The network is the one the project's source material trains on MNIST; no
# downloads are possible here, so it learns scikit-learn's bundled handwritten digits (1,797
# images of 8x8 pixels, resized to 32x32).
#
# The script splits the data into training, validation and test sets with ``random_split``,
# validates after every epoch, saves a checkpoint (model, optimizer, epoch, random state) after
# every epoch and resumes from it when one exists, then measures the test accuracy. Set
# ``TW_TUTORIAL_SMALL=1`` for a quick run on a subset (the test suite does), and
# ``TW_DEVICE=cuda`` to train on an NVIDIA GPU: the model and each batch go there with
# ``.to(device)``, as in PyTorch. Without a GPU, ``NUMBA_ENABLE_CUDASIM=1`` runs the kernels on
# numba's simulator, which is slow: small runs on it use 10x10 images and two batches.

# %%
import os
import tempfile
import time

import nn
import nn.data
import nn.datasets
import nn.optim

SMALL = os.environ.get("TW_TUTORIAL_SMALL") == "1"
DEVICE = nn.device(os.environ.get("TW_DEVICE", "cpu"))
SIMULATED = DEVICE.type == "cuda" and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
# the smallest run: 10x10 images, two batches (on the simulator, or with TW_TUTORIAL_TINY=1)
TINY = SMALL and (SIMULATED or os.environ.get("TW_TUTORIAL_TINY") == "1")
EPOCHS = int(os.environ.get("TW_EPOCHS", 1 if TINY else 3 if SMALL else 12))
SIZE = 10 if TINY else 32
# to try resuming: TW_STOP_AFTER=4 stops the run after epoch 4 (its checkpoint saved); run the
# script again and it continues from there
STOP_AFTER = int(os.environ.get("TW_STOP_AFTER", "-1"))
BATCH = 4 if TINY else 50
CHECKPOINT = os.environ.get("TW_CHECKPOINT") or os.path.join(tempfile.gettempdir(),
                                                             "tw_digits_cnn.nn")

# %% [markdown]
# ## Data
#
# ``load_digits`` returns float32 images in [0, 1] of shape (N, 1, 32, 32) and int64 labels.
# A fifth of the images is held out for the test, a tenth for validation.

# %%
nn.manual_seed(0)
images, labels = nn.datasets.load_digits(image_size=SIZE)
if SMALL:
    images, labels = (images[:10], labels[:10]) if TINY else (images[:300], labels[:300])
dataset = nn.data.TensorDataset(images, labels)
n_test = len(dataset) // 5
n_val = len(dataset) // 10
train_set, val_set, test_set = nn.data.random_split(
    dataset, [len(dataset) - n_val - n_test, n_val, n_test])
train_loader = nn.data.DataLoader(train_set, batch_size=BATCH, shuffle=True)
val_loader = nn.data.DataLoader(val_set, batch_size=200)
test_loader = nn.data.DataLoader(test_set, batch_size=200)
print(f"{len(train_set)} training, {len(val_set)} validation, {len(test_set)} test images")

# %% [markdown]
# ## The network
#
# Two convolutions, two poolings, and a classifier with batch normalization and alpha
# dropout, kaiming-normal initialized.

# %%
SIDE = (SIZE - 2) // 2 - 2 - 1          # the side of the feature maps that reach the classifier
model = nn.Sequential(
    nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2, 2),
    nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2, stride=1),
    nn.Flatten(),
    nn.Linear(64 * SIDE * SIDE, 200), nn.BatchNorm1d(200), nn.ReLU(), nn.AlphaDropout(0.4),
    nn.Linear(200, 10))
for m in model.modules():
    if isinstance(m, (nn.Conv2d, nn.Linear)):
        nn.init.kaiming_normal_(m.weight)
        nn.init.zeros_(m.bias)
model.to(DEVICE)
print(model)

loss_fn = nn.CrossEntropyLoss()
optimizer = nn.optim.Adam(model.parameters(), lr=5e-4, weight_decay=1e-4)

# %% [markdown]
# ## Resume, train, validate, checkpoint
#
# The checkpoint holds everything that the rest of the run depends on, the random state
# included (it decides the shuffles and the dropout masks), so that a resumed run computes
# the same losses as one that was never interrupted.

# %%
start = 0
if os.path.exists(CHECKPOINT):
    ckpt = nn.load(CHECKPOINT)
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    nn.set_rng_state(ckpt["rng_state"])
    start = ckpt["epoch"] + 1
    print(f"resumed after epoch {ckpt['epoch']}")


def accuracy(loader):
    model.eval()
    correct = total = 0
    with nn.no_grad():
        for x, y in loader:
            x, y = x.to(DEVICE), y.to(DEVICE)
            correct += (model(x).argmax(1) == y).sum().item()
            total += len(y)
    return correct / total


losses = []
for epoch in range(start, EPOCHS):
    model.train()
    began, total = time.perf_counter(), 0.0
    for x, y in train_loader:
        x, y = x.to(DEVICE), y.to(DEVICE)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(y)
        losses.append(loss.item())
    val = accuracy(val_loader)
    nn.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "epoch": epoch, "rng_state": nn.get_rng_state()}, CHECKPOINT)
    print(f"epoch {epoch}: loss {total / len(train_set):.6f}, validation accuracy "
          f"{val:.3f}, {time.perf_counter() - began:.1f} s")
    if epoch == STOP_AFTER:
        raise SystemExit(f"stopped after epoch {epoch}; run again to resume")

# %% [markdown]
# ## Test

# %%
test_accuracy = accuracy(test_loader)
print(f"test accuracy {test_accuracy:.3f}")
if not SMALL:
    assert test_accuracy >= 0.97, test_accuracy
os.remove(CHECKPOINT)
