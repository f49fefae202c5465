"""The kernels this backend emits, run block by block in one Python thread: what
``NUMBA_ENABLE_CUDASIM=1`` runs instead of numba's simulator.

numba's simulator runs every CUDA thread of a block as a Python thread, polls them all in a loop
until they finish, and wraps every array in two Python objects: about 0.2 ms per thread for a
trivial kernel. The kernels here come from our own emitter, which uses a small part of the CUDA
API (thread and block indices, shared and local arrays, ``syncthreads``, ``popc``/``clz``), so
they can run with the same semantics at a fraction of the cost (as can hand-written kernels of
the same kind: the sparse rulebook's, with ``cuda.grid``, atomics and device functions):

- a kernel without barriers runs its threads one after another, block by block, in numba's
  order (``np.ndindex`` over the grid, then over the block);
- a kernel with barriers is loaded with each ``cuda.syncthreads()`` turned into ``yield``:
  each thread is a generator, and the block steps all of its threads to the next barrier before
  any goes past it (one legal CUDA schedule of a race-free kernel);
- ``cuda.shared.array`` returns one array per block and call site (numba's rule: the line that
  allocates it), ``cuda.local.array`` a fresh array per call, and kernels index the device
  arrays' numpy storage directly;
- atomics are plain read-modify-writes (one thread runs at a time). A kernel whose threads
  wait for one another outside barriers (a spin lock) would not finish here: none of ours do.

Sources that call registered extern device functions (``codegen_cuda.emit_calls``, which may use
numba's own simulated ``cuda`` module) keep running on numba's simulator, as does everything
outside this backend's kernels (host-side ``cuda.to_device``, ``device_array``, copies).
"""
from __future__ import annotations

import sys

import numpy as np

BARRIER = "cuda.syncthreads()"


def runs_here(source: str) -> bool:
    """Whether the kernels of ``source`` can run on this runner (no extern device functions)."""
    return "_tw_calls" not in source


def barriers_as_yields(source: str) -> str:
    """``source`` with each barrier a ``yield`` (a kernel with barriers becomes a generator)."""
    return source.replace(BARRIER, "yield")


class _Dim3:
    __slots__ = ("x", "y", "z")

    def __init__(self, x=0, y=0, z=0):
        self.x, self.y, self.z = x, y, z

    def set(self, point):
        self.x, self.y, self.z = point

    def __iter__(self):
        return iter((self.x, self.y, self.z))

    def __repr__(self):
        return f"Dim3({self.x}, {self.y}, {self.z})"


class _Shared:
    """``cuda.shared.array``: one array per block and allocating line, as numba's simulator."""

    def __init__(self):
        self.block = {}

    def array(self, shape, dtype, alignment=None):
        f = sys._getframe(1)
        key = (f.f_code, f.f_lineno)
        arr = self.block.get(key)
        if arr is None:
            arr = self.block[key] = np.empty(shape, dtype)
        return arr


class _Local:
    @staticmethod
    def array(shape, dtype, alignment=None):
        return np.empty(shape, dtype)


class _Atomic:
    """``cuda.atomic``: the threads run one at a time, so a read-modify-write is atomic; each
    returns the old value, as CUDA's do."""

    @staticmethod
    def _update(ary, idx, fn):
        old = ary[idx]
        ary[idx] = fn(old)
        return old

    def add(self, ary, idx, val):
        return self._update(ary, idx, lambda old: old + val)

    def sub(self, ary, idx, val):
        return self._update(ary, idx, lambda old: old - val)

    def max(self, ary, idx, val):
        return self._update(ary, idx, lambda old: max(old, val))

    def min(self, ary, idx, val):
        return self._update(ary, idx, lambda old: min(old, val))

    def exch(self, ary, idx, val):
        return self._update(ary, idx, lambda old: val)

    def cas(self, ary, idx, expected, val):
        old = ary[idx]
        if old == expected:
            ary[idx] = val
        return old


def _popc(val):
    return bin(int(val) & 0xFFFFFFFFFFFFFFFF).count("1")


def _clz(val):
    """Leading zeros in the value's width (numba's ``clz``: 64 bits for a 64-bit integer)."""
    bits = 8 * np.dtype(type(val)).itemsize if isinstance(val, np.integer) else 32
    bits = max(bits, 32)
    v = int(val) & ((1 << bits) - 1)
    return bits - v.bit_length()


class SimulatedCuda:
    """The ``cuda`` of an emitted source on the simulator: the kernel-side API above, and
    numba's (simulated) ``cuda`` module for everything else (host-side arrays and copies)."""

    def __init__(self):
        from numba import cuda
        self._numba = cuda
        self.threadIdx, self.blockIdx = _Dim3(), _Dim3()
        self.blockDim, self.gridDim = _Dim3(1, 1, 1), _Dim3(1, 1, 1)
        self.shared, self.local, self.atomic = _Shared(), _Local(), _Atomic()
        self.popc, self.clz = _popc, _clz

    def jit(self, fn=None, device=False, **options):
        """``@cuda.jit``: a kernel; with ``device=True`` the function itself (a device
        function is an ordinary call on this runner)."""
        if fn is None:
            return lambda f: f if device else Kernel(f, self)
        return fn if device else Kernel(fn, self)

    def grid(self, ndim):
        """The absolute thread position, as ``cuda.grid`` (an int for ``ndim`` 1)."""
        t, b, d = self.threadIdx, self.blockIdx, self.blockDim
        pos = (b.x * d.x + t.x, b.y * d.y + t.y, b.z * d.z + t.z)
        return pos[0] if ndim == 1 else pos[:ndim]

    def gridsize(self, ndim):
        g, d = self.gridDim, self.blockDim
        size = (g.x * d.x, g.y * d.y, g.z * d.z)
        return size[0] if ndim == 1 else size[:ndim]

    def syncthreads(self):
        raise RuntimeError("a barrier outside the kernel body: the simulated kernels run "
                           "their barriers as yields (codegen_cuda.simulate)")

    def __getattr__(self, name):
        return getattr(self._numba, name)


def _unwrap(arg):
    ary = getattr(arg, "_ary", None)        # numba's simulated device array: its numpy storage
    return arg if ary is None else ary


class Kernel:
    """A kernel function with numba's launch syntax: ``kernel[grid, block](*args)``."""

    def __init__(self, fn, cuda):
        import inspect
        self.py_func = self.fn = fn
        self.__name__ = fn.__name__
        self._cuda = cuda
        self._barriers = inspect.isgeneratorfunction(fn)

    def __getitem__(self, config):
        grid, block = (tuple(c) if isinstance(c, tuple) else (c,) for c in config[:2])
        return lambda *args: self.run(grid + (1,) * (3 - len(grid)),
                                      block + (1,) * (3 - len(block)), args)

    def run(self, grid, block, args):
        cu, fn = self._cuda, self.fn
        args = [_unwrap(a) for a in args]
        cu.gridDim.set(grid)
        cu.blockDim.set(block)
        tid, bid = cu.threadIdx, cu.blockIdx
        threads = list(np.ndindex(*block))
        for point in np.ndindex(*grid):
            bid.set(point)
            cu.shared.block = {}
            if not self._barriers:
                for t in threads:
                    tid.set(t)
                    fn(*args)
                continue
            live = []
            for t in threads:
                tid.set(t)
                live.append((t, fn(*args)))
            while live:                     # each round: every live thread to its next barrier
                still = []
                for t, gen in live:
                    tid.set(t)
                    try:
                        next(gen)
                    except StopIteration:
                        continue
                    still.append((t, gen))
                live = still
        cu.shared.block = {}
