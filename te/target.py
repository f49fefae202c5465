"""Targets: ``"llvm"``, ``"llvm -mcpu=znver3 -mattr=+avx2,+fma"`` and ``"cuda"``.

As in TVM, ``with Target("cuda"):`` makes a target current, so that operator declarations can
choose an algorithm for it (``Target.current()``; None outside any ``with``).
"""
from __future__ import annotations

import threading

_CURRENT = threading.local()


class _Kind:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


class Target:
    """A parsed target string; ``kind.name`` is 'llvm' or 'cuda'."""

    def __init__(self, target="llvm", host=None):
        if isinstance(target, Target):
            self.__dict__.update(target.__dict__)
            return
        if not isinstance(target, str) or not target.strip():
            raise ValueError(f"target must be a string such as 'llvm' or 'cuda', got {target!r}")
        parts = target.split()
        if parts[0] not in ("llvm", "cuda", "c"):
            raise ValueError(f"unknown target kind {parts[0]!r}; use 'llvm' or 'cuda'")
        self.kind = _Kind(parts[0])
        self.host = host
        self.mcpu, self.mattr, self.opts = None, [], {}
        for p in parts[1:]:
            if not p.startswith("-") or "=" not in p:
                raise ValueError(f"target option {p!r} must look like -key=value")
            key, value = p[1:].split("=", 1)
            if key == "mcpu":
                self.mcpu = value
            elif key == "mattr":
                self.mattr = [a for a in value.split(",") if a]
            else:
                self.opts[key] = value
        self.text = target

    def __str__(self):
        return self.text

    def __enter__(self):
        stack = _CURRENT.__dict__.setdefault("stack", [])
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _CURRENT.stack.pop()

    @staticmethod
    def current(allow_none=True):
        """The innermost target of the enclosing ``with Target(...)`` blocks of this thread."""
        stack = getattr(_CURRENT, "stack", None)
        if stack:
            return stack[-1]
        if not allow_none:
            raise ValueError("no target is current: use `with te.target.Target(...):`")
        return None

    __repr__ = __str__
