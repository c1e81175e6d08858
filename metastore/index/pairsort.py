"""Sorting a B+Tree's (key, id) pairs instead of merging their sorted runs: the pairs cut into buckets by their
keys' top bits, packed one pair a uint64, each bucket sorted by numpy and unpacked (the kernels' pack_runs and
unpack_runs around numpy's sort). Used by btree.merge_sorted_runs for many runs and by ranged's range workers,
whose scratch arrays are kept from range to range (kept_buffer)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["BUCKET_PAIRS", "kept_buffer", "sort_pairs", "sorted_buckets"]


#: keys a bucket of sort_pairs holds, about (a bucket's sort stays in the processor's cache)
BUCKET_PAIRS = 4096

#: per worker process, its arrays reused from range to range (fresh pages cost a fault each: 30-50 ms a range)
_KEPT: dict[str, np.ndarray] = {}


def kept_buffer(name: str, size: int, dtype: type) -> np.ndarray:
    """An array of ``size`` items kept in this process under ``name`` for the next range (contents undefined)."""
    kept = _KEPT.get(name)
    if kept is None or len(kept) < size or kept.dtype != dtype:
        kept = _KEPT[name] = np.empty(max(size, int(size * 1.25)), dtype=dtype)
    return kept[:size]


def sorted_buckets(compiled: Any, runs: Sequence[np.ndarray], ids: Sequence[np.ndarray | None],
                   bases: Sequence[int], id_bits: int, total: int, reuse: bool,
                   ) -> tuple[np.ndarray, np.ndarray, int, int] | None:
    """The runs' pairs cut into buckets by pack_runs and each bucket sorted (sort_pairs's first steps): the packed
    numbers, the buckets' starts, the smallest key (low) and the shift; None when they do not fit 64 bits."""
    bits = min(20, max(0, (total // BUCKET_PAIRS).bit_length()))
    if reuse:
        packed = kept_buffer("packed", total, np.uint64)
        starts = kept_buffer("starts", (1 << bits) + 1, np.int64)
    else:
        packed = np.empty(total, dtype=np.uint64)
        starts = np.empty((1 << bits) + 1, dtype=np.int64)
    got = compiled.pack_runs(list(runs), list(ids), list(bases), packed, starts, bits, id_bits)
    if got is None:
        return None
    low, shift = got
    edges = starts.tolist()
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        if b - a > 1:
            packed[a:b].sort()
    return packed, starts, int(low), int(shift)


def sort_pairs(compiled: Any, runs: Sequence[np.ndarray], ids: Sequence[np.ndarray | None], bases: Sequence[int],
               id_bits: int, out_keys: np.ndarray, out_ids: np.ndarray, *, reuse: bool = False) -> int:
    """The kernels' merge_runs (btree.int_runs's runs, whose ids ascend with the runs and along a run's equal
    keys: so by key, then id) into ``out_keys`` and uint32 ``out_ids``, by sorting instead of merging: the pairs
    cut into buckets of about BUCKET_PAIRS by their keys' top bits, each packed into one uint64 (key bits below
    the bucket's, then the id's ``id_bits`` bits), each bucket sorted by numpy (a vectorised sort), unpacked: 0.09 s
    for 4.2 M keys from 100 runs against merge_runs's 0.23 s. merge_runs itself when the keys' bits left and the
    id's do not fit 64 bits. Returns how many keys equal the key before them. ``reuse``: the scratch arrays are
    this process's kept ones (kept_buffer: a worker's, one range at a time)."""
    got = sorted_buckets(compiled, runs, ids, bases, id_bits, len(out_keys), reuse)
    if got is None:
        return int(compiled.merge_runs(list(runs), list(ids), list(bases), out_keys, out_ids))
    packed, starts, low, shift = got
    return int(compiled.unpack_runs(packed, starts, low, shift, id_bits, out_keys, out_ids))
