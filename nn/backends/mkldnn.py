"""``nn.backends.mkldnn``: nn compiles its CPU kernels with LLVM and calls no oneDNN."""
enabled = False


def is_available() -> bool:
    return False
