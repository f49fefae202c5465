"""Environment switches, read once at import.

| variable        | default | meaning                                                        |
|-----------------|---------|----------------------------------------------------------------|
| TW_DEBUG        | 0       | 1: print each lowered function; 2: also the IR after each pass |
| TW_VERIFY       | 0       | 1: run the IR verifier between passes                          |
| TW_NUM_THREADS  | cores   | threads used by ``parallel`` loops (also ``te.set_num_threads``) |
| TW_CACHE_DIR    | ~/.cache/tensorweave | the on-disk compile cache of ``codegen_llvm``; |
|                 |         | "" turns it off (also ``codegen_llvm.cache.set_cache_dir``)    |
| TW_BOUND_CHECKS | 1       | 0: lower without ``bound_checks`` (no call-time preconditions, |
|                 |         | no in-kernel index checks: out-of-bounds accesses go unseen).  |
|                 |         | Only for measuring what the checks cost (benchmarks/           |
|                 |         | safety_cost.py sets ``BOUND_CHECKS`` itself); per loop,        |
|                 |         | ``s[T].pragma(axis, "no_bound_check")`` is the opt-out         |
"""
from __future__ import annotations

import os

DEBUG = int(os.environ.get("TW_DEBUG", "0") or 0)
VERIFY = os.environ.get("TW_VERIFY", "0") not in ("", "0")
BOUND_CHECKS = os.environ.get("TW_BOUND_CHECKS", "1") not in ("", "0")
_cache_dir = os.environ.get("TW_CACHE_DIR", "~/.cache/tensorweave")
CACHE_DIR = os.path.abspath(os.path.expanduser(_cache_dir)) if _cache_dir else None
