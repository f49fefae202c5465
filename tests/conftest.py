import os
import tempfile

os.environ.setdefault("TW_VERIFY", "1")
# CI has no GPU: CUDA kernels run on numba's simulator unless NUMBA_ENABLE_CUDASIM=0 is set.
# This must happen before numba is imported; PTX compilation runs in a separate process.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
# Tests write compiled code to a cache of their own, never the user's ~/.cache/tensorweave.
os.environ.setdefault("TW_CACHE_DIR", tempfile.mkdtemp(prefix="tw-test-cache-"))
