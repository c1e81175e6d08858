"""Per-file partial statistics (DATA_FILES, DATA_FILE_PARTIALS; issue 10): read, replace by file version, forget.

Every method works inside the caller's unit of work. A file is one row per (table, path); storing it again with
another size, modification time, version or partition deletes the old row, and with it (ON DELETE CASCADE) every
partial computed from the old bytes, before the new row goes in: a rewritten file's partials are never served.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from metastore.stats.partial_store import FilePartials
from metastore.store.chunking import INSERT_BATCH_ROWS, chunks
from metastore.store.schema import DATA_FILE_PARTIALS, DATA_FILES, PARTITIONS
from metastore.store.upsert import insert_rows, upsert


class FilePartialsRepository:
    """DATA_FILES and DATA_FILE_PARTIALS of one table, within one unit of work (its connection)."""

    def __init__(self, conn: sa.Connection) -> None:
        self._conn = conn

    def partition_ids(self, tbl_id: int, names: Sequence[str]) -> dict[str, int]:
        """{partition name: PART_ID} of those names the table has."""
        out: dict[str, int] = {}
        for batch in chunks(sorted(set(names))):
            rows = self._conn.execute(
                sa.select(PARTITIONS.c.PART_NAME, PARTITIONS.c.PART_ID)
                .where(PARTITIONS.c.TBL_ID == tbl_id, PARTITIONS.c.PART_NAME.in_(batch))
            )
            out.update({r.PART_NAME: r.PART_ID for r in rows})
        return out

    def get(self, tbl_id: int, part_ids: Sequence[int] | None, paths: Sequence[str] | None) -> list[FilePartials]:
        """Stored files of the table (only of `part_ids` / only `paths` when given) with their partials, by path."""
        query = (
            sa.select(DATA_FILES, PARTITIONS.c.PART_NAME)
            .outerjoin(PARTITIONS, PARTITIONS.c.PART_ID == DATA_FILES.c.PART_ID)
            .where(DATA_FILES.c.TBL_ID == tbl_id)
        )
        rows: list[Any] = []
        if part_ids is not None and paths is not None:
            for batch in chunks(list(paths)):
                rows.extend(self._conn.execute(
                    query.where(DATA_FILES.c.PATH.in_(batch), DATA_FILES.c.PART_ID.in_(list(part_ids)))
                ))
        elif part_ids is not None:
            for batch_ids in chunks(list(part_ids)):
                rows.extend(self._conn.execute(query.where(DATA_FILES.c.PART_ID.in_(batch_ids))))
        elif paths is not None:
            for batch in chunks(list(paths)):
                rows.extend(self._conn.execute(query.where(DATA_FILES.c.PATH.in_(batch))))
        else:
            rows.extend(self._conn.execute(query))
        entries: dict[int, dict[str, bytes]] = {r.FILE_ID: {} for r in rows}
        for batch_ids in chunks(list(entries)):
            for p in self._conn.execute(
                sa.select(DATA_FILE_PARTIALS).where(DATA_FILE_PARTIALS.c.FILE_ID.in_(batch_ids))
            ):
                entries[p.FILE_ID][p.ENTRY_KEY] = bytes(p.PARTIAL)
        return sorted(
            (
                FilePartials(
                    path=r.PATH, size=r.FILE_SIZE, mtime_ns=r.MTIME_NS, version=r.FILE_VERSION,
                    partition=r.PART_NAME, num_rows=r.NUM_ROWS, raw_data_size=r.RAW_DATA_SIZE,
                    info=bytes(r.INFO), entries=entries[r.FILE_ID],
                )
                for r in rows
            ),
            key=lambda f: f.path,
        )

    def put(self, tbl_id: int, files: Sequence[FilePartials], part_ids: Mapping[str, int]) -> None:
        """Store files (paths unique within `files`; partitions resolved in `part_ids`): a file stored for
        another version or partition is replaced whole, one of the same version gets its facts updated and its
        partials added to or replaced by key. The caller holds the table's lock, so versions cannot interleave."""
        by_path = {f.path: f for f in files}
        existing: dict[str, Any] = {}
        for batch in chunks(list(by_path)):
            for r in self._conn.execute(
                sa.select(DATA_FILES.c.FILE_ID, DATA_FILES.c.PATH, DATA_FILES.c.FILE_SIZE, DATA_FILES.c.MTIME_NS,
                          DATA_FILES.c.FILE_VERSION, DATA_FILES.c.PART_ID)
                .where(DATA_FILES.c.TBL_ID == tbl_id, DATA_FILES.c.PATH.in_(batch))
            ):
                existing[r.PATH] = r
        stale = [
            r.FILE_ID for path, r in existing.items()
            if (r.FILE_SIZE, r.MTIME_NS, r.FILE_VERSION, r.PART_ID) != _identity(by_path[path], part_ids)
        ]
        for batch_ids in chunks(stale):
            self._conn.execute(sa.delete(DATA_FILES).where(DATA_FILES.c.FILE_ID.in_(batch_ids)))
        stale_ids = set(stale)
        kept = {path for path, r in existing.items() if r.FILE_ID not in stale_ids}
        new = [f for f in files if f.path not in kept]
        insert_rows(self._conn, DATA_FILES, [{"TBL_ID": tbl_id, **_file_row(f, part_ids)} for f in new])
        for f in files:
            if f.path in kept:
                self._conn.execute(
                    sa.update(DATA_FILES).where(DATA_FILES.c.FILE_ID == existing[f.path].FILE_ID)
                    .values(NUM_ROWS=f.num_rows, RAW_DATA_SIZE=f.raw_data_size, INFO=f.info)
                )
        ids: dict[str, int] = {path: existing[path].FILE_ID for path in kept}
        for batch in chunks([f.path for f in new]):
            for found in self._conn.execute(
                sa.select(DATA_FILES.c.PATH, DATA_FILES.c.FILE_ID)
                .where(DATA_FILES.c.TBL_ID == tbl_id, DATA_FILES.c.PATH.in_(batch))
            ):
                ids[found.PATH] = found.FILE_ID
        partial_rows = [
            {"FILE_ID": ids[f.path], "ENTRY_KEY": key, "PARTIAL": value}
            for f in files for key, value in f.entries.items()
        ]
        for batch_rows in chunks(partial_rows, INSERT_BATCH_ROWS):
            upsert(self._conn, DATA_FILE_PARTIALS, list(batch_rows), key=("FILE_ID", "ENTRY_KEY"))

    def delete(self, tbl_id: int, part_ids: Sequence[int] | None, paths: Sequence[str] | None) -> int:
        """Forget stored files of the table (only of `part_ids` / only `paths` when given); how many."""
        where = [DATA_FILES.c.TBL_ID == tbl_id]
        count = 0
        if paths is not None:
            for batch in chunks(list(paths)):
                extra = [DATA_FILES.c.PART_ID.in_(list(part_ids))] if part_ids is not None else []
                count += self._conn.execute(
                    sa.delete(DATA_FILES).where(*where, DATA_FILES.c.PATH.in_(batch), *extra)
                ).rowcount
            return count
        if part_ids is not None:
            for batch_ids in chunks(list(part_ids)):
                count += self._conn.execute(
                    sa.delete(DATA_FILES).where(*where, DATA_FILES.c.PART_ID.in_(batch_ids))
                ).rowcount
            return count
        return int(self._conn.execute(sa.delete(DATA_FILES).where(*where)).rowcount)


def _identity(f: FilePartials, part_ids: Mapping[str, int]) -> tuple[int, int, str, int | None]:
    return f.size, f.mtime_ns, f.version, None if f.partition is None else part_ids[f.partition]


def _file_row(f: FilePartials, part_ids: Mapping[str, int]) -> dict[str, Any]:
    return {
        "PART_ID": None if f.partition is None else part_ids[f.partition],
        "PATH": f.path, "FILE_SIZE": f.size, "MTIME_NS": f.mtime_ns, "FILE_VERSION": f.version,
        "NUM_ROWS": f.num_rows, "RAW_DATA_SIZE": f.raw_data_size, "INFO": f.info,
    }
