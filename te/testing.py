"""Test helpers with TVM's names (``te.testing.assert_allclose``)."""
from __future__ import annotations

import numpy as np


def assert_allclose(actual, desired, rtol=1e-7, atol=0.0, verbose=True):
    """numpy's assert_allclose on arrays or NDArrays."""
    np.testing.assert_allclose(np.asarray(actual), np.asarray(desired), rtol=rtol, atol=atol,
                               verbose=verbose)
