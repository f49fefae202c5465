"""Checkpoints: ``nn.save`` / ``nn.load`` for state dicts and checkpoint dicts, in a format that
holds data only, so that loading a file can never run code (no pickle anywhere).

A file is: the 8-byte magic ``TWCKPT01``, the header's length (8 bytes) and CRC-32 (4 bytes),
little-endian; the header, a UTF-8 JSON document describing the saved object as a tree of tagged
nodes (dict, OrderedDict, list, tuple, str, int, float (exact, as ``float.hex``), bool, None,
tensor, numpy array or scalar); then the raw little-endian bytes of every tensor and array,
one after the other, each described in the header by dtype, shape, byte length and CRC-32. A
truncated or damaged file is reported as such, never half loaded. Saving to a path writes a
temporary file in the same directory, fsyncs it and renames it over the target, so a crash
mid-save leaves the old file intact (a process killed then leaves at most a hidden
``.NAME.<random>.tmp`` file beside it). Tensors load as plain nn tensors that do not require grad
(a Parameter saves as its data); the same tensor object saved twice loads as one tensor.
"""
from __future__ import annotations

import collections
import io
import json
import math
import os
import struct
import uuid
import zlib

import numpy as np

from .device import cuda_available, device, host
from .tensor import Tensor

__all__ = ["save", "load", "CheckpointError"]

MAGIC = b"TWCKPT01"
_PREFIX = struct.Struct("<8sQI")         # magic, header length, header CRC-32
_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64")


class CheckpointError(ValueError):
    """A file that is not a complete, undamaged checkpoint."""


# ----------------------------------------------------------------------------------- save

class _Writer:
    """Turns an object into the header tree, collecting the arrays to write after it."""

    def __init__(self):
        self.arrays = []            # little-endian, C-contiguous arrays, in file order
        self.offset = 0
        self.seen = {}              # id(tensor) -> its node, so shared tensors load as one
        self.active = set()         # ids of the containers being encoded (cycle detection)

    def encode(self, obj, path):
        if obj is None:
            return {"type": "none"}
        if isinstance(obj, bool):
            return {"type": "bool", "value": obj}
        if type(obj) is int:
            return {"type": "int", "value": obj}
        if type(obj) is float:
            return {"type": "float", "value": obj.hex()}
        if type(obj) is str:
            return {"type": "str", "value": obj}
        if isinstance(obj, Tensor):
            return self._tensor(obj, path)
        if isinstance(obj, (np.ndarray, np.generic)):
            kind = "ndarray" if isinstance(obj, np.ndarray) else "numpy_scalar"
            return self._array(np.asarray(obj), kind, path)
        if type(obj) in (dict, collections.OrderedDict, list, tuple):
            return self._container(obj, path)
        raise TypeError(f"{path}: cannot save object of type {_type_name(obj)}; nn.save takes "
                        "tensors, numpy arrays, numbers, strings, bools, None and dicts, "
                        "OrderedDicts, lists and tuples of these")

    def _container(self, obj, path):
        if id(obj) in self.active:
            raise ValueError(f"{path}: cannot save a container that contains itself")
        self.active.add(id(obj))
        try:
            if isinstance(obj, dict):
                kind = "dict" if type(obj) is dict else "ordered_dict"
                items = [[self._key(k, path), self.encode(v, f"{path}[{k!r}]")]
                         for k, v in obj.items()]
                return {"type": kind, "items": items}
            kind = type(obj).__name__
            return {"type": kind, "items": [self.encode(v, f"{path}[{i}]")
                                            for i, v in enumerate(obj)]}
        finally:
            self.active.discard(id(obj))

    def _key(self, key, path):
        if key is None or type(key) in (bool, int, float, str):
            return self.encode(key, path)
        if type(key) is tuple:
            return {"type": "tuple", "items": [self._key(k, path) for k in key]}
        raise TypeError(f"{path}: cannot save a dict key of type {_type_name(key)} ({key!r}); "
                        "keys may be strings, numbers, bools, None or tuples of these")

    def _tensor(self, tensor, path):
        node = self.seen.get(id(tensor))
        if node is None:
            data = host(tensor.detach()._data)
            node = self._array(data, "tensor", path)
            node["device"] = tensor.device.type
            node["ref"] = len(self.seen)
            self.seen[id(tensor)] = node
        return node

    def _array(self, array, kind, path):
        if array.dtype.name not in _DTYPES:
            raise TypeError(f"{path}: cannot save an array of dtype {array.dtype}; supported "
                            f"dtypes are {', '.join(_DTYPES)}")
        data = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
        raw = data.reshape(-1).view(np.uint8)
        node = {"type": kind, "dtype": array.dtype.name, "shape": list(array.shape),
                "offset": self.offset, "nbytes": raw.size, "crc32": zlib.crc32(raw)}
        self.arrays.append(raw)
        self.offset += raw.size
        return node


def _type_name(obj) -> str:
    cls = type(obj)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _write(obj, stream):
    writer = _Writer()
    tree = writer.encode(obj, "checkpoint")
    header = json.dumps({"format": "tensorweave-checkpoint", "version": 1, "object": tree,
                         "data_bytes": writer.offset}, separators=(",", ":"),
                        allow_nan=False).encode("utf-8")
    stream.write(_PREFIX.pack(MAGIC, len(header), zlib.crc32(header)))
    stream.write(header)
    for raw in writer.arrays:
        stream.write(raw)


def save(obj, f):
    """Write ``obj`` (a state dict or a checkpoint dict; see the module docstring) to ``f``, a
    path (replaced atomically) or a binary file object (written at its current position)."""
    if not isinstance(f, (str, os.PathLike)):
        if not hasattr(f, "write"):
            raise TypeError(f"nn.save: f must be a path or a binary file object, not "
                            f"{type(f).__name__}")
        _write(obj, f)
        return
    path = os.path.abspath(os.fspath(f))
    folder, name = os.path.split(path)
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"nn.save: cannot write {os.fspath(f)!r}: the folder {folder!r} "
                                "does not exist")
    temp = os.path.join(folder, f".{name}.{uuid.uuid4().hex[:12]}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as stream:
            _write(obj, stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.remove(temp)
        raise
    _fsync_folder(folder)


def _fsync_folder(folder):
    """Make the rename itself durable (where the platform lets a folder be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ----------------------------------------------------------------------------------- load

class _Reader:
    """Rebuilds the object from the header tree, reading array bytes from the stream."""

    def __init__(self, stream, name, map_location):
        self.stream, self.name = stream, name
        self.available = _remaining(stream)     # bytes left in the file (None: cannot tell)
        self.position = 0                       # bytes of tensor data read so far
        self.map_location = map_location
        self.tensors = {}               # ref -> loaded tensor (one object per saved tensor)

    def fail(self, what):
        raise CheckpointError(f"nn.load: {self.name} is truncated or corrupt: {what}")

    def decode(self, node, path):
        if not isinstance(node, dict) or "type" not in node:
            self.fail(f"{path} is not a valid node")
        kind = node["type"]
        try:
            if kind == "none":
                return None
            if kind in ("bool", "int", "str"):
                value = node["value"]
                if type(value) is not {"bool": bool, "int": int, "str": str}[kind]:
                    self.fail(f"{path} holds a {type(value).__name__}, not a {kind}")
                return value
            if kind == "float":
                return float.fromhex(node["value"])
            if kind in ("dict", "ordered_dict"):
                cls = dict if kind == "dict" else collections.OrderedDict
                out = cls()
                for key_node, value_node in node["items"]:
                    key = self.decode(key_node, path)
                    out[key] = self.decode(value_node, f"{path}[{key!r}]")
                return out
            if kind in ("list", "tuple"):
                items = [self.decode(v, f"{path}[{i}]") for i, v in enumerate(node["items"])]
                return items if kind == "list" else tuple(items)
            if kind in ("tensor", "ndarray", "numpy_scalar"):
                return self._array(node, kind, path)
        except (KeyError, TypeError, ValueError) as error:
            if isinstance(error, CheckpointError):
                raise
            self.fail(f"{path} is malformed ({type(error).__name__}: {error})")
        self.fail(f"{path} has the unknown type {kind!r}")

    def _array(self, node, kind, path):
        if kind == "tensor" and node["ref"] in self.tensors:
            return self.tensors[node["ref"]]
        dtype, shape, nbytes = node["dtype"], tuple(node["shape"]), node["nbytes"]
        if dtype not in _DTYPES:
            self.fail(f"{path} has the unknown dtype {dtype!r}")
        little = np.dtype(dtype).newbyteorder("<")
        if nbytes != math.prod(shape) * little.itemsize or node["offset"] != self.position:
            self.fail(f"{path}'s size or place in the file does not match its shape {shape}")
        if self.available is not None and nbytes > self.available:
            self.fail(f"expected {nbytes} bytes of data for {path}, found {self.available}")
        buffer = bytearray(nbytes)
        got = self.stream.readinto(buffer) if nbytes else 0
        if got != nbytes:
            self.fail(f"expected {nbytes} bytes of data for {path}, found {got}")
        if self.available is not None:
            self.available -= nbytes
        if zlib.crc32(buffer) != node["crc32"]:
            self.fail(f"the data of {path} does not match its checksum")
        self.position += nbytes
        array = np.frombuffer(buffer, little).reshape(shape).astype(dtype, copy=False)
        if kind == "ndarray":
            return array
        if kind == "numpy_scalar":
            return array[()]
        tensor = _place(Tensor(array), node.get("device", "cpu"), self.map_location)
        self.tensors[node["ref"]] = tensor
        return tensor


def _place(tensor, saved, map_location):
    """``tensor`` on the device ``map_location`` says for a tensor saved on ``saved``."""
    target = saved
    if isinstance(map_location, dict):
        target = map_location.get(saved, saved)
    elif map_location is not None:
        target = map_location
    target = device(str(target))
    if target.type == "cuda" and not cuda_available():
        raise RuntimeError("Attempting to deserialize object on a CUDA device but "
                           "nn.cuda.is_available() is False. If you are running on a CPU-only "
                           "machine, please use nn.load with map_location='cpu' to map your "
                           "tensors to the CPU.")
    return tensor if target == tensor.device else tensor.to(target)


def load(f, map_location=None, *, weights_only=True):
    """The object saved by ``nn.save`` in ``f`` (a path or a binary file object). Tensors go
    to ``map_location`` ("cpu", "cuda", an ``nn.device``, or a dict from saved to wanted
    device), else to the device they were saved from. The format holds only data, so every
    load is a weights-only load; ``weights_only`` is accepted for PyTorch's scripts."""
    if not (map_location is None or isinstance(map_location, (str, device, dict))):
        raise TypeError(f"nn.load: map_location must be None, a device string such as 'cpu', "
                        f"an nn.device or a dict from saved to wanted device, not "
                        f"{type(map_location).__name__}")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as stream:
            return _read(stream, repr(os.fspath(f)), map_location)
    if not hasattr(f, "read"):
        raise TypeError(f"nn.load: f must be a path or a binary file object, not "
                        f"{type(f).__name__}")
    if not hasattr(f, "readinto"):
        f = io.BytesIO(f.read())
    return _read(f, "the stream", map_location)


def _remaining(stream):
    """The bytes left after the current position of a seekable stream, else None."""
    try:
        here = stream.tell()
        end = stream.seek(0, os.SEEK_END)
        stream.seek(here)
    except (AttributeError, OSError, ValueError):
        return None
    return end - here


def _read(stream, name, map_location):
    prefix = stream.read(_PREFIX.size)
    if len(prefix) < _PREFIX.size or not prefix.startswith(MAGIC):
        if prefix[:len(MAGIC)] == MAGIC[:len(prefix)] and len(prefix) < _PREFIX.size:
            raise CheckpointError(f"nn.load: {name} is truncated or corrupt: it ends after "
                                  f"{len(prefix)} bytes")
        hint = (" (it looks like a zip archive, as torch.save writes: load it with torch and "
                "save its tensors with nn.save)" if prefix.startswith(b"PK") else "")
        raise CheckpointError(f"nn.load: {name} is not a tensorweave checkpoint: it does not "
                              f"start with {MAGIC!r}{hint}")
    _, size, crc = _PREFIX.unpack(prefix)
    left = _remaining(stream)
    if left is not None and size > left:        # never allocate what a damaged length says
        raise CheckpointError(f"nn.load: {name} is truncated or corrupt: the header should "
                              f"have {size} bytes, found {left}")
    header = stream.read(size)
    reader = _Reader(stream, name, map_location)
    if len(header) != size:
        reader.fail(f"the header should have {size} bytes, found {len(header)}")
    if zlib.crc32(header) != crc:
        reader.fail("the header does not match its checksum")
    try:
        document = json.loads(header.decode("utf-8"))
        tree = document["object"]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
        reader.fail(f"the header is not valid ({error})")
    obj = reader.decode(tree, "checkpoint")
    if reader.position != document.get("data_bytes"):
        reader.fail(f"the header announces {document.get('data_bytes')} bytes of data, its "
                    f"nodes {reader.position}")
    return obj
