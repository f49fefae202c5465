"""The exception that every built function raises for an argument that does not match its
declaration. A leaf module: the interpreter (``schedule``), both backends and loaded libraries
raise this one class."""
from __future__ import annotations


class ArgumentError(TypeError):
    """A built function was called with an argument that does not match its declaration
    (also ``codegen_llvm.ArgumentError`` and ``schedule.bound_checks.ArgumentError``)."""


class LibraryError(ValueError):
    """An exported library that cannot be loaded: not a tensorweave library, damaged, or made
    by an incompatible version or for another machine."""
