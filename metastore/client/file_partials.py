"""A PartialStore in the metastore's own database, reached through any MetastoreClient (issue 10).

    store = MetastorePartialStore(client, "sales", "orders")
    result = analyze_files(refs, columns, hive_types=types, cache=store, partition="ds=2024-01-01")

Per-file results written by one host (a shell, a Spark driver, a cron job) serve every other, so a re-ANALYZE
anywhere reads only the files that changed since anyone analysed them. Against a server that lacks the extension
calls (a Hive Metastore), the store says so once and keeps results in `fallback` (e.g. the local file cache).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from metastore.client.base import MetastoreClient
from metastore.errors import MetastoreError
from metastore.stats.partial_store import FilePartials, PartialStore
from metastore.storage import FileRef

__all__ = ["MetastorePartialStore"]

log = logging.getLogger(__name__)

#: Bytes of partials sent per put call (a server refuses frames over its --max-frame-size, 256 MiB by default).
PUT_BATCH_BYTES = 32 << 20


def _unsupported(exc: MetastoreError) -> bool:
    return "Invalid method name" in str(exc)


class MetastorePartialStore:
    """Per-file results of one table in the metastore's database (PartialStore)."""

    def __init__(self, client: MetastoreClient, db_name: str, table_name: str, *,
                 fallback: PartialStore | None = None) -> None:
        self.client = client
        self.db_name = db_name
        self.table_name = table_name
        self.fallback = fallback
        self.supported = True
        # stored paths seen by lookup, per partition, so retain needs no second read
        self._stored_paths: dict[str | None, set[str]] = {}

    def _disable(self, exc: MetastoreError) -> None:
        self.supported = False
        where = "the local cache" if self.fallback is not None else "nowhere"
        log.warning("the metastore at %s does not keep per-file results (%s); they are kept in %s",
                    self.client.target or "the server", exc, where)

    def lookup(self, files: Sequence[FileRef], partition: str | None = None) -> dict[str, FilePartials]:
        """Stored results of `files` valid for their listed size, mtime and version, by URL."""
        if self.supported:
            try:
                stored = self.client.get_file_partials(
                    self.db_name, self.table_name, None if partition is None else [partition]
                )
            except MetastoreError as exc:
                if not _unsupported(exc):
                    raise
                self._disable(exc)
            else:
                by_path = {f.path: f for f in stored}
                self._stored_paths[partition] = set(by_path)
                out = {}
                for ref in files:
                    found = by_path.get(ref.url)
                    if found is not None and found.matches(ref):
                        out[ref.url] = found
                return out
        return self.fallback.lookup(files, partition) if self.fallback is not None else {}

    def lookup_many(self, groups: Mapping[str | None, Sequence[FileRef]]) -> dict[str, FilePartials]:
        """:meth:`lookup` for several partitions' files (partition name -> files) in one call."""
        if not self.supported or None in groups or len(groups) < 2:
            out: dict[str, FilePartials] = {}
            for partition, files in groups.items():
                out.update(self.lookup(files, partition))
            return out
        try:
            stored = self.client.get_file_partials(self.db_name, self.table_name, [str(p) for p in groups])
        except MetastoreError as exc:
            if not _unsupported(exc):
                raise
            self._disable(exc)
            return self.lookup_many(groups)
        by_path = {f.path: f for f in stored}
        for partition in groups:
            self._stored_paths[partition] = set()
        for f in stored:
            self._stored_paths.setdefault(f.partition, set()).add(f.path)
        found = {}
        for files in groups.values():
            for ref in files:
                match = by_path.get(ref.url)
                if match is not None and match.matches(ref):
                    found[ref.url] = match
        return found

    def store(self, files: Sequence[FilePartials]) -> None:
        """Keep these results, in calls of at most PUT_BATCH_BYTES of partials each (each one transaction)."""
        if not self.supported:
            if self.fallback is not None:
                self.fallback.store(files)
            return
        batch: list[FilePartials] = []
        size = 0
        for f in files:
            weight = len(f.info) + sum(len(k) + len(v) for k, v in f.entries.items()) + len(f.path) + 64
            if batch and size + weight > PUT_BATCH_BYTES:
                self._put(batch)
                batch, size = [], 0
            batch.append(f)
            size += weight
        if batch:
            self._put(batch)

    def _put(self, batch: list[FilePartials]) -> None:
        try:
            self.client.put_file_partials(self.db_name, self.table_name, batch)
        except MetastoreError as exc:
            if not _unsupported(exc):
                raise
            self._disable(exc)
            if self.fallback is not None:
                self.fallback.store(batch)

    def retain(self, files: Sequence[FileRef], partition: str | None = None) -> None:
        """Forget stored files of the partition (or table) that are not among `files` any more."""
        if not self.supported:
            if self.fallback is not None:
                self.fallback.retain(files, partition)
            return
        stored = self._stored_paths.pop(partition, None)
        if stored is None:
            stored = {f.path for f in self.client.get_file_partials(
                self.db_name, self.table_name, None if partition is None else [partition])}
        gone = sorted(stored - {f.url for f in files})
        if gone:
            self.client.delete_file_partials(
                self.db_name, self.table_name, None if partition is None else [partition], gone
            )

    def retain_many(self, groups: Mapping[str | None, Sequence[FileRef]]) -> None:
        """:meth:`retain` for several partitions (partition name -> its files now): the stored files gone from
        all of them forgotten in one call (partitions whose stored paths no lookup saw are read first)."""
        if not self.supported or None in groups or len(groups) < 2:
            for partition, files in groups.items():
                self.retain(files, partition)
            return
        unseen = [str(p) for p in groups if p not in self._stored_paths]
        if unseen:
            for f in self.client.get_file_partials(self.db_name, self.table_name, unseen):
                self._stored_paths.setdefault(f.partition, set()).add(f.path)
        gone: dict[str, list[str]] = {}
        for partition, files in groups.items():
            stored = self._stored_paths.pop(partition, set())
            missing = sorted(stored - {f.url for f in files})
            if missing:
                gone[str(partition)] = missing
        if gone:
            # partitions and paths both given: only those paths of those partitions are deleted
            self.client.delete_file_partials(self.db_name, self.table_name, list(gone),
                                             [path for paths in gone.values() for path in paths])

    def close(self) -> None:
        """Close the fallback store, if any (the client belongs to the caller)."""
        close = getattr(self.fallback, "close", None)
        if close is not None:
            close()
