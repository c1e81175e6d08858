"""Freed memory kept for reuse in the processes that harvest files (the runner's workers, Spark's Python workers).

A file's scan makes numpy temporaries of a few MB each (one value per row of a stripe, several per column).
glibc's malloc serves blocks that large from fresh ``mmap`` pages, or from a heap top that it trims back to the
kernel as soon as they are freed; either way the next temporary arrives as new pages that the kernel zeroes and
maps one fault per 4 KiB, which costs more than the numpy operation that fills them (a varint decode of 250,000
values: 8.7 ms with the defaults, 2.6 ms with freed memory kept; the whole harvest of a Spark-written file
about a quarter less CPU). :func:`keep_freed_memory` raises malloc's mmap threshold to its largest value and its
trim threshold above it, so freed blocks stay in the heap and are reused.

Only worker processes that exist to harvest call it (the local runner's pool initialiser, the Spark tasks):
it changes the process's allocator for its lifetime, and a process that keeps running (the shell, a user's
program calling :func:`~metastore.stats.harvest.analyze_files` in-process) keeps the defaults. The heap then
holds up to :data:`TRIM_THRESHOLD` bytes of freed memory more than it would.

A process that keeps running but reads a few files itself (the Spark driver's re-run, ``analyze._driver_rows``)
uses :func:`freed_memory_kept` instead: the same settings for the duration of a ``with`` block, then glibc's
default thresholds again and the kept memory given back (``malloc_trim``), so the process holds no more
afterwards than before. (Setting a threshold ends glibc's dynamic raising of the mmap threshold: after the
block both stay at their documented defaults, 128 KiB.)
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "freed_memory_kept", "keep_freed_memory"]

#: blocks up to this size come from the heap (glibc's largest mmap threshold on 64-bit systems)
MMAP_THRESHOLD = 32 << 20
#: free memory at the heap's top kept rather than given back to the kernel
TRIM_THRESHOLD = 64 << 20

# mallopt parameters (glibc malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

#: glibc's default mmap and trim thresholds (what freed_memory_kept restores)
_DEFAULT_THRESHOLD = 128 << 10

_done: bool | None = None
_scope_lock = threading.Lock()
_scopes = 0


def keep_freed_memory() -> bool:
    """Make this process's malloc keep freed blocks for reuse (glibc on Linux; elsewhere nothing changes).
    Returns whether the allocator took the settings; calling it again does nothing more."""
    global _done
    if _done is not None:
        return _done
    _done = False
    if not sys.platform.startswith("linux"):
        return False
    libc = _libc()
    if libc is None:
        return False
    # the mmap threshold first: setting it fixes both (no dynamic adjustment), then the trim threshold above it
    _done = _set_thresholds(libc, MMAP_THRESHOLD, TRIM_THRESHOLD)
    return _done


@contextmanager
def freed_memory_kept() -> Iterator[None]:
    """Keep freed blocks for reuse while the block runs (as :func:`keep_freed_memory`), then restore glibc's
    default thresholds and give the kept memory back to the kernel. Nested and concurrent blocks (threads) share
    one setting, undone when the last ends; in a process that keeps freed memory for good nothing changes."""
    global _scopes
    libc = _libc() if sys.platform.startswith("linux") else None
    with _scope_lock:
        _scopes += 1
        if _scopes == 1 and libc is not None and _done is None:
            _set_thresholds(libc, MMAP_THRESHOLD, TRIM_THRESHOLD)
    try:
        yield
    finally:
        with _scope_lock:
            _scopes -= 1
            if _scopes == 0 and libc is not None and _done is None:
                _set_thresholds(libc, _DEFAULT_THRESHOLD, _DEFAULT_THRESHOLD)
                libc.malloc_trim(0)


@cache
def _libc() -> Any:
    """glibc's mallopt and malloc_trim, typed (None where they are missing)."""
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    trim.argtypes = (ctypes.c_size_t,)
    trim.restype = ctypes.c_int
    return libc


def _set_thresholds(libc: Any, mmap_threshold: int, trim_threshold: int) -> bool:
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, mmap_threshold)) and bool(libc.mallopt(_M_TRIM_THRESHOLD,
                                                                                     trim_threshold))
