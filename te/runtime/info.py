"""``FunctionInfo``: what a caller must know about a built function, as JSON-able data.

Its fields (one dict, ``data``): ``name``; ``vars``, the table of scalar arguments then hidden
size variables, ``[name, dtype]`` each; ``params`` in the caller's order, ``{"scalar": k}`` or
``{"buffer", "dtype", "shape", "out", "index", "narrow"}`` where a dimension is an int,
``{"var": k, "text"}``, ``{"poly": P, "text"}`` (``te.runtime.poly``) or ``{"text"}`` (no
portable form); ``index_error`` (whether the function takes the hidden error record of its
in-kernel index checks); ``preconditions``, ``check_sites`` and ``error_sites`` (the data of
their messages); ``workspace`` (bytes of the arena, or None) and ``packed_calls``.
``FunctionInfo.from_json`` checks every field of data read from a file, so that a damaged or
foreign library is an error, never a wrong prototype handed to ctypes.
"""
from __future__ import annotations

import re

from te import dtypes

from . import poly
from .errors import LibraryError

SCALAR_DTYPES = dtypes.ALL
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
MAX_ITEMS = 100_000


class FunctionInfo:
    """A function's calling convention; ``local_dims``: evaluators of shape expressions that
    have no portable form ({(param, dim): callable}; such a function cannot be exported)."""

    def __init__(self, data, local_dims=None):
        self.data = data
        self.local_dims = dict(local_dims or {})

    @property
    def name(self):
        return self.data["name"]

    def portable_problem(self):
        """Why this function cannot be stored in a library, or None."""
        if self.local_dims:
            (p, d), _ = next(iter(self.local_dims.items()))
            param = self.data["params"][p]
            return (f"dimension {d} of {param['buffer']} is {param['shape'][d]['text']}, an "
                    "expression that only the compiler can evaluate")
        if self.data["packed_calls"]:
            return (f"it calls the Python function {self.data['packed_calls'][0]!r} "
                    "(te.extern / te.call_packed), which a library cannot carry")
        return None

    @classmethod
    def from_json(cls, data, where="library"):
        """A FunctionInfo of untrusted ``data``; LibraryError naming what is wrong."""
        try:
            _validate(data)
        except (ValueError, TypeError, KeyError, IndexError) as err:
            raise LibraryError(f"{where}: the function metadata is invalid ({err}); the file "
                               "is damaged or was not written by export_library") from None
        return cls(data)


def _require(cond, what):
    if not cond:
        raise ValueError(what)


def _str(x, what, pattern=None):
    _require(isinstance(x, str) and len(x) < 10_000, f"{what} must be a string")
    if pattern is not None:
        _require(pattern.match(x) is not None, f"{what} {x!r:.60} is not a name")
    return x


def _int(x, what, lo=None, hi=None):
    _require(isinstance(x, int) and not isinstance(x, bool), f"{what} must be an integer")
    _require((lo is None or x >= lo) and (hi is None or x <= hi), f"{what} = {x} out of range")
    return x


def _list(x, what):
    _require(isinstance(x, list) and len(x) <= MAX_ITEMS, f"{what} must be a list")
    return x


def _bool(x, what):
    _require(isinstance(x, bool), f"{what} must be true or false")


KEYS = {"name", "vars", "params", "index_error", "preconditions", "unbound_precondition",
        "check_sites", "error_sites", "workspace", "packed_calls"}


def _validate(d):
    _require(isinstance(d, dict), "a function must be an object")
    _require(set(d) == KEYS, f"expected the keys {sorted(KEYS)}, got {sorted(d)}")
    _str(d["name"], "name", _NAME)
    nvars = len(_list(d["vars"], "vars"))
    for v in d["vars"]:
        _require(isinstance(v, list) and len(v) == 2, "a var must be [name, dtype]")
        _str(v[0], "var name")
        _require(v[1] in SCALAR_DTYPES, f"var dtype {v[1]!r:.40} is not a dtype")
    nscalar = 0
    for k, p in enumerate(_list(d["params"], "params")):
        _require(isinstance(p, dict), "a parameter must be an object")
        if set(p) == {"scalar"}:
            _int(p["scalar"], "scalar", nscalar, nscalar)
            nscalar += 1
            continue
        _require(set(p) == {"buffer", "dtype", "shape", "out", "index", "narrow"},
                 f"parameter {k} has the keys {sorted(p)}")
        _str(p["buffer"], "buffer name")
        _require(p["dtype"] in SCALAR_DTYPES, f"buffer dtype {p['dtype']!r:.40}")
        _bool(p["out"], "out")
        _require(p["index"] in ("int32", "int64"), "index must be int32 or int64")
        ndim = len(_list(p["shape"], "shape"))
        for dim in p["shape"]:
            if isinstance(dim, dict):
                _require(set(dim) in ({"var", "text"}, {"poly", "text"}),
                         "a portable dimension is an int, {var, text} or {poly, text}")
                _str(dim["text"], "dimension text")
                if "var" in dim:
                    _int(dim["var"], "dimension var", 0, nvars - 1)
                else:
                    poly.check(dim["poly"], nvars, "dimension")
            else:
                _int(dim, "dimension", 0)
        for n in _list(p["narrow"], "narrow"):
            _int(n, "narrow dimension", 0, ndim - 1)
    _require(nscalar <= nvars, "more scalar parameters than vars")
    _bool(d["index_error"], "index_error")
    _bool(d["unbound_precondition"], "unbound_precondition")
    for p in _list(d["preconditions"], "preconditions"):
        _require(isinstance(p, dict), "a precondition must be an object")
        for key in ("buffer", "access", "index", "dtype"):
            _str(p[key], key)
        _int(p["dim"], "dim", 0)
        _int(p["least"], "least")
        _bool(p["write"], "write")
        _require(_list(p["lo"], "lo") and _list(p["hi"], "hi"), "empty bounds")
        for q in (*p["lo"], *p["hi"], p["size"], *_list(p["extents"], "extents")):
            poly.check(q, nvars, "precondition")
        shift = _list(p["shift"], "shift")
        _require(len(shift) in (0, 3) and all(isinstance(x, str) for x in shift), "shift")
        _require(not shift or p["extents"], "a shift precondition needs an extent")
    for s in _list(d["check_sites"], "check_sites"):
        _require(isinstance(s, dict), "a check site must be an object")
        for key in ("buffer", "access", "target", "size_text"):
            _str(s[key], key)
        _int(s["dim"], "dim", 0)
        _int(s["npos"], "npos", 0, 5)
        _bool(s["write"], "write")
        if s["size"] is not None:
            poly.check(s["size"], nvars, "check site size")
    for s in _list(d["error_sites"], "error_sites"):
        _require(isinstance(s, dict), "an error site must be an object")
        _require(s["kind"] in ("alloc", "index_width"), "error site kind")
        _str(s["buffer"], "buffer")
        _int(s["itemsize"], "itemsize", 1, 64)
        _require(len(_list(s["factors"], "factors")) == len(_list(s["factors_text"], "t")),
                 "factors")
        for f, t in zip(s["factors"], s["factors_text"]):
            _str(t, "factor text")
            if f is not None:
                poly.check(f, nvars, "error site factor")
    if d["workspace"] is not None:
        _int(d["workspace"], "workspace", 0, 1 << 48)
    _require(_list(d["packed_calls"], "packed_calls") == [], "packed calls cannot be loaded")
