"""A stand-in for the few torchvision names the seed script uses, for the PyTorch reference run
where torchvision is not installed: MNIST is read by nn.vision (the same IDX files, PIL
samples), Resize is nn.vision's PIL resize (Pillow's, as torchvision's), and ToTensor returns a
torch tensor of the same values. Only the training itself differs between the two runs."""
from . import datasets, transforms  # noqa: F401
