# %% [markdown]
# # Grad-CAM: where a CNN looks, with forward and backward hooks
#
# Grad-CAM (Selvaraju et al., 2017) explains a class score by the activations of a late
# convolution weighted by how much the score depends on them: the gradient of the score with
# respect to each channel, averaged over the image, weights that channel's activation map; the
# ReLU of the weighted sum, scaled to [0, 1], is the heat map. The activations and their
# gradients are caught with hooks, as PyTorch scripts do: ``register_forward_hook`` on the
# layer keeps its output, ``register_full_backward_hook`` keeps the gradient flowing into it.
#
# The network is a small CNN trained for a moment on synthetic images whose class is *where* a
# bright square is (top-left or bottom-right), so a good heat map must light up the square.
# ``TW_TUTORIAL_SMALL=1`` trains on fewer images (the test suite does).

# %%
import os

import numpy as np

import nn
import nn.nn.functional as F

SMALL = os.environ.get("TW_TUTORIAL_SMALL") == "1"
N, SIZE, STEPS = (48, 16, 25) if SMALL else (256, 24, 60)
nn.manual_seed(0)
rng = np.random.default_rng(0)


def make_images(n):
    """Noise, plus a bright 5x5 square in the top-left (class 0) or bottom-right (class 1)."""
    images = rng.uniform(0, 0.3, (n, 3, SIZE, SIZE)).astype(np.float32)
    labels = rng.integers(0, 2, n)
    corners = []
    for k, label in enumerate(labels):
        half = SIZE // 2
        top = rng.integers(0, half - 5) + (half if label else 0)
        left = rng.integers(0, half - 5) + (half if label else 0)
        images[k, :, top:top + 5, left:left + 5] += 0.7
        corners.append((top, left))
    return nn.from_numpy(images), nn.from_numpy(labels.astype(np.int64)), corners


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
                                      nn.MaxPool2d(2),
                                      nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 2)

    def forward(self, x):
        return self.fc(self.pool(self.features(x)).flatten(1))


# %% [markdown]
# ## Train for a moment

# %%
images, labels, _ = make_images(N)
model = SmallCNN()
optimizer = nn.optim.Adam(model.parameters(), lr=0.02)
for step in range(STEPS):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()
model.eval()
with nn.no_grad():
    accuracy = (model(images).argmax(1) == labels).float().mean().item()
print(f"training loss {loss.item():.3f}, accuracy {accuracy:.0%}")

# %% [markdown]
# ## The hooks
#
# The target layer is the last convolution's ReLU (``features[4]``): its output is the
# activation map A (channels x h x w), and the gradient of the class score with respect to A
# arrives at its backward hook as ``grad_output[0]``.

# %%
saved = {}
layer = model.features[4]
forward_handle = layer.register_forward_hook(
    lambda module, inputs, output: saved.__setitem__("activations", output))
backward_handle = layer.register_full_backward_hook(
    lambda module, grad_input, grad_output: saved.__setitem__("gradients",
                                                              grad_output[0].detach()))


def grad_cam(image, target=None):
    """The heat map (SIZE x SIZE, in [0, 1]) for ``target`` (the predicted class if None)."""
    scores = model(image[None])
    target = int(scores.argmax(1).item()) if target is None else target
    saved["activations"].retain_grad()
    model.zero_grad()
    scores[0, target].backward()
    activations = saved["activations"].detach()
    weights = saved["gradients"].mean(dim=(2, 3), keepdim=True)     # one weight per channel
    cam = F.relu((weights * activations).sum(1, keepdim=True))
    cam = F.interpolate(cam, size=(SIZE, SIZE), mode="bilinear", align_corners=False)[0, 0]
    cam = cam / (cam.max() + 1e-8)
    # the backward hook saw the same gradient that autograd gives the activation itself
    np.testing.assert_allclose(saved["gradients"].numpy(),
                               saved["activations"].grad.numpy(), rtol=1e-6, atol=1e-7)
    return cam.numpy(), target


# %% [markdown]
# ## Where does it look?
#
# For new images, the heat map's brightest pixel should fall inside (or next to) the square.

# %%
test_images, test_labels, corners = make_images(12)
hits = 0
for k in range(len(test_images)):
    cam, target = grad_cam(test_images[k])
    y, x = np.unravel_index(np.argmax(cam), cam.shape)
    top, left = corners[k]
    inside = top - 3 <= y <= top + 7 and left - 3 <= x <= left + 7
    hits += inside
    assert cam.shape == (SIZE, SIZE) and 0.0 <= cam.min() and cam.max() <= 1.0 + 1e-6
print(f"heat-map peak on the square in {hits} of {len(test_images)} images")
forward_handle.remove()
backward_handle.remove()
assert not layer._forward_hooks and not layer._backward_hooks
if accuracy >= 0.9:
    assert hits >= len(test_images) // 2, hits

# %% [markdown]
# A row of the last heat map, as text (``#`` bright, ``.`` dark):

# %%
for row in cam[::2]:
    print("".join("#" if v > 0.6 else "+" if v > 0.3 else "." for v in row[::1]))
