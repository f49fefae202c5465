"""nn's random state, as ``torch.random``: ``nn.Generator`` objects, the default generator
that ``nn.manual_seed`` seeds, and its state saved with a checkpoint and restored, so that a
resumed training run draws the same shuffles and dropout masks as an uninterrupted one.

nn draws every random number (factories, ``nn.init``, dropout masks, data shuffling) from
``nn.default_generator`` unless a ``generator=`` is passed. An ``nn.Generator`` is a numpy
PCG64 ``numpy.random.Generator`` (a subclass), so it is accepted wherever nn takes
``generator=`` (``rand``/``randn``/``randint``/``randperm``/``normal``, ``Tensor.normal_``...,
``nn.init``, ``RandomSampler``, ``DataLoader``, ``random_split``). Its state is two 128-bit
integers and two small fields; ``get_state`` packs them into a uint8 tensor of 37 bytes (as
PyTorch's is a ByteTensor) that ``nn.save`` can store. Streams differ from PyTorch's (its
Mersenne Twister / Philox); seeding semantics do not.
"""
from __future__ import annotations

import importlib

import numpy as np

from .device import device as _device

# the module, not the nn.tensor function that shadows it as an attribute of nn
_tensor = importlib.import_module("nn.tensor")

__all__ = ["Generator", "default_generator", "get_rng_state", "set_rng_state", "manual_seed",
           "seed", "initial_seed", "fork_rng", "poisson"]

_FIELDS = 16 + 16 + 1 + 4       # state, inc (128-bit each), has_uint32, uinteger (32-bit)


def _check_seed(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: seed must be an int, got {type(value).__name__}")
    value = int(value)
    if not -(1 << 63) <= value < (1 << 64):
        raise ValueError(f"{name}: seed must be in [-2**63, 2**64), got {value}")
    return value % (1 << 64)        # PyTorch wraps negative seeds the same way


class Generator(np.random.Generator):
    """A random number generator, as ``torch.Generator``: ``manual_seed``, ``seed``,
    ``initial_seed``, ``get_state``, ``set_state``; ``device`` is accepted (CPU draws)."""

    def __init__(self, device="cpu"):
        super().__init__(np.random.PCG64())
        self.device = _device(device) if isinstance(device, str) else device
        self._initial = None

    def manual_seed(self, seed) -> Generator:
        """Re-seed in place; returns the generator."""
        seed = _check_seed(seed, "Generator.manual_seed")
        self.bit_generator.state = np.random.PCG64(seed).state
        self._initial = seed
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed."""
        value = int(np.random.SeedSequence().entropy % (1 << 63))
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        """The seed of the last ``manual_seed``/``seed`` (a fresh generator seeds itself)."""
        if self._initial is None:
            self.seed()
        return self._initial

    def get_state(self):
        """The state as a uint8 tensor of 37 bytes."""
        st = self.bit_generator.state
        raw = (st["state"]["state"].to_bytes(16, "little")
               + st["state"]["inc"].to_bytes(16, "little")
               + bytes([st["has_uint32"]]) + int(st["uinteger"]).to_bytes(4, "little"))
        return _tensor.tensor(np.frombuffer(raw, np.uint8).copy())

    def set_state(self, new_state) -> Generator:
        """Restore a state that ``get_state`` returned; returns the generator."""
        values = new_state.tolist() if hasattr(new_state, "tolist") else list(new_state)
        raw = bytes(np.asarray(values, np.uint8).reshape(-1))
        if len(raw) != _FIELDS:
            raise RuntimeError(f"set_state: expected a uint8 tensor of {_FIELDS} bytes (from "
                               f"get_state / get_rng_state), got {len(raw)} bytes")
        self.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": int.from_bytes(raw[:16], "little"),
                      "inc": int.from_bytes(raw[16:32], "little")},
            "has_uint32": raw[32], "uinteger": int.from_bytes(raw[33:37], "little")}
        return self

    def __repr__(self):
        return f"<nn.Generator object at {id(self):#x}>"

    __str__ = __repr__

    def __reduce__(self):           # DataLoader workers started by spawn get a copy
        return (_rebuild, (self.device.type, self.bit_generator.state, self._initial))


def _rebuild(device, state, initial):
    g = Generator(device)
    g.bit_generator.state = state
    g._initial = initial
    return g


default_generator = Generator()
default_generator.bit_generator.state = _tensor._generator.bit_generator.state
_tensor._generator = default_generator


def manual_seed(seed) -> Generator:
    """Seed ``nn.default_generator``; returns it."""
    return _tensor.manual_seed(seed)


def _default() -> Generator:
    generator = _tensor._generator
    if not isinstance(generator, Generator):        # replaced from outside: adopt it
        adopted = Generator()
        adopted.bit_generator.state = generator.bit_generator.state
        _tensor._generator = generator = adopted
    return generator


def get_rng_state():
    """The default generator's state as a uint8 tensor of 37 bytes."""
    return _default().get_state()


def set_rng_state(new_state):
    """Restore a state that ``get_rng_state`` returned."""
    _default().set_state(new_state)


def seed() -> int:
    """Seed the default generator from the operating system's entropy; returns the seed."""
    return _default().seed()


def initial_seed() -> int:
    """The seed of the default generator's last ``manual_seed``/``seed``."""
    return _default().initial_seed()


# ----------------------------------------------------------------------------- the other fills
# PyTorch's remaining in-place random fills and ``poisson``, each taking ``generator=``

_MANTISSA = {"float16": 11, "float32": 24, "float64": 53}


def _random_(self, from_=0, to=None, *, generator=None):
    """Integers uniform in ``[from, to - 1]`` (``random_(to)``: ``[0, to - 1]``; no bounds:
    ``[0, 2**mantissa]`` for floats, the dtype's range for integers), as PyTorch's."""
    dtype = str(self.dtype)
    if to is None and from_ != 0:
        from_, to = 0, from_
    if to is None:
        to = (1 << _MANTISSA[dtype]) + 1 if dtype in _MANTISSA else (
            2 if dtype == "bool" else int(np.iinfo(dtype).max) + 1)
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} "
                           f">= to={to}")
    return self._fill_random(_tensor._rng(generator).integers(from_, to, self.shape))


def _cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    u = _tensor._rng(generator).random(self.shape)
    return self._fill_random(median + sigma * np.tan(np.pi * (u - 0.5)))


def _log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    return self._fill_random(_tensor._rng(generator).lognormal(mean, std, self.shape))


def _geometric_(self, p, *, generator=None):
    if not 0 < p <= 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1], but got p={p}")
    return self._fill_random(_tensor._rng(generator).geometric(p, self.shape))


def poisson(input, generator=None):
    """Samples of a Poisson distribution with rates ``input`` (as ``torch.poisson``)."""
    rates = input.detach().numpy()
    if (rates < 0).any():
        raise RuntimeError("poisson: the rates (input) must be non-negative")
    draws = _tensor._rng(generator).poisson(rates).astype(rates.dtype)
    return _tensor.from_numpy(draws)


_tensor.Tensor.random_ = _random_
_tensor.Tensor.cauchy_ = _cauchy_
_tensor.Tensor.log_normal_ = _log_normal_
_tensor.Tensor.geometric_ = _geometric_


class fork_rng:
    """``with nn.random.fork_rng():`` restores the default generator's state on exit."""

    def __init__(self, devices=None, enabled=True):
        self.enabled = enabled

    def __enter__(self):
        if self.enabled:
            self._state = get_rng_state()

    def __exit__(self, *exc):
        if self.enabled:
            set_rng_state(self._state)
        return False
