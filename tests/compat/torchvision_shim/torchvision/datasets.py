from nn.vision.datasets import MNIST  # noqa: F401  (returns PIL images, as torchvision's)
