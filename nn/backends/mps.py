"""``nn.backends.mps``: Apple's Metal is not a target of nn."""


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False
