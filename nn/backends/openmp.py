"""``nn.backends.openmp``: whether parallel loops run on libgomp's thread pool."""


def is_available() -> bool:
    from te.runtime.threads import gomp
    return gomp() is not None
