"""Hostile files (issue 16, kinds 12 and 15): a crafted or damaged checkpoint is a
``CheckpointError`` naming the file and what is wrong, never a RecursionError, MemoryError,
struct.error, KeyError or a bare RuntimeError, and never an allocation of what a damaged size
says; bool data with bytes other than 0 and 1 loads normalized (nonzero is True, as numpy
counts); a tuning-records file with a bad line (invalid UTF-8, nested too deep, too long, wrong
types) skips that line with a warning naming file:line and loads the rest.

The checkpoint fuzzer mutates a valid checkpoint in three ways (raw bytes; header bytes with the
checksum fixed; header fields and data bytes with the checksums fixed, so that the checks past
the checksum are reached) and asserts that each load either raises CheckpointError or returns
well-formed values.
"""
import collections
import io
import json
import math
import random
import re
import struct
import subprocess
import sys
import textwrap
import tracemalloc
import warnings
import zlib

import numpy as np
import pytest

import nn
import te
from nn import serialization, tune
from nn.serialization import CheckpointError, load, save

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]


# -- building files ------------------------------------------------------------------------------

def valid_checkpoint():
    """A small checkpoint with every kind of node: each dtype, shared and 0-d tensors, numpy
    arrays and scalars, nested containers, tuple keys, exact floats."""
    shared = nn.tensor([1.5, -2.0])
    model = collections.OrderedDict(
        (f"t.{d}", nn.from_numpy(np.arange(3).astype(d))) for d in DTYPES)
    model["zero_d"] = nn.tensor(3.5)
    model["empty"] = nn.zeros(0, 2)
    return {"model": model, "shared": [shared, shared], "epoch": 3, "lr": 0.25,
            "flags": (True, None, "é"), ("k", 1): {"nested": [[1, 2], {"x": -0.0}]},
            "array": np.arange(4, dtype=np.int16).reshape(2, 2), "scalar": np.float32(1.25),
            "mask": np.array([True, False])}


def saved_bytes(obj):
    stream = io.BytesIO()
    save(obj, stream)
    return stream.getvalue()


def split(raw):
    """(header document, data bytes) of a checkpoint file."""
    _, size, _ = serialization._PREFIX.unpack(raw[:serialization._PREFIX.size])
    start = serialization._PREFIX.size
    return json.loads(raw[start:start + size]), raw[start + size:]


def pack(document, data=b"", header=None):
    """A checkpoint file with correct length and checksum for ``document`` (or the raw
    ``header`` bytes) followed by ``data``."""
    if header is None:
        header = json.dumps(document).encode("utf-8")
    return serialization._PREFIX.pack(serialization.MAGIC, len(header),
                                      zlib.crc32(header)) + header + bytes(data)


def document(obj, data_bytes=0):
    return {"format": "tensorweave-checkpoint", "version": 1, "object": obj,
            "data_bytes": data_bytes}


def tensor_node(data, dtype="float32", shape=None, **fields):
    shape = [len(data) // np.dtype(dtype).itemsize] if shape is None else shape
    node = {"type": "tensor", "dtype": dtype, "shape": shape, "offset": 0,
            "nbytes": len(data), "crc32": zlib.crc32(data), "device": "cpu", "ref": 0}
    node.update(fields)
    return node


def load_bytes(raw):
    return load(io.BytesIO(raw))


class Pipe(io.RawIOBase):
    """A readable stream that cannot seek, so its length cannot be known in advance."""

    def __init__(self, raw):
        self.source = io.BytesIO(raw)

    def readable(self):
        return True

    def readinto(self, buffer):
        return self.source.readinto(buffer)


def pipe(raw):
    return io.BufferedReader(Pipe(raw))


def assert_well_formed(value, depth=0):
    """Every value a checkpoint may hold, with tensors whose data matches their shape and
    dtype and whose bools are 0 or 1."""
    assert depth <= serialization.MAX_NESTING + 2
    if isinstance(value, nn.Tensor):
        assert type(value) is nn.Tensor and not value.requires_grad
        assert_array(value.numpy(), tuple(value.shape))
    elif isinstance(value, np.ndarray):
        assert_array(value, value.shape)
    elif isinstance(value, np.generic):
        assert value.dtype.name in DTYPES
        assert_array(np.asarray(value), ())
    elif isinstance(value, dict):
        assert type(value) in (dict, collections.OrderedDict)
        for key, item in value.items():
            hash(key)
            assert_well_formed(key, depth + 1)
            assert_well_formed(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        assert type(value) in (list, tuple)
        for item in value:
            assert_well_formed(item, depth + 1)
    else:
        assert value is None or type(value) in (bool, int, float, str), type(value)


def assert_array(array, shape):
    assert isinstance(array, np.ndarray) and array.shape == shape
    assert array.dtype.name in DTYPES and array.dtype.isnative
    assert array.nbytes == math.prod(shape) * array.dtype.itemsize
    if array.dtype == bool:
        assert np.ascontiguousarray(array).view(np.uint8).max(initial=0) <= 1


def refused(raw, match=None, stream=load_bytes):
    with pytest.raises(CheckpointError, match=match) as info:
        stream(raw)
    return str(info.value)


# -- every byte offset ---------------------------------------------------------------------------

def test_truncated_at_every_byte_offset(tmp_path):
    raw = saved_bytes(valid_checkpoint())
    assert_well_formed(load_bytes(raw))
    path = tmp_path / "ck.tw"
    for cut in range(len(raw)):
        with pytest.raises(CheckpointError, match=r"nn.load: .* is truncated or corrupt"):
            load_bytes(raw[:cut])
    for cut in range(0, len(raw), 97):      # through a path (the name is in the message) ...
        path.write_bytes(raw[:cut])
        with pytest.raises(CheckpointError, match=re.escape(f"nn.load: '{path}' is truncated")):
            load(path)
    for cut in range(0, len(raw), 13):      # ... and through a stream that cannot seek
        with pytest.raises(CheckpointError, match="nn.load: the stream is truncated"):
            load(pipe(raw[:cut]))


def test_short_reads_are_continued():
    class Trickle(Pipe):                # a raw stream that returns at most 3 bytes a read
        def readinto(self, buffer):
            return self.source.readinto(memoryview(buffer)[:3])

    raw = saved_bytes({"w": nn.arange(40, dtype=nn.float32)})
    np.testing.assert_array_equal(load(Trickle(raw))["w"].numpy(), np.arange(40.0))


# -- sizes read from the file --------------------------------------------------------------------

def test_huge_header_length_allocates_nothing():
    raw = bytearray(saved_bytes(valid_checkpoint()))
    raw[8:16] = struct.pack("<Q", 2 ** 64 - 1)
    for stream in (load_bytes, lambda r: load(pipe(r))):
        tracemalloc.start()
        try:
            refused(bytes(raw), r"the header should have 18446744073709551615 bytes, found \d+",
                    stream)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 64 * 2 ** 20, peak


@pytest.mark.parametrize("shape, nbytes", [([2 ** 40], 2 ** 42), ([2 ** 31, 2 ** 31], 2 ** 64),
                                           ([2 ** 62, 2 ** 62], 2 ** 126)])
def test_huge_declared_array_allocates_nothing(shape, nbytes):
    node = tensor_node(bytes(8), shape=shape, nbytes=nbytes)
    raw = pack(document(node, nbytes), bytes(8))
    for stream in (load_bytes, lambda r: load(pipe(r))):
        tracemalloc.start()
        try:
            refused(raw, f"expected {nbytes} bytes of data for checkpoint, found 8", stream)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 64 * 2 ** 20, peak


@pytest.mark.parametrize("shape, nbytes, match", [
    ([-1, -8], 32, r"checkpoint's shape \[-1, -8\] is not a list of at most 64 sizes >= 0"),
    ([2 ** 63, 0], 0, r"shape \[9223372036854775808, 0\] is not a list of at most 64 sizes"),
    ([1.5], 8, r"shape \[1.5\] is not a list"),
    ([True, 2], 8, r"shape \[true, 2\] is not a list"),
    ([1] * 65, 4, r"is not a list of at most 64 sizes"),
    ([3], 8, r"checkpoint's size or place in the file does not match its shape \[3\] \(the "
             r"header says 8 bytes at offset 0; float32 of that shape is 12 bytes"),
    ([1], 8, r"float32 of that shape is 4 bytes"),
])
def test_shapes_that_do_not_fit_the_data(shape, nbytes, match):
    node = tensor_node(bytes(8), shape=shape, nbytes=nbytes)
    refused(pack(document(node, 8), bytes(8)), match)


def test_shape_with_a_zero_and_a_huge_size_loads_empty():
    node = tensor_node(b"", shape=[2 ** 40, 0])
    loaded = load_bytes(pack(document(node), b""))
    assert loaded.shape == (2 ** 40, 0) and loaded.numpy().size == 0


def test_data_at_the_wrong_offset():
    node = tensor_node(bytes(8), offset=4)
    refused(pack(document(node, 8), bytes(8)), "the header says 8 bytes at offset 4; float32 "
            "of that shape is 8 bytes, due at offset 0")


def test_data_bytes_that_do_not_match_the_nodes():
    node = tensor_node(bytes(8))
    refused(pack(document(node, 16), bytes(16)), "the header announces 16 bytes of data, its "
            "nodes 8")
    refused(pack(document(node, "8"), bytes(8)), "the header's 'data_bytes' is a string \"8\", "
            "not an int")


# -- nesting ------------------------------------------------------------------------------------

def deep_header(levels, kind="list"):
    node = '{"type":"list","items":[' if kind == "list" else '{"type":"dict","items":[[' \
        '{"type":"str","value":"k"},'
    close = "]}" if kind == "list" else "]]}"
    return (f'{{"format":"tensorweave-checkpoint","version":1,"data_bytes":0,"object":'
            f'{node * levels}{{"type":"none"}}{close * levels}}}').encode()


@pytest.mark.parametrize("kind", ["list", "dict"])
def test_deep_nesting_is_refused_before_parsing(kind):
    raw = pack(None, header=deep_header(100_000, kind))
    refused(raw, r"the header is not valid JSON \(the JSON nests \d+ arrays and objects deep, "
            r"more than the 308 allowed\)")


def test_deep_nesting_in_a_subprocess_with_no_recursion_limit(tmp_path):
    """With the recursion limit raised, an unbounded recursion would overflow the C stack
    (a segfault); the depth is checked before any recursion."""
    path = tmp_path / "deep.tw"
    path.write_bytes(pack(None, header=deep_header(200_000)))
    code = textwrap.dedent(f"""
        import sys
        sys.setrecursionlimit(10 ** 7)
        import nn
        try:
            nn.load({str(path)!r})
        except nn.CheckpointError as error:
            print("CheckpointError:", error)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "CheckpointError: nn.load: " in done.stdout and "nests 400002 arrays" in done.stdout


def test_nesting_limit_is_the_same_for_save_and_load():
    limit = serialization.MAX_NESTING
    obj = None
    for _ in range(limit):
        obj = [obj]
    assert load_bytes(saved_bytes(obj)) == obj
    obj = {"k": obj}
    with pytest.raises(ValueError, match=f"cannot save containers nested more than {limit} "
                       "deep \\(nn.load refuses such files\\); flatten the object"):
        saved_bytes(obj)
    # a file nested one level deeper than nn.save writes (within the JSON bound)
    node = {"type": "none"}
    for _ in range(limit + 1):
        node = {"type": "list", "items": [node]}
    refused(pack(document(node)), f"nests containers more than {limit} deep")
    key = {"type": "str", "value": "k"}
    for _ in range(limit + 1):
        key = {"type": "tuple", "items": [key]}
    refused(pack(document({"type": "dict", "items": [[key, {"type": "none"}]]})),
            f"nests containers more than {limit} deep")


# -- what the header says ------------------------------------------------------------------------

@pytest.mark.parametrize("device", ["tpu", "cuda:0", "CPU", 3, None, ["cpu"]])
def test_unknown_device(device, tmp_path):
    path = tmp_path / "dev.tw"
    path.write_bytes(pack(document(tensor_node(bytes(8), device=device), 8), bytes(8)))
    refused(path, re.escape(f"nn.load: '{path}' is truncated or corrupt: checkpoint was saved "
                            "on the ") + r"unknown device .* \(nn.save writes one of cpu, cuda\)",
            load)


def test_cuda_tensor_on_a_machine_without_cuda(monkeypatch):
    monkeypatch.setattr(serialization, "cuda_available", lambda: False)
    raw = pack(document(tensor_node(bytes(8), device="cuda"), 8), bytes(8))
    message = refused(raw, "nn.load: the stream: Attempting to deserialize object on a CUDA "
                      "device but nn.cuda.is_available\\(\\) is False")
    with pytest.raises(RuntimeError, match=re.escape(message)):    # as PyTorch raises
        load_bytes(raw)
    np.testing.assert_array_equal(load(io.BytesIO(raw), map_location="cpu").numpy(), [0, 0])


@pytest.mark.parametrize("dtype, match", [
    ("complex64", r"checkpoint has the unknown dtype \"complex64\" \(nn.save writes one of "
                  r"bool, int8, .*float64\)"),
    ("<f4", "unknown dtype"), ("object", "unknown dtype"),
    (["float32"], r"checkpoint's 'dtype' is a list \[\"float32\"\], not a string"),
    (None, "checkpoint's 'dtype' is null, not a string"),
])
def test_unknown_dtype(dtype, match):
    refused(pack(document(tensor_node(bytes(8), dtype=dtype, shape=[2]), 8), bytes(8)), match)


@pytest.mark.parametrize("change, match", [
    ({"version": 2}, "nn.load: the stream is a checkpoint of format version 2, written by a "
                     "newer tensorweave; this one reads version 1: upgrade tensorweave"),
    ({"version": 0}, "the header's version is an int 0, not 1"),
    ({"version": "1"}, "the header's version is a string \"1\", not 1"),
    ({"version": True}, "the header's version is a bool true, not 1"),
    ({"format": "torch"}, "the header's format is a string \"torch\", not "
                          "'tensorweave-checkpoint'"),
    ({"object": None}, r"checkpoint is not a valid node \(a JSON object with a 'type'\), it is "
                       "null"),
])
def test_bad_format_or_version(change, match):
    refused(pack(dict(document({"type": "none"}), **change)), match)


@pytest.mark.parametrize("header, match", [
    (b"[1, 2]", r"the header is a list \[1, 2\], not an object"),
    (b"NaN", "the header is a float NaN, not an object"),
    (b'{"format": "tensorweave-checkpoint", "object": {"type": "str", "value": "\xff"}}',
     r"the header is not valid JSON \(it is not valid UTF-8"),
    (b'{"a": ' + b"9" * 10_000 + b"}", r"the header is not valid JSON \(Exceeds the limit"),
    (b"\x00\x01\x02garbage", "the header is not valid JSON"),
    (b"", "the header is not valid JSON"),
])
def test_header_that_is_not_a_document(header, match):
    refused(pack(None, header=header), match)


def test_bad_magic_and_garbage():
    refused(b"", "it ends after 0 bytes")
    refused(b"TWCKPT01\x00\x01", "it ends after 10 bytes")
    refused(b"TWCKPT02" + bytes(20), r"is not a tensorweave checkpoint: it does not start with "
            r"b'TWCKPT01'")
    rng = np.random.default_rng(5)
    for _ in range(50):
        refused(rng.integers(0, 256, int(rng.integers(0, 300)), dtype=np.uint8).tobytes(),
                "nn.load: the stream is")


@pytest.mark.parametrize("obj, match", [
    ({"type": "int", "value": True}, "checkpoint's 'value' is a bool true, not an int"),
    ({"type": "int"}, "checkpoint has no 'value' field"),
    ({"type": "float", "value": 1.0}, "checkpoint's 'value' is a float 1.0, not a string"),
    ({"type": "float", "value": "0x1p99999"}, "checkpoint's value \"0x1p99999\" is not a float "
                                              "written as hex"),
    ({"type": "set", "items": []}, "checkpoint has the unknown type \"set\""),
    ({"type": 3}, "checkpoint is not a valid node"),
    ({"type": "list", "items": {"0": 1}}, "checkpoint's 'items' is an object, not a list"),
    ({"type": "list", "items": [5]}, r"checkpoint\[0\] is not a valid node .* it is an int 5"),
    ({"type": "dict", "items": [[{"type": "str", "value": "a"}]]},
     r'checkpoint\'s item 0 is a list \[\{"type": "str", "value": "a"\}\], not a \[key, '
     r'value\] pair'),
    ({"type": "dict", "items": [[{"type": "list", "items": []}, {"type": "none"}]]},
     "checkpoint's key 0 is an object, not a dict key"),
    ({"type": "dict", "items": [[{"type": "str", "value": "w"}, {"type": "tensor"}]]},
     r"checkpoint\['w'\] has no 'ref' field"),
])
def test_malformed_nodes(obj, match):
    refused(pack(document(obj)), match)


def test_field_types_of_an_array_node():
    for field in ("ref", "nbytes", "offset", "crc32"):
        for bad in ("0", 0.0, None, [0], True):
            node = tensor_node(bytes(8), **{field: bad})
            refused(pack(document(node, 8), bytes(8)), f"checkpoint's '{field}' is .*, not an "
                    "int")
    node = dict(tensor_node(bytes(8)), type="numpy_scalar")
    refused(pack(document(node, 8), bytes(8)), r"shape \[2\] is not a list .*\(a numpy "
            r"scalar has shape \[\]\)")


# -- bool bytes other than 0 and 1 (kind 12) -------------------------------------------------

BOOL_BYTES = bytes([0, 1, 2, 255, 0, 128, 1, 7])


@pytest.mark.parametrize("kind", ["tensor", "ndarray", "numpy_scalar"])
def test_bool_bytes_other_than_0_and_1_load_as_numpy_counts_them(kind):
    raw_bytes = bytes([2]) if kind == "numpy_scalar" else BOOL_BYTES
    shape = [] if kind == "numpy_scalar" else [2, 4]
    node = tensor_node(raw_bytes, dtype="bool", shape=shape, type=kind)
    loaded = load_bytes(pack(document(node, len(raw_bytes)), raw_bytes))
    want = np.frombuffer(raw_bytes, np.uint8).reshape(shape).astype(bool)     # nonzero: True
    array = loaded.numpy() if kind == "tensor" else np.asarray(loaded)
    assert array.dtype == bool and array.shape == tuple(shape)
    np.testing.assert_array_equal(np.ascontiguousarray(array).view(np.uint8),
                                  want.view(np.uint8))        # the bytes themselves are 0/1
    if kind == "tensor":                                      # compiled kernels agree
        assert int(loaded.sum()) == np.count_nonzero(np.frombuffer(raw_bytes, np.uint8))
        np.testing.assert_array_equal(loaded.logical_not().numpy(), ~want)
        np.testing.assert_array_equal(loaded.to(nn.int32).numpy(), want.astype(np.int32))
        np.testing.assert_array_equal(nn.where(loaded, nn.ones(2, 4), nn.zeros(2, 4)).numpy(),
                                      np.where(want, 1.0, 0.0))


# -- the fuzzer ------------------------------------------------------------------------------

def try_load(raw):
    """None if ``raw`` loads well-formed values, else the CheckpointError's message; any other
    exception fails the test."""
    try:
        value = load_bytes(raw)
    except CheckpointError as error:
        assert str(error).startswith("nn.load: the stream"), error
        return str(error)
    assert_well_formed(value)
    return None


def test_fuzz_raw_bytes():
    raw = saved_bytes(valid_checkpoint())
    rng = random.Random(1601)
    refusals = 0
    for _ in range(300):
        mutated = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        if rng.random() < 0.2:          # and sometimes cut or extend the file
            mutated = mutated[:rng.randrange(len(mutated))] if rng.random() < 0.5 else \
                mutated + bytes(rng.randrange(256) for _ in range(rng.randint(1, 20)))
        refusals += try_load(bytes(mutated)) is not None
    assert refusals > 250          # almost every change is caught (a checksum at least)


JSON_BYTES = b'[]{}",:-+.0123456789eE \\ntfu'


def test_fuzz_header_with_its_checksum_fixed():
    raw = saved_bytes(valid_checkpoint())
    header_doc, data = split(raw)
    header = json.dumps(header_doc).encode()
    rng = random.Random(1602)
    outcomes = collections.Counter()
    for _ in range(400):
        mutated = bytearray(header)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(mutated))
            choice = rng.random()
            if choice < 0.4:
                mutated[at] = rng.choice(JSON_BYTES)
            elif choice < 0.6:
                mutated[at] = rng.randrange(256)
            elif choice < 0.8:
                del mutated[at]
            else:
                mutated.insert(at, rng.choice(JSON_BYTES))
        message = try_load(pack(None, data, header=bytes(mutated)))
        outcomes["loaded" if message is None else "refused"] += 1
    assert outcomes["refused"] > 100 and outcomes["loaded"] > 10, outcomes


HOSTILE_VALUES = [-1, 0, 1, 2 ** 31, 2 ** 63, 2 ** 64 + 3, -2 ** 70, 1.5, float("nan"), True,
                  False, None, "", "x", "cuda", "bool", "float64", "tensor", "dict", [], [0],
                  [-1], [2 ** 40, 2 ** 40], [[1]], {}, {"type": "none"},
                  {"type": "list", "items": [{"type": "tensor"}]}, "0x1p9999", "é\ud800"]


def nodes(tree):
    """Every JSON object in a header document."""
    found, todo = [], [tree]
    while todo:
        value = todo.pop()
        if isinstance(value, dict):
            found.append(value)
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)
    return found


def test_fuzz_fields_and_data_with_checksums_fixed():
    """Header fields set to hostile values and data bytes changed, every checksum recomputed:
    what the checks behind the checksums see."""
    raw = saved_bytes(valid_checkpoint())
    rng = random.Random(1603)
    outcomes = collections.Counter()
    for _ in range(400):
        header_doc, data = split(raw)
        data = bytearray(data)
        objects = nodes(header_doc)
        for _ in range(rng.randint(1, 3)):
            target = rng.choice(objects)
            start, size = target.get("offset"), target.get("nbytes")
            if (rng.random() < 0.3 and type(start) is int and type(size) is int and size > 0
                    and 0 <= start and start + size <= len(data)):
                # change data bytes, fix the array's checksum
                for _ in range(rng.randint(1, 4)):
                    data[start + rng.randrange(size)] = rng.randrange(256)
                target["crc32"] = zlib.crc32(data[start:start + size])
            else:
                key = rng.choice(list(target) + ["extra"])
                target[key] = json.loads(json.dumps(rng.choice(HOSTILE_VALUES)))
        message = try_load(pack(header_doc, data))
        outcomes["loaded" if message is None else "refused"] += 1
    assert outcomes["refused"] > 100 and outcomes["loaded"] > 20, outcomes


# -- tuning records ------------------------------------------------------------------------------

@tune.template("hostile_scale")
def hostile_scale(cfg, n):
    """B = A * 3 with a split knob: a space of a few configs to record."""
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 3.0, name="B")
    s = te.create_schedule(B.op)
    cfg.define_split("tile", B.op.axis[0], num_outputs=2)
    cfg["tile"].apply(s, B, B.op.axis[0])
    return s, [A, B]


def record_line(task, index, cost, **change):
    line = json.loads(tune.encode(tune.MeasureInput(task, task.space.get(index)),
                                  tune.MeasureResult(costs=(cost,))))
    line.update(change)
    return json.dumps(line).encode()


def load_warnings(load_records, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = load_records(*args)
    return result, [str(w.message) for w in caught]


def test_bad_record_lines_are_skipped_with_file_and_line(tmp_path):
    task = tune.Task("hostile_scale", (32,))
    good = {1: record_line(task, 1, 3e-3), 3: record_line(task, 3, 1e-3),
            5: record_line(task, 5, 2e-3)}
    first = good[1]
    bad = {
        "invalid UTF-8": first.replace(b'"llvm"', b'"ll\xffvm"'),
        "nested too deep": b"[" * 100_000 + b"]" * 100_000,
        "nested args": record_line(task, 2, 1e-9, workload=["hostile_scale", [[[[[[[[[[[[[[[[[
            [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[32]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]),
        "too long": b'{"workload": "' + b"x" * (tune.record.MAX_LINE + 10) + b'"}',
        "dict argument": record_line(task, 2, 1e-9, workload=["hostile_scale", [{"n": 32}]]),
        "dict knob": first.replace(b'"split", [', b'"choice", {"x": ['
                                   ).replace(b"]]}", b"]}]}", 1),
        "huge cost": record_line(task, 2, 1e-9, costs=[10 ** 400]),
        "newer version": record_line(task, 2, 1e-9, version=2),
        "costs as text": record_line(task, 2, 1e-9, costs="fast"),
        "not an object": b'"a string"',
        "NUL bytes": b"\x00" * 50,
    }
    lines, want = [], {}            # line number -> what the warning says
    for index, (what, line) in enumerate(bad.items()):
        lines.append(line)
        want[len(lines)] = what
        lines.append(good[(1, 3, 5)[index % 3]])
    log = tmp_path / "hostile.jsonl"
    log.write_bytes(b"\n".join(lines) + b"\n" + b"y" * (tune.record.MAX_LINE + 1))  # no \n
    want[len(lines) + 1] = "too long"
    records, messages = load_warnings(tune.load_records, log)
    assert len(records) == len(bad) and len(messages) == len(bad) + 1, messages
    assert {r.config.index for r in records} == {1, 3, 5}
    reasons = {"invalid UTF-8": "it is not valid UTF-8",
               "nested too deep": "nests 100000 arrays and objects deep, more than the 32",
               "nested args": "arrays and objects deep, more than the 32 allowed",
               "too long": f"skipping a line of {len(bad['too long'])} bytes, longer than the "
                           f"{tune.record.MAX_LINE} bytes a record may have",
               "dict argument": "workload argument = {'n': 32} (dict) cannot be stored",
               "dict knob": "knob 'tile' = {'x': [16, 2]} (dict) cannot be stored",
               "huge cost": "costs should be a list of run times in seconds",
               "newer version": "the record is of version 2, written by a newer tensorweave",
               "costs as text": "costs should be a list of run times in seconds, got 'fast'",
               "not an object": "a record is a JSON object, got str",
               "NUL bytes": "skipping a record that does not parse"}
    for message, (lineno, what) in zip(messages, want.items()):
        assert message.startswith(f"{log}:{lineno}: skipping a "), (what, message)
        if lineno == len(lines) + 1:
            assert f"skipping a line of {tune.record.MAX_LINE + 1} bytes" in message
        else:
            assert reasons[what] in message, (what, message)
        assert len(message) < 600, what

    # the callers: the rest of the file is used, each skipped line warned about
    history, messages = load_warnings(tune.apply_history_best, log)
    assert len(messages) == len(bad) + 1
    assert history.query("hostile_scale", (32,)) == task.space.get(3)      # the fastest
    tuner = tune.GridSearchTuner(task)
    used, messages = load_warnings(tuner.load_history, log)
    assert used == len(bad) and len(messages) == len(bad) + 1
    assert tuner.visited == {1, 3, 5} and tuner.best_cost == 1e-3
    assert tuner.best_config == task.space.get(3)


def test_a_huge_record_line_is_never_read_whole(tmp_path):
    task = tune.Task("hostile_scale", (32,))
    log = tmp_path / "huge.jsonl"
    with open(log, "wb") as f:
        f.write(record_line(task, 1, 1e-3) + b"\n[")
        for _ in range(32):                     # a 32 MiB line
            f.write(b"0," * (2 ** 19))
        f.write(b"0]\n" + record_line(task, 2, 2e-3) + b"\n")
    tracemalloc.start()
    try:
        records, messages = load_warnings(tune.load_records, log)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [r.config.index for r in records] == [1, 2]
    assert len(messages) == 1 and messages[0].startswith(f"{log}:2: skipping a line of "
                                                         f"{2 ** 25 + 3} bytes")
    assert peak < 8 * 2 ** 20, peak
