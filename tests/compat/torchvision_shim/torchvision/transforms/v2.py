from nn.vision.transforms.v2 import Compose, Resize  # noqa: F401
