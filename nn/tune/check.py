"""Argument checks for the tuner's public constructors, run before any trial is measured.

Each error names where the argument went, the argument, what it must be and the value given:
``MeasureOption: timeout must be a finite number > 0 (seconds for build + run), got -1``. A value
of the wrong type raises TypeError, one out of range ValueError.
"""
from __future__ import annotations

import math
import numbers


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
