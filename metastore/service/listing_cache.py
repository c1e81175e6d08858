"""Partition listings (get_partitions_by_filter, get_partitions, get_partitions_ps) opened in a snapshot, and a
per-process cache of their encoded replies, validated against the database on every call.

Planners list the same table's partitions over and over. An entry here stores the encoded reply with the
version of the table's partitions it was read at — (number of partitions, digest of their LISTING_VERSION in
name order), which PostgreSQL triggers renew whenever anything a listing sends of a partition changes
(migration 0008) — and the key holds everything else the reply depends on: the request, the table's id, names
and partition keys (all read in the same snapshot as the version) and whether catName is sent. A hit needs the
database to report the same version in the snapshot of the call, so an entry is never served stale, whichever
worker or server (sharing the database) changed the partitions. Bounded in bytes, least recently used first out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Generator, Hashable, Iterator
from contextlib import AbstractContextManager, ExitStack
from typing import Any

from metastore.store import UnitOfWork
from metastore.store.partition_listing import Listing, RowPage
from metastore.store.refs import TableRef

Version = tuple[int, str]


class ListingCache:
    """{key: (version, encoded reply)} bounded to `max_bytes` of replies, none larger than `max_entry`
    bytes; safe to share between threads. Also holds get_partition_names replies (CatalogService
    .cached_partition_names), keyed ("names", table id, max_parts) at the version of the table's set of names
    (migration 0009)."""

    def __init__(self, max_bytes: int, max_entry: int | None = None) -> None:
        if max_bytes < 0:
            raise ValueError(f"cache size must be >= 0 bytes, got {max_bytes}")
        self.max_bytes = max_bytes
        self.max_entry = max_bytes // 2 if max_entry is None else max_entry
        self._entries: OrderedDict[Hashable, tuple[Hashable, bytes]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable, version: Hashable) -> bytes | None:
        """The reply stored under `key` if it was computed at `version`; None otherwise."""
        with self._lock:
            found = self._entries.get(key)
            if found is None or found[0] != version:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return found[1]

    def put(self, key: Hashable, version: Hashable, reply: bytes) -> None:
        """Store `reply`, computed at `version`, replacing what `key` held (a reply over max_entry is not kept)."""
        if len(reply) > self.max_entry:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= len(old[1])
            self._entries[key] = (version, reply)
            self._bytes += len(reply)
            while self._bytes > self.max_bytes:
                _, (_, evicted) = self._entries.popitem(last=False)
                self._bytes -= len(evicted)


def reply_key(ref: TableRef, listing_key: tuple[Any, ...], catalog: bool) -> Hashable:
    """The cache key of a listing's reply: the table (id and names), the listing's key
    (partition_listing.listing_key) and whether catName is sent."""
    return (ref.tbl_id, ref.catalog, ref.db_name, ref.table_name, listing_key, catalog)


class ListingReply:
    """A partition listing opened in a snapshot (which stays open until close()): its reply from the cache
    (`cached`) or its pages read in the snapshot (`open`), and `keep` to cache the reply built from them."""

    def __init__(
        self, listing: Listing, version: Version | None, cache: ListingCache | None, owned: ExitStack
    ) -> None:
        self.listing = listing
        self.version = version
        self._cache = cache if version is not None else None
        self._owned = owned
        self._reader: Generator[Any, None, None] | None = None

    @property
    def caching(self) -> bool:
        """Whether a reply given to keep() may be kept (so worth collecting)."""
        return self._cache is not None

    @property
    def keep_limit(self) -> int:
        """The largest reply keep() keeps (bytes)."""
        return self._cache.max_entry if self._cache is not None else 0

    def _key(self, catalog: bool) -> Hashable:
        return reply_key(self.listing.ref, self.listing.key, catalog)

    def cached(self, catalog: bool) -> bytes | None:
        """The whole encoded reply (list header and partitions) if cached at the current version."""
        if self._cache is None or self.version is None:
            return None
        return self._cache.get(self._key(catalog), self.version)

    def keep(self, catalog: bool, reply: bytes) -> None:
        """Cache the whole encoded reply read from this listing's pages."""
        if self._cache is not None and self.version is not None:
            self._cache.put(self._key(catalog), self.version, reply)

    def open(self) -> tuple[int, Iterator[RowPage]]:
        """(how many partitions, their pages), read in the listing's snapshot; once."""

        def read() -> Generator[Any, None, None]:
            with self._owned:  # errors pass through the unit of work, which ends with the last page
                count, pages = self.listing.read()
                yield count
                yield from pages

        self._reader = read()
        count = next(self._reader)

        def pages() -> Iterator[RowPage]:
            assert self._reader is not None
            yield from self._reader

        return count, pages()

    def close(self) -> None:
        """End the snapshot; safe to call more than once."""
        if self._reader is not None:
            self._reader.close()
        self._owned.close()


def open_listing(
    unit: AbstractContextManager[UnitOfWork], make: Callable[[UnitOfWork], Listing], cache: ListingCache | None
) -> ListingReply:
    """Enter `unit` (a snapshot), make the listing (errors — a missing table, a bad filter — are raised here,
    through the unit, before anything is sent) and, with a cache, read the table's listing version."""
    with ExitStack() as stack:
        uow = stack.enter_context(unit)
        listing = make(uow)
        version = uow.partitions.listing_version(listing.ref.tbl_id) if cache is not None else None
        owned = stack.pop_all()
    return ListingReply(listing, version, cache, owned)
