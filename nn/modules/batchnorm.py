"""(to be written: see issue 5)"""
from __future__ import annotations

__all__ = []
