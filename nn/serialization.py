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

A file may come from anyone, so loading trusts nothing in it: every length, shape and offset is
checked against the file's actual size before anything is allocated, the header may nest at
most ``MAX_NESTING`` containers (``nn.save`` refuses deeper objects too), dtypes and devices
must be ones ``nn.save`` writes, and anything else wrong (truncated at any byte, bad magic or
version, garbage, a node of the wrong shape) is a ``CheckpointError`` naming the file and the
node. Bool data is normalized on load as numpy counts it: a nonzero byte is True (1).
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

from . import safe_json, serialization_modules
from .serialization_modules import (UnsafeCheckpointError, add_safe_globals,  # noqa: F401
                                    clear_safe_globals, get_safe_globals, safe_globals)
from .device import cuda_available, device, host
from .tensor import Tensor

__all__ = ["save", "load", "CheckpointError", "CheckpointDeviceError", "UnsafeCheckpointError",
           "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals"]


def _is_module(obj) -> bool:
    from .modules.module import Module
    return isinstance(obj, Module)

MAGIC = b"TWCKPT01"
_PREFIX = struct.Struct("<8sQI")         # magic, header length, header CRC-32
_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64")
_DEVICES = ("cpu", "cuda")               # the device types nn.save writes
VERSION = 1
MAX_NESTING = 100                        # containers inside containers, in a saved object
_MAX_JSON_DEPTH = 3 * MAX_NESTING + 8    # a dict node is 3 JSON levels: node, items, pair
_MAX_NDIM = 64                           # numpy's limit
_CHUNK = 1 << 24                         # bytes read at a time when the size is not known


class CheckpointError(ValueError):
    """A file that is not a complete, undamaged checkpoint, or whose tensors cannot be placed
    on the device it asks for."""


class CheckpointDeviceError(CheckpointError, RuntimeError):
    """A checkpoint's tensors are for a device this machine lacks (a RuntimeError too, as
    PyTorch raises)."""


# ----------------------------------------------------------------------------------- save

class _Writer:
    """Turns an object into the header tree, collecting the arrays to write after it."""

    def __init__(self):
        self.arrays = []            # little-endian, C-contiguous arrays, in file order
        self.offset = 0
        self.seen = {}              # id(tensor) -> its node, so shared tensors load as one
        self.active = set()         # ids of the containers being encoded (cycle detection)
        self.depth = 0              # containers being encoded, one inside the other

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
        if getattr(obj, "is_quantized", False) and hasattr(obj, "int_repr"):
            return self._qtensor(obj, path)
        if _is_module(obj):             # nn.save(model): class references + state
            return serialization_modules.encode_module(self, obj, path)
        raise TypeError(f"{path}: cannot save object of type {_type_name(obj)}; nn.save takes "
                        "tensors, numpy arrays, numbers, strings, bools, None and dicts, "
                        "OrderedDicts, lists and tuples of these")

    def _container(self, obj, path):
        if id(obj) in self.active:
            raise ValueError(f"{path}: cannot save a container that contains itself")
        self._check_depth(path)
        self.active.add(id(obj))
        self.depth += 1
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
            self.depth -= 1

    def _check_depth(self, path):
        if self.depth >= MAX_NESTING:
            raise ValueError(f"{path[:200]}{'...' if len(path) > 200 else ''}: cannot save "
                             f"containers nested more than {MAX_NESTING} deep (nn.load refuses "
                             "such files); flatten the object")

    def _key(self, key, path):
        if key is None or type(key) in (bool, int, float, str):
            return self.encode(key, path)
        if type(key) is tuple:
            self._check_depth(path)
            self.depth += 1
            try:
                return {"type": "tuple", "items": [self._key(k, path) for k in key]}
            finally:
                self.depth -= 1
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

    def _qtensor(self, q, path):
        """A quantized tensor (nn.quantized.QTensor): its integers and parameters."""
        node = {"type": "qtensor", "qdtype": str(q.dtype),
                "ints": self._array(q._int.contiguous()._data, "ndarray", path)}
        if q._axis is None:
            node.update(scale=float(q._scale).hex(), zero_point=int(q._zero_point))
        else:
            node.update(axis=int(q._axis),
                        scales=self._array(np.asarray(q._scales, "float64"), "ndarray", path),
                        zero_points=self._array(np.asarray(q._zero_points, "int64"),
                                                "ndarray", path))
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
    header = json.dumps({"format": "tensorweave-checkpoint", "version": VERSION,
                         "object": tree, "data_bytes": writer.offset}, separators=(",", ":"),
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
    """Rebuilds the object from the header tree, reading array bytes from the stream. Every
    node is checked before it is used: its type, its fields' types, and every size against
    the bytes the file still holds."""

    def __init__(self, stream, name, map_location, weights_only=True):
        self.stream, self.name = stream, name
        self.weights_only = weights_only
        self.available = _remaining(stream)     # bytes left in the file (None: cannot tell)
        self.position = 0                       # bytes of tensor data read so far
        self.map_location = map_location
        self.tensors = {}               # ref -> loaded tensor (one object per saved tensor)

    def fail(self, what):
        raise CheckpointError(f"nn.load: {self.name} is truncated or corrupt: {what}")

    def field(self, node, key, path, kind):
        """``node[key]``, if it is there and of type ``kind`` (bool is not an int here)."""
        if key not in node:
            self.fail(f"{path} has no {key!r} field")
        value = node[key]
        if type(value) is not kind:
            self.fail(f"{path}'s {key!r} is {_describe(value)}, not {_KIND_NAMES[kind]}")
        return value

    def decode(self, node, path, depth=0):
        if not isinstance(node, dict) or type(node.get("type")) is not str:
            self.fail(f"{path} is not a valid node (a JSON object with a 'type'), it is "
                      f"{_describe(node)}")
        kind = node["type"]
        if kind == "none":
            return None
        if kind in ("bool", "int", "str"):
            return self.field(node, "value", path, {"bool": bool, "int": int, "str": str}[kind])
        if kind == "float":
            text = self.field(node, "value", path, str)
            try:
                return float.fromhex(text)
            except (ValueError, OverflowError):
                self.fail(f"{path}'s value {_text(text)} is not a float written as hex")
        if kind in ("dict", "ordered_dict", "list", "tuple"):
            if depth >= MAX_NESTING:
                self.fail(f"{path[:200]}... nests containers more than {MAX_NESTING} deep")
            items = self.field(node, "items", path, list)
            if kind in ("list", "tuple"):
                values = [self.decode(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(items)]
                return values if kind == "list" else tuple(values)
            out = dict() if kind == "dict" else collections.OrderedDict()
            for i, pair in enumerate(items):
                if type(pair) is not list or len(pair) != 2:
                    self.fail(f"{path}'s item {i} is {_describe(pair)}, not a [key, value] pair")
                key = self.key(pair[0], f"{path}'s key {i}", depth + 1)
                out[key] = self.decode(pair[1], f"{path}[{_short(repr(key))}]", depth + 1)
            return out
        if kind in ("tensor", "ndarray", "numpy_scalar"):
            return self._array(node, kind, path)
        if kind == "qtensor":
            return self._qtensor(node, path)
        if kind == "module":
            if self.weights_only:
                raise serialization_modules.UnsafeCheckpointError(
                    f"nn.load: {self.name}: {path} is a whole module (class "
                    f"{_text(node.get('class'))}); weights_only=True loads data only. If you "
                    "trust the file, load it with weights_only=False after putting its classes "
                    "on the allow-list (nn.serialization.add_safe_globals([...])), or save and "
                    "load model.state_dict() instead")
            return serialization_modules.decode_module(self, node, path, depth)
        self.fail(f"{path} has the unknown type {_text(kind)}")

    def _qtensor(self, node, path):
        """A quantized tensor, its parameters checked as nn.quantize_per_tensor does."""
        from .quantized.dtypes import QDTYPES
        from .quantized.qtensor import QTensor, check_scale, check_zero_point
        name = self.field(node, "qdtype", path, str)
        if name not in QDTYPES:
            self.fail(f"{path} has the unknown quantized dtype {_text(name)}")
        qdtype = QDTYPES[name]
        ints = self.decode(self.field(node, "ints", path, dict), path)
        if ints.dtype.name != qdtype.storage:
            self.fail(f"{path}'s integers are {ints.dtype}, not {qdtype.storage}")
        try:
            if "axis" not in node:
                scale = float.fromhex(self.field(node, "scale", path, str))
                zp = self.field(node, "zero_point", path, int)
                return QTensor(Tensor(ints), qdtype, check_scale(scale, path),
                               check_zero_point(zp, qdtype, path))
            axis = self.field(node, "axis", path, int)
            scales = self.decode(self.field(node, "scales", path, dict), path)
            zps = self.decode(self.field(node, "zero_points", path, dict), path)
            if not 0 <= axis < ints.ndim or scales.shape != (ints.shape[axis],) or \
                    zps.shape != scales.shape:
                self.fail(f"{path}'s per-channel parameters do not fit its shape")
            for c in range(scales.size):
                check_scale(float(scales[c]), path)
                check_zero_point(int(zps[c]), qdtype, path)
        except (ValueError, OverflowError, TypeError, RuntimeError) as e:
            self.fail(f"{path} has bad quantization parameters ({e})")
        return QTensor(Tensor(ints), qdtype, scales=scales.astype("float64"),
                       zero_points=zps.astype("int64"), axis=axis)

    def key(self, node, path, depth):
        """A dict key: a number, string, bool, None or tuple of these, as nn.save writes."""
        kind = node.get("type") if isinstance(node, dict) else None
        if kind in ("none", "bool", "int", "float", "str"):
            return self.decode(node, path, depth)
        if kind != "tuple":
            self.fail(f"{path} is {_describe(node)}, not a dict key (a number, string, bool, "
                      "None or tuple of these)")
        if depth >= MAX_NESTING:
            self.fail(f"{path[:200]}... nests containers more than {MAX_NESTING} deep")
        items = self.field(node, "items", path, list)
        return tuple(self.key(k, f"{path}[{i}]", depth + 1) for i, k in enumerate(items))

    def _array(self, node, kind, path):
        if kind == "tensor":
            ref = self.field(node, "ref", path, int)
            if ref in self.tensors:
                return self.tensors[ref]
            saved = node.get("device", "cpu")
            if saved not in _DEVICES:
                self.fail(f"{path} was saved on the unknown device {_text(saved)} (nn.save "
                          f"writes one of {', '.join(_DEVICES)})")
        dtype = self.field(node, "dtype", path, str)
        if dtype not in _DTYPES:
            self.fail(f"{path} has the unknown dtype {_text(dtype)} (nn.save writes one of "
                      f"{', '.join(_DTYPES)})")
        shape = self.field(node, "shape", path, list)
        if (len(shape) > _MAX_NDIM or (kind == "numpy_scalar" and shape)
                or not all(type(n) is int and 0 <= n < 2 ** 63 for n in shape)):
            scalar = " (a numpy scalar has shape [])" if kind == "numpy_scalar" else ""
            self.fail(f"{path}'s shape {_text(shape)} is not a list of at most {_MAX_NDIM} "
                      f"sizes >= 0{scalar}")
        nbytes = self.field(node, "nbytes", path, int)
        offset = self.field(node, "offset", path, int)
        crc = self.field(node, "crc32", path, int)
        need = math.prod(shape) * np.dtype(dtype).itemsize
        if nbytes != need or offset != self.position:
            self.fail(f"{path}'s size or place in the file does not match its shape "
                      f"{_text(shape)} (the header says {nbytes} bytes at offset {offset}; "
                      f"{dtype} of that shape is {need} bytes, due at offset {self.position})")
        buffer = self._read(nbytes, path)
        if zlib.crc32(buffer) != crc:
            self.fail(f"the data of {path} does not match its checksum")
        self.position += nbytes
        try:
            if dtype == "bool":             # a nonzero byte is True, as numpy counts it
                array = np.frombuffer(buffer, np.uint8).reshape(shape) != 0
            else:
                little = np.dtype(dtype).newbyteorder("<")
                array = np.frombuffer(buffer, little).reshape(shape).astype(dtype, copy=False)
        except ValueError as error:         # numpy's limits on sizes of an empty array
            self.fail(f"{path}'s shape {shape} cannot be made ({error})")
        if kind == "ndarray":
            return array
        if kind == "numpy_scalar":
            return array[()]
        tensor = _place(Tensor(array), saved, self.map_location, self.name)
        self.tensors[ref] = tensor
        return tensor

    def _read(self, nbytes, path):
        """The next ``nbytes`` bytes of data, never allocating more than the file holds."""
        if self.available is not None:
            if nbytes > self.available:
                self.fail(f"expected {nbytes} bytes of data for {path}, found {self.available}")
            buffer = bytearray(nbytes)
            got = _read_into(self.stream, buffer)
            self.available -= got
        else:
            buffer = _read_up_to(self.stream, nbytes)
            got = len(buffer)
        if got != nbytes:
            self.fail(f"expected {nbytes} bytes of data for {path}, found {got}")
        return buffer


_KIND_NAMES = {dict: "an object", list: "a list", str: "a string", bool: "a bool", int: "an int",
               float: "a float", type(None): "null"}


def _describe(value):
    """A short description of a value read from a file: its JSON type and its start."""
    if value is None or isinstance(value, dict):
        return _KIND_NAMES[type(value)]
    return f"{_KIND_NAMES.get(type(value), type(value).__name__)} {_text(value)}"


def _text(value):
    """The start of ``value`` as JSON text."""
    if isinstance(value, dict):
        return "{...}"
    return _short(json.dumps(value))


def _short(text, limit=80):
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _read_into(stream, buffer):
    """Fill ``buffer`` from ``stream`` (short reads continued); the number of bytes read."""
    view, got = memoryview(buffer), 0
    while got < len(buffer):
        n = stream.readinto(view[got:])
        if not n:
            break
        got += n
    return got


def _read_up_to(stream, size):
    """Up to ``size`` bytes from a stream whose length is not known, read in bounded chunks
    so that a damaged length does not allocate what it says."""
    buffer = bytearray()
    while len(buffer) < size:
        chunk = stream.read(min(_CHUNK, size - len(buffer)))
        if not chunk:
            break
        buffer += chunk
    return buffer


def _place(tensor, saved, map_location, name):
    """``tensor`` on the device ``map_location`` says for a tensor saved on ``saved``."""
    target = saved
    if isinstance(map_location, dict):
        target = map_location.get(saved, saved)
    elif map_location is not None:
        target = map_location
    target = device(str(target))
    if target.type == "cuda" and not cuda_available():
        raise CheckpointDeviceError(
            f"nn.load: {name}: Attempting to deserialize object on a CUDA device but "
            "nn.cuda.is_available() is False. If you are running on a CPU-only machine, please "
            "use nn.load with map_location='cpu' to map your tensors to the CPU.")
    return tensor if target == tensor.device else tensor.to(target)


def load(f, map_location=None, *, weights_only=True):
    """The object saved by ``nn.save`` in ``f`` (a path or a binary file object). Tensors go
    to ``map_location`` ("cpu", "cuda", an ``nn.device``, or a dict from saved to wanted
    device), else to the device they were saved from. The format holds only data; a whole
    module (``nn.save(model)``) is rebuilt only with ``weights_only=False`` and from trusted
    classes (``nn.serialization_modules``: nn's own and ``add_safe_globals``'s)."""
    if not (map_location is None or isinstance(map_location, (str, device, dict))):
        raise TypeError(f"nn.load: map_location must be None, a device string such as 'cpu', "
                        f"an nn.device or a dict from saved to wanted device, not "
                        f"{type(map_location).__name__}")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as stream:
            return _read(stream, repr(os.fspath(f)), map_location, weights_only)
    if not hasattr(f, "read"):
        raise TypeError(f"nn.load: f must be a path or a binary file object, not "
                        f"{type(f).__name__}")
    if not hasattr(f, "readinto"):
        f = io.BytesIO(f.read())
    return _read(f, "the stream", map_location, weights_only)


def _remaining(stream):
    """The bytes left after the current position of a seekable stream, else None."""
    try:
        here = stream.tell()
        end = stream.seek(0, os.SEEK_END)
        stream.seek(here)
    except (AttributeError, OSError, ValueError):
        return None
    return end - here


def _read(stream, name, map_location, weights_only=True):
    prefix = _read_up_to(stream, _PREFIX.size)
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
    header = _read_up_to(stream, size)
    reader = _Reader(stream, name, map_location, weights_only)
    if len(header) != size:
        reader.fail(f"the header should have {size} bytes, found {len(header)}")
    if zlib.crc32(header) != crc:
        reader.fail("the header does not match its checksum")
    try:
        document = safe_json.loads(header, _MAX_JSON_DEPTH)
    except ValueError as error:
        reader.fail(f"the header is not valid JSON ({_short(str(error), 200)})")
    if not isinstance(document, dict):
        reader.fail(f"the header is {_describe(document)}, not an object")
    if document.get("format") != "tensorweave-checkpoint":
        reader.fail(f"the header's format is {_describe(document.get('format'))}, not "
                    "'tensorweave-checkpoint'")
    version = document.get("version")
    if type(version) is int and version > VERSION:
        raise CheckpointError(f"nn.load: {name} is a checkpoint of format version {version}, "
                              f"written by a newer tensorweave; this one reads version "
                              f"{VERSION}: upgrade tensorweave to load it")
    if version != VERSION or type(version) is not int:
        reader.fail(f"the header's version is {_describe(version)}, not {VERSION}")
    data_bytes = reader.field(document, "data_bytes", "the header", int)
    if "object" not in document:
        reader.fail("the header has no 'object' field")
    obj = reader.decode(document["object"], "checkpoint")
    if reader.position != data_bytes:
        reader.fail(f"the header announces {data_bytes} bytes of data, its nodes "
                    f"{reader.position}")
    return obj
