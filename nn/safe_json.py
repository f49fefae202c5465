"""JSON from files that may be hostile: ``loads(data, max_depth)`` parses like ``json.loads``
but refuses, with a ValueError, a document nested deeper than ``max_depth`` arrays and objects
before parsing it (so that a line of 100,000 ``[`` is an error, not a RecursionError), and
turns any recursion error left into a ValueError too. Used by checkpoints and tuning records.
"""
from __future__ import annotations

import json
import re

import numpy as np

# A JSON string: a quote, then characters other than a quote or backslash, or a backslash and
# the character it escapes, then a quote (the unrolled form keeps the regex linear).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_OPEN = np.zeros(256, np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1


def depth(data: bytes) -> int:
    """How deeply the arrays and objects of the JSON text ``data`` nest (brackets inside
    strings do not count; 0 for a scalar)."""
    if b"[" not in data and b"{" not in data:
        return 0
    codes = np.frombuffer(_STRING.sub(b'""', data), np.uint8)
    steps = _OPEN[codes]
    steps = steps[steps != 0]
    return int(np.cumsum(steps, dtype=np.int64).max(initial=0))


def loads(data, max_depth: int):
    """``json.loads(data)`` (``data``: str, or bytes in UTF-8), ValueError if it nests deeper
    than ``max_depth`` or is not valid UTF-8 or JSON."""
    if isinstance(data, str):
        text, data = data, data.encode("utf-8", "surrogatepass")
    else:
        data = bytes(data)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"it is not valid UTF-8 ({error})") from None
    found = depth(data)
    if found > max_depth:
        raise ValueError(f"the JSON nests {found} arrays and objects deep, more than the "
                         f"{max_depth} allowed")
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("the JSON nests too deeply to parse") from None
