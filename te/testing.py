"""Test helpers with TVM's names (``te.testing.assert_allclose``) and a schedule checker."""
from __future__ import annotations

import numpy as np


def assert_allclose(actual, desired, rtol=1e-7, atol=0.0, verbose=True):
    """numpy's assert_allclose on arrays or NDArrays."""
    np.testing.assert_allclose(np.asarray(actual), np.asarray(desired), rtol=rtol, atol=atol,
                               verbose=verbose)


def conv2d_nchw_python(x, w, stride=1, padding=0, dilation=1, groups=1, bias=None):
    """Direct 2-d convolution in float64 (TVM's ``topi.testing.conv2d_nchw_python``): a sum
    over the kernel taps of strided windows. ``padding``: an int, (h, w) or (top, left,
    bottom, right); ``bias`` (F,) is added per output channel."""
    def pair(v):
        return (v, v) if isinstance(v, int) else tuple(v)
    (sh, sw), (dh, dw) = pair(stride), pair(dilation)
    if isinstance(padding, int):
        padding = (padding,) * 4
    elif len(padding) == 2:
        padding = (padding[0], padding[1], padding[0], padding[1])
    pt, pl, pb, pr = padding
    x = np.pad(np.asarray(x, np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    N, _, H, W = x.shape
    F, CG, KH, KW = w.shape
    OH = (H - dh * (KH - 1) - 1) // sh + 1
    OW = (W - dw * (KW - 1) - 1) // sw + 1
    out = np.zeros((N, F, OH, OW))
    FG = F // groups
    for g in range(groups):
        xs = x[:, g * CG:(g + 1) * CG]
        ws = np.asarray(w[g * FG:(g + 1) * FG], np.float64)
        for ky in range(KH):
            for kx in range(KW):
                win = xs[:, :, ky * dh:ky * dh + sh * (OH - 1) + 1:sh,
                         kx * dw:kx * dw + sw * (OW - 1) + 1:sw]
                out[:, g * FG:(g + 1) * FG] += np.einsum("nchw,fc->nfhw", win, ws[:, :, ky, kx])
    return out if bias is None else out + np.asarray(bias).reshape(1, -1, 1, 1)


def random_inputs(tensors, shape_values=None, seed=0):
    """Random numpy arrays for placeholder tensors (``shape_values`` binds te.var sizes)."""
    from .arith import simplify
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


def simulate_gpu_if_absent() -> bool:
    """For scripts and tutorials that run GPU kernels: where no CUDA driver can be found (and
    numba is not imported yet), run them on numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)
    and say so. Returns whether the simulator is on."""
    import ctypes.util
    import os
    import sys
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return True
    if ctypes.util.find_library("cuda") is not None or "numba" in sys.modules:
        return False
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    print("No CUDA driver here: the GPU kernels run on numba's CUDA simulator (one Python "
          "thread per GPU thread: slow; TW_TUTORIAL_SMALL=1 keeps the problems small).")
    return True


# ----------------------------------------------------------------------------- guard pages

_PAGE = None
_CANARY = 0xA5


def _libc_mprotect():
    import ctypes
    import ctypes.util
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    libc.mprotect.restype = ctypes.c_int
    return libc.mprotect


def _map_address(m) -> int:
    import ctypes
    view = ctypes.c_char.from_buffer(m)
    try:
        return ctypes.addressof(view)
    finally:
        del view            # release the export, so that the mapping can be closed later


def guarded_empty(shape, dtype="float32", at="end"):
    """An uninitialized C-contiguous array between two inaccessible (PROT_NONE) pages, so that
    a read or write past either end faults (SIGSEGV) instead of silently succeeding.

    ``at="end"`` (default) puts the last byte against the trailing guard page (an access one
    element past the end faults); ``at="start"`` puts the first byte against the leading guard
    page (one element before the start faults). The bytes between the data and the other guard
    page (under a page, the "slack") are filled with a canary that ``check_guards`` checks.
    Elements stay aligned to the itemsize: for a non-power-of-two itemsize, ``at="end"`` leaves
    under one element of slack after the end. The mapping lives as long as the array (it is the
    array's base) and is unmapped with it.
    """
    import mmap
    global _PAGE
    if at not in ("end", "start"):
        raise ValueError(f"guarded_empty: at must be 'end' or 'start', got {at!r}")
    dtype = np.dtype(dtype)
    shape = (int(shape),) if np.isscalar(shape) else tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"guarded_empty: negative dimension in shape {shape}")
    if _PAGE is None:
        _PAGE = mmap.PAGESIZE
    page = _PAGE
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    data_pages = -(-nbytes // page)
    m = mmap.mmap(-1, (data_pages + 2) * page, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    m[page:page + data_pages * page] = bytes([_CANARY]) * (data_pages * page)
    if at == "end":
        slack = data_pages * page - nbytes
        offset = page + slack - slack % dtype.itemsize
    else:
        offset = page
    base = _map_address(m)
    mprotect = _libc_mprotect()
    for addr in (base, base + (data_pages + 1) * page):
        if mprotect(addr, page, 0) != 0:        # PROT_NONE
            import ctypes
            raise OSError(ctypes.get_errno(), "guarded_empty: mprotect of a guard page failed")
    return np.ndarray(shape, dtype=dtype, buffer=m, offset=offset)


def guarded_array(values, dtype=None, at="end"):
    """A copy of ``values`` (array-like) in a ``guarded_empty`` array of the same shape."""
    src = np.asarray(values, dtype=dtype)
    out = guarded_empty(src.shape, src.dtype, at=at)
    out[...] = src
    return out


def check_guards(arr):
    """Raise AssertionError if the canary bytes between a ``guarded_empty`` array's data and its
    guard pages were overwritten (a write out of bounds by less than a page)."""
    import mmap
    m = arr
    while m is not None and not isinstance(m, mmap.mmap):
        m = getattr(m, "base", None)
    if m is None:
        raise ValueError("check_guards: the array was not made by guarded_empty")
    page = _PAGE
    start = arr.__array_interface__["data"][0] - _map_address(m)
    end = start + arr.nbytes
    for lo, hi in ((page, start), (end, len(m) - page)):
        chunk = m[lo:hi]
        if chunk.count(_CANARY) != len(chunk):
            bad = next(i for i, b in enumerate(chunk) if b != _CANARY)
            where = "before the start" if hi == start else "past the end"
            raise AssertionError(f"a write out of bounds: byte {lo + bad} of the mapping, "
                                 f"{where} of the array's data (bytes {start}..{end})")
