import atexit
import os
import shutil
import tempfile

os.environ.setdefault("TW_VERIFY", "1")
# CI has no GPU: CUDA kernels run on numba's simulator unless NUMBA_ENABLE_CUDASIM=0 is set.
# This must happen before numba is imported; PTX compilation runs in a separate process.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
# Tests write compiled code to a cache of their own, never the user's ~/.cache/tensorweave.
if "TW_CACHE_DIR" not in os.environ:
    _cache = tempfile.mkdtemp(prefix="tw-test-cache-")
    os.environ["TW_CACHE_DIR"] = _cache
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    """The tests marked slow first (in their collection order), the rest after: over xdist's
    two workers the long ones (PTX compiles, tutorial runs in subprocesses) then overlap with
    the many short ones instead of ending the run on one worker while the other is idle."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
