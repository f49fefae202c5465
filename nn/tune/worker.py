"""The measuring process: it reads candidate requests on stdin, builds, checks and times each one,
and writes one result per request to stdout; a crash or hang here costs the tuner one trial.

Run by ``nn.tune.measure`` as ``python -m nn.tune.worker``. Messages on both pipes are pickles
framed by an 8-byte big-endian length. A request is a dict (template, args, config, target,
timing and checking options), pickled inside a dict that also carries the parent's
``sys.path``; a result is a dict with ``costs``, ``error``, ``error_kind`` and ``build_time``.
Anything the candidate prints goes to stderr, which the parent keeps in a file and quotes when
the process dies.
"""
from __future__ import annotations

import faulthandler
import os
import pickle
import select
import struct
import sys
import time

import numpy as np

import te
from nn.tune.space import ConfigEntity

_HEADER = struct.Struct("!Q")


def send(fd, obj):
    """Write one framed message."""
    data = pickle.dumps(obj)
    _write_all(fd, _HEADER.pack(len(data)) + data)


def send_bytes(fd, data):
    """Write one framed message that is already pickled."""
    _write_all(fd, _HEADER.pack(len(data)) + data)


def receive(fd, deadline=None):
    """Read one framed message; EOFError when the pipe closes, TimeoutError past ``deadline``."""
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size, deadline))
    return pickle.loads(_read_exact(fd, size, deadline))


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_exact(fd, size, deadline):
    buf = bytearray()
    while len(buf) < size:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise TimeoutError
        chunk = os.read(fd, size - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


def measure(payload):
    """Build, check and time one pickled request; every failure becomes an error result."""
    try:
        outer = pickle.loads(payload)
        sys.path.extend(p for p in outer["sys_path"] if p not in sys.path)
        request = pickle.loads(outer["request"])
        tmpl = request["template"]
        config = ConfigEntity.from_json(request["config"])
    except Exception as err:                       # noqa: BLE001 - reported as the trial's error
        return _failure("load", err)
    args = request["args"]
    start = time.perf_counter()
    try:
        sch, tensors = tmpl.instantiate(config, *args)
        module = te.build(sch, tensors, target=request["target"], name=tmpl.name)
    except Exception as err:                       # noqa: BLE001
        return _failure("build", err)
    build_time = time.perf_counter() - start
    try:
        arrays, outputs = _arrays(tensors, request["seed"])
        module(*arrays)
    except Exception as err:                       # noqa: BLE001
        return _failure("runtime", err, build_time)
    if request["check"] and tmpl.reference is not None:
        inputs = [a for pos, a in enumerate(arrays) if pos not in outputs]
        try:
            mismatch = _compare(tensors, arrays, outputs, tmpl.reference(*inputs, *args),
                                request["rtol"], request["atol"])
        except Exception as err:                   # noqa: BLE001
            return _failure("reference", err, build_time)
        if mismatch:
            return {"costs": [], "error": mismatch, "error_kind": "wrong_result",
                    "build_time": build_time}
    try:
        timer = module.time_evaluator(number=request["number"], repeat=request["repeat"],
                                      min_repeat_ms=request["min_repeat_ms"])
        costs = list(timer(*arrays).results)
    except Exception as err:                       # noqa: BLE001
        return _failure("runtime", err, build_time)
    return {"costs": costs, "error": None, "error_kind": None, "build_time": build_time}


def _failure(kind, err, build_time=0.0):
    text = f"{type(err).__name__}: {err}"
    return {"costs": [], "error": text[:4000], "error_kind": kind, "build_time": build_time}


def _arrays(tensors, seed):
    """Random inputs and zeroed outputs for the tensors, in order; the positions of outputs."""
    rng = np.random.default_rng(seed)
    arrays, outputs = [], set()
    for pos, tensor in enumerate(tensors):
        shape = tuple(_const(dim, tensor) for dim in tensor.shape)
        dtype = np.dtype(tensor.dtype)
        if not isinstance(tensor.op, te.PlaceholderOp):
            outputs.add(pos)
            arrays.append(np.zeros(shape, dtype))
        elif dtype.kind == "f":
            arrays.append(rng.random(shape).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(rng.random(shape) < 0.5)
        else:
            arrays.append(rng.integers(0, 8, shape).astype(dtype))
    return arrays, outputs


def _const(dim, tensor):
    value = getattr(dim, "value", None)
    if not isinstance(value, int):
        raise ValueError(f"tensor {tensor.name} has a symbolic shape; a measured template must "
                         "give constant shapes")
    return value


def _compare(tensors, arrays, outputs, expected, rtol, atol):
    if not isinstance(expected, (tuple, list)):
        expected = (expected,)
    if len(expected) != len(outputs):
        return (f"the reference returned {len(expected)} arrays for {len(outputs)} outputs")
    for pos, want in zip(sorted(outputs), expected):
        got = arrays[pos]
        want = np.asarray(want)
        if got.shape != want.shape:
            return f"{tensors[pos].name}: shape {got.shape}, reference shape {want.shape}"
        close = np.isclose(got, want, rtol=rtol, atol=atol)
        if not close.all():
            bad = np.argwhere(~close)[0]
            err = np.abs(got.astype("float64") - want).max()
            return (f"{tensors[pos].name}: {(~close).sum()} of {close.size} elements differ from "
                    f"the reference (max abs error {err:.3g}, first at {tuple(bad.tolist())}; "
                    f"rtol={rtol}, atol={atol})")
    return None


def main():
    """Serve requests until stdin closes."""
    faulthandler.enable()                  # a segfault prints the Python stack into the log
    out = os.dup(1)
    os.dup2(2, 1)                          # prints from templates go to the log, not the pipe
    send(out, {"ready": os.getpid()})
    while True:
        try:
            (size,) = _HEADER.unpack(_read_exact(0, _HEADER.size, None))
            payload = _read_exact(0, size, None)
        except EOFError:
            return
        send(out, measure(payload))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
