"""Test helpers with TVM's names (``te.testing.assert_allclose``) and a schedule checker."""
from __future__ import annotations

import numpy as np


def assert_allclose(actual, desired, rtol=1e-7, atol=0.0, verbose=True):
    """numpy's assert_allclose on arrays or NDArrays."""
    np.testing.assert_allclose(np.asarray(actual), np.asarray(desired), rtol=rtol, atol=atol,
                               verbose=verbose)


def random_inputs(tensors, shape_values=None, seed=0):
    """Random numpy arrays for placeholder tensors (``shape_values`` binds te.var sizes)."""
    from schedule.simplify import simplify
    from te.expr import IntImm, const
    from te.functor import substitute
    rng = np.random.default_rng(seed)
    vmap = {v: const(x, v.dtype) for v, x in (shape_values or {}).items()}
    out = []
    for t in tensors:
        shape = []
        for d in t.shape:
            e = simplify(substitute(d, vmap))
            if not isinstance(e, IntImm):
                raise ValueError(f"random_inputs: give a value for the sizes in {t.name}'s shape")
            shape.append(e.value)
        dt = t.dtype
        if dt.startswith("float"):
            arr = rng.uniform(-1, 1, size=shape).astype(dt)
        elif dt == "bool":
            arr = rng.integers(0, 2, size=shape).astype(bool)
        elif dt.startswith("uint"):
            arr = rng.integers(0, 8, size=shape).astype(dt)
        else:
            arr = rng.integers(-8, 8, size=shape).astype(dt)
        out.append(arr)
    return out


def verify_schedule(sch, args, inputs, outputs, reference, rtol=1e-5, atol=1e-6,
                    target="llvm", interpret=True):
    """Check numpy reference = interpreter = compiled code for a schedule.

    ``inputs`` are arrays for the leading args, ``outputs`` arrays (any content) for the rest;
    ``reference(*inputs)`` returns the expected output(s). Returns the compiled module.
    """
    import te
    from schedule.interp import run
    expected = reference(*inputs)
    if not isinstance(expected, (list, tuple)):
        expected = [expected]
    lowered = te.lower(sch, args, name="verify")
    if interpret:
        outs = [np.zeros_like(o) for o in outputs]
        run(lowered, *inputs, *outs)
        for o, e in zip(outs, expected):
            np.testing.assert_allclose(o, e, rtol=rtol, atol=atol,
                                       err_msg="interpreter differs from numpy (lowering bug)")
    mod = te.build(sch, args, target=target, name="verify")
    outs = [np.full_like(o, 7) for o in outputs]
    mod(*inputs, *outs)
    for o, e in zip(outs, expected):
        np.testing.assert_allclose(o, e, rtol=rtol, atol=atol,
                                   err_msg="compiled code differs from numpy (codegen bug)")
    return mod
