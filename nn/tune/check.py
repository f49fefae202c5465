"""Argument checks for the tuner's public constructors, run before any trial is measured.

Each error names where the argument went, the argument, what it must be and the value given:
``MeasureOption: timeout must be a finite number > 0 (seconds for build + run), got -1``. A value
of the wrong type raises TypeError, one out of range ValueError.
"""
from __future__ import annotations

import math
import numbers
import os
import sys
import warnings

import numpy as np

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def check_int(owner, name, value, minimum, what=""):
    """``value`` as an int, if it is an integer >= ``minimum``."""
    allowed = f"an integer >= {minimum}{what}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner}: {name} must be {allowed}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{owner}: {name} must be {allowed}, got {value!r}")
    return int(value)


def check_real(owner, name, value, minimum=0.0, strict=False, maximum=None, what=""):
    """``value`` as a float, if it is a finite number >= ``minimum`` (> if ``strict``) and at
    most ``maximum``."""
    if maximum is not None:
        allowed = f"a number in [{minimum:g}, {maximum:g}]{what}"
    else:
        allowed = f"a finite number {'>' if strict else '>='} {minimum:g}{what}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {name} must be {allowed}, got {value!r}")
    number = float(value)
    low_ok = number > minimum if strict else number >= minimum
    if not (math.isfinite(number) and low_ok and (maximum is None or number <= maximum)):
        raise ValueError(f"{owner}: {name} must be {allowed}, got {value!r}")
    return number


def check_bool(owner, name, value):
    """``value``, if it is True or False."""
    if not isinstance(value, bool):
        raise TypeError(f"{owner}: {name} must be True or False, got {value!r}")
    return value


def plain(value):
    """``value`` as records keep it: numpy scalars and arrays made plain Python (ints, floats,
    bools), lists and arrays made tuples, all the way down; anything else as it is."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    elif isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (list, tuple)):
        return tuple(plain(v) for v in value)
    return value


def json_value(owner, name, value):
    """``plain(value)`` if it can be stored in a JSON tuning record and read back equal; else
    an error that says what can be stored."""
    value = plain(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{owner}: {name} = {value!r} cannot be stored in a tuning record "
                             "(JSON has no inf or nan); give finite numbers")
        return value
    if isinstance(value, (list, tuple)):
        return tuple(json_value(owner, name, v) for v in value)
    raise TypeError(f"{owner}: {name} = {value!r} ({type(value).__name__}) cannot be stored in "
                    "a tuning record; give numbers, strings, booleans, None or tuples of them")


def warn_user(message, category=UserWarning):
    """Warn with the warning pointing at the first caller outside ``nn.tune`` (the user's
    line), however deep inside the package it is raised."""
    level = 2
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        level += 1
        frame = frame.f_back
    warnings.warn(message, category, stacklevel=level)
