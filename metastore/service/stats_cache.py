"""A per-process cache of encoded partition-statistics replies, validated against the database on every call.

Query planners ask for the same partitions' statistics over and over (get_partitions_statistics_req,
get_aggr_stats_for); Hive answers the aggregate from its AggregateStatsCache, whose entries live for a time
to live and may be stale. Entries here are never served stale: each stores the version of the partitions it
was computed from — (table id, partitions found, sum of their STATS_VERSION), which PostgreSQL triggers renew
whenever a partition's statistics or name change (migration 0003) — read in the same snapshot as the data,
and a hit needs the database to report the same version now. Bounded in bytes, least recently used first out.

An entry may also keep how its version was read (`how`: for the store, the span of a run of partitions, whose
version it then reads as one index range): the next check reads it the same way, and only a version read that
way answers for the entry.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

Version = tuple[int, int, int]


class ReplyCache:
    """{key: (version, encoded reply)} bounded to `max_bytes` of replies; safe to share between threads."""

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError(f"cache size must be >= 0 bytes, got {max_bytes}")
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, tuple[Version, bytes, Hashable]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def how(self, key: Hashable) -> Hashable:
        """How the version of the entry under `key` is to be read (see put); None without an entry."""
        with self._lock:
            found = self._entries.get(key)
        return None if found is None else found[2]

    def get(self, key: Hashable, version: Version, how: Hashable = None) -> bytes | None:
        """The reply stored under `key` if it was computed at `version`, read as `how` says; None otherwise."""
        with self._lock:
            found = self._entries.get(key)
            if found is None or found[0] != version or found[2] != how:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return found[1]

    def keeps(self, size: int) -> bool:
        """Whether put keeps a reply of `size` bytes."""
        return size <= self.max_bytes // 4

    def put(self, key: Hashable, version: Version, reply: bytes, how: Hashable = None) -> None:
        """Store `reply`, computed at `version`, replacing what `key` held; `how` the next version of it is to
        be read (get answers only for a version read so). A reply larger than a quarter of the cache is not
        kept (it would evict everything else for one request)."""
        if not self.keeps(len(reply)):
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= len(old[1])
            self._entries[key] = (version, reply, how)
            self._bytes += len(reply)
            while self._bytes > self.max_bytes:
                _, (_, evicted, _) = self._entries.popitem(last=False)
                self._bytes -= len(evicted)
