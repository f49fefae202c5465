"""Workspace arenas: the memory of a CPU function's large intermediate buffers.

Functions with large intermediate buffers get them from a workspace arena of the calling
thread that grows to the largest request and is kept (``with_workspace``;
``release_workspace`` frees the calling thread's idle ones); a call made while another runs
on the same thread (from a ``te.extern`` callback) gets an arena of its own.
"""
from __future__ import annotations

import threading

import numpy as np

ARENA_ALIGN = 64


class _IdleArenas(threading.local):
    """This thread's workspace arenas that no running call uses."""

    def __init__(self):
        self.arenas = []        # each [size, 64-byte aligned address, the numpy buffer]


_ARENAS = _IdleArenas()


def _grow(arena, nbytes):
    raw = np.empty(nbytes + ARENA_ALIGN, np.uint8)
    base = raw.__array_interface__["data"][0]
    arena[:] = [nbytes, base + (-base % ARENA_ALIGN), raw]     # frees the previous buffer


def workspace_arena(nbytes: int) -> int:
    """The address of the arena that this thread's next call gets, grown to ``nbytes``."""
    idle = _ARENAS.arenas
    if not idle:
        idle.append([0, 0, None])
    if idle[-1][0] < nbytes:
        _grow(idle[-1], nbytes)
    return idle[-1][1]


def workspace_size() -> int:
    """The bytes of the arena that this thread's next call gets (0: none allocated yet)."""
    idle = _ARENAS.arenas
    return idle[-1][0] if idle else 0


def with_workspace(cfunc, nbytes: int, callback=None):
    """``cfunc`` called with a workspace arena of ``nbytes`` (then the packed-call
    ``callback`` address) after its arguments.

    Each call takes an idle arena of its thread for as long as it runs and puts it back
    after. The arena grows to the largest workspace asked of it and stays allocated (its pages
    stay mapped: allocating megabytes per call cost page faults). A function called while
    another runs on the same thread (from a ``te.extern`` callback, a finalizer or a signal
    handler) finds the outer call's arena taken and gets another, so that it neither
    overwrites the outer call's intermediates nor frees the buffer under it; calls that do
    not nest keep reusing one arena.
    """
    arenas = _ARENAS
    if callback is None:
        def call(*cargs):
            idle = arenas.arenas
            arena = idle.pop() if idle else [0, 0, None]
            try:
                if arena[0] < nbytes:
                    _grow(arena, nbytes)
                return cfunc(*cargs, arena[1])
            finally:
                idle.append(arena)
    else:
        def call(*cargs):
            idle = arenas.arenas
            arena = idle.pop() if idle else [0, 0, None]
            try:
                if arena[0] < nbytes:
                    _grow(arena, nbytes)
                return cfunc(*cargs, arena[1], callback)
            finally:
                idle.append(arena)
    return call


def release_workspace():
    """Free the calling thread's idle workspace arenas (the next call that needs one allocates
    it). Arenas of calls running now (when called from a callback) stay until those end."""
    _ARENAS.arenas.clear()
