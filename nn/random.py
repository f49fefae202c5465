"""nn's random state, as ``torch.random``: save it with a checkpoint and restore it, so that a
resumed training run draws the same shuffles and dropout masks as an uninterrupted one.

nn draws every random number (factories, ``nn.init``, dropout masks, data shuffling) from one
numpy PCG64 generator, ``nn.tensor._generator``, re-created by ``manual_seed``. Its state is
two 128-bit integers and two small fields; ``get_rng_state`` packs them into a uint8 tensor
(as PyTorch's is a ByteTensor) that ``nn.save`` can store.
"""
from __future__ import annotations

import importlib

import numpy as np

# the module, not the nn.tensor function that shadows it as an attribute of nn
_tensor = importlib.import_module("nn.tensor")

__all__ = ["get_rng_state", "set_rng_state", "manual_seed", "seed", "initial_seed"]

manual_seed = _tensor.manual_seed
_FIELDS = 16 + 16 + 1 + 4       # state, inc (128-bit each), has_uint32, uinteger (32-bit)


def get_rng_state():
    """The generator's state as a uint8 tensor of 37 bytes."""
    bits = _tensor._generator.bit_generator
    if type(bits).__name__ != "PCG64":
        raise RuntimeError(f"get_rng_state: nn's generator is a {type(bits).__name__}, not the "
                           "PCG64 that manual_seed makes")
    st = bits.state
    raw = (st["state"]["state"].to_bytes(16, "little") + st["state"]["inc"].to_bytes(16, "little")
           + bytes([st["has_uint32"]]) + int(st["uinteger"]).to_bytes(4, "little"))
    return _tensor.tensor(np.frombuffer(raw, np.uint8).copy())


def set_rng_state(new_state):
    """Restore a state that ``get_rng_state`` returned."""
    raw = bytes(np.asarray(new_state.tolist() if hasattr(new_state, "tolist") else new_state,
                           np.uint8))
    if len(raw) != _FIELDS:
        raise RuntimeError(f"set_rng_state: expected a uint8 tensor of {_FIELDS} bytes (from "
                           f"get_rng_state), got {len(raw)} bytes")
    bits = np.random.PCG64()
    bits.state = {"bit_generator": "PCG64",
                  "state": {"state": int.from_bytes(raw[:16], "little"),
                            "inc": int.from_bytes(raw[16:32], "little")},
                  "has_uint32": raw[32], "uinteger": int.from_bytes(raw[33:37], "little")}
    _tensor._generator = np.random.Generator(bits)


_initial = [None]


def seed() -> int:
    """Seed the generator from the operating system's entropy; returns the seed."""
    value = int(np.random.SeedSequence().entropy % (1 << 63))
    manual_seed(value)
    _initial[0] = value
    return value


def initial_seed() -> int:
    """The seed of the last ``seed()``/``manual_seed`` made through this module."""
    return _initial[0] if _initial[0] is not None else seed()
