"""Split-filtering index records (SPLIT_INDEXES, SPLIT_INDEX_PARTS, SPLIT_INDEX_FILES), issue 11.

An index row names its table by TBL_ID (NULL once the table row is gone) and keeps the names it was created
with for display. Parts and their covered files are replaced as a whole when an index is (re)built, in the
caller's transaction, so a reader sees either the old build or the new one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from metastore.catalog import DEFAULT_CATALOG
from metastore.errors import AlreadyExists, NoSuchObject
from metastore.index.model import DataFile, IndexKind, IndexLevel, IndexPart, IndexRecord, IndexState
from metastore.store.chunking import chunks
from metastore.store.identifiers import normalize
from metastore.store.refs import table_id_query
from metastore.store.schema import DBS, SPLIT_INDEX_FILES, SPLIT_INDEX_PARTS, SPLIT_INDEXES, TBLS
from metastore.store.upsert import insert_rows


class SplitIndexRepository:
    """Index records within one unit of work (its connection)."""

    def __init__(self, conn: sa.Connection) -> None:
        self._conn = conn

    # ------------------------------------------------------------------ writes

    def create(self, record: IndexRecord, catalog: str = DEFAULT_CATALOG) -> None:
        """Insert an index (its parts too); NoSuchObject when its table does not exist, AlreadyExists when the
        name is taken or the table has an index of that kind on that column already."""
        tbl_id = self._conn.execute(
            sa.select(table_id_query(catalog, record.db_name, record.table_name))
        ).scalar()
        if tbl_id is None:
            raise NoSuchObject(f"table {normalize(record.db_name)}.{normalize(record.table_name)} does not exist")
        name = normalize(record.name)
        if self._index_id(name) is not None:
            raise AlreadyExists(f"index {name} exists already")
        twin = self._conn.execute(
            sa.select(SPLIT_INDEXES.c.INDEX_NAME).where(
                SPLIT_INDEXES.c.TBL_ID == tbl_id,
                SPLIT_INDEXES.c.COLUMN_NAME == normalize(record.column),
                SPLIT_INDEXES.c.INDEX_TYPE == record.kind.value,
            )
        ).scalar()
        if twin is not None:
            raise AlreadyExists(
                f"{record.kind.value} index {twin} exists already on {normalize(record.db_name)}."
                f"{normalize(record.table_name)} ({normalize(record.column)})"
            )
        result = self._conn.execute(
            sa.insert(SPLIT_INDEXES).values(
                INDEX_NAME=name,
                TBL_ID=tbl_id,
                DB_NAME=normalize(record.db_name),
                TBL_NAME=normalize(record.table_name),
                COLUMN_NAME=normalize(record.column),
                COLUMN_TYPE=record.column_type,
                INDEX_TYPE=record.kind.value,
                INDEX_LEVEL=record.level.value,
                PROPERTIES=json.dumps(record.properties, sort_keys=True),
                PARTITIONS=None if record.partitions is None else json.dumps(list(record.partitions)),
                LOCATION=record.location,
                STATE=record.state.value,
                CREATE_TIME=record.created,
                BUILD_TIME=record.built,
                OWNER_NAME=record.owner or None,
            )
        )
        index_id = result.inserted_primary_key[0] if result.inserted_primary_key else self._index_id(name)
        assert index_id is not None
        self._insert_parts(int(index_id), record.parts)

    def _insert_parts(self, index_id: int, parts: Sequence[IndexPart]) -> None:
        for part in parts:
            result = self._conn.execute(
                sa.insert(SPLIT_INDEX_PARTS).values(
                    INDEX_ID=index_id, PART_KEY=part.key, PART_NAME=part.partition, LOCATION=part.location,
                    FILE_SIZE=part.size,
                )
            )
            part_id = result.inserted_primary_key[0] if result.inserted_primary_key else None
            assert part_id is not None
            insert_rows(self._conn, SPLIT_INDEX_FILES, [
                {"PART_ID": part_id, "INTEGER_IDX": i, "FILE_PATH": f.path, "FILE_SIZE": f.size,
                 "FILE_MTIME_NS": f.mtime_ns}
                for i, f in enumerate(part.files)
            ])

    def finish_build(
        self, name: str, parts: Sequence[IndexPart], *, built: int, partitions: tuple[str, ...] | None
    ) -> list[str]:
        """Replace an index's parts with a new build and mark it READY; returns the locations of part files
        no longer recorded (the caller deletes them after the commit). Two builds racing: the last to finish
        wins, and the other's files are returned to it for deletion."""
        index_id = self._require(name)
        old = set(self._conn.execute(
            sa.select(SPLIT_INDEX_PARTS.c.LOCATION).where(SPLIT_INDEX_PARTS.c.INDEX_ID == index_id)
        ).scalars())
        self._conn.execute(sa.delete(SPLIT_INDEX_PARTS).where(SPLIT_INDEX_PARTS.c.INDEX_ID == index_id))
        self._insert_parts(index_id, parts)
        self._conn.execute(
            sa.update(SPLIT_INDEXES).where(SPLIT_INDEXES.c.INDEX_ID == index_id).values(
                STATE=IndexState.READY.value, BUILD_TIME=built,
                PARTITIONS=None if partitions is None else json.dumps(list(partitions)),
            )
        )
        kept = {p.location for p in parts}
        return sorted(old - kept)

    def drop(self, name: str) -> IndexRecord:
        """Delete an index with its parts; returns it as it was (NoSuchObject when there is none)."""
        record = self.get(name)
        self._conn.execute(sa.delete(SPLIT_INDEXES).where(SPLIT_INDEXES.c.INDEX_NAME == normalize(name)))
        return record

    def drop_partition_parts(self, name: str, partitions: Sequence[str]) -> list[str]:
        """Delete the parts of an index that belong to the given partitions and stop covering them; returns
        the part locations removed."""
        index_id = self._require(name)
        wanted = list(partitions)
        removed: list[str] = []
        for batch in chunks(wanted, 500):
            condition = sa.and_(SPLIT_INDEX_PARTS.c.INDEX_ID == index_id, SPLIT_INDEX_PARTS.c.PART_NAME.in_(list(batch)))
            removed.extend(self._conn.execute(sa.select(SPLIT_INDEX_PARTS.c.LOCATION).where(condition)).scalars())
            self._conn.execute(sa.delete(SPLIT_INDEX_PARTS).where(condition))
        current = self._conn.execute(
            sa.select(SPLIT_INDEXES.c.PARTITIONS).where(SPLIT_INDEXES.c.INDEX_ID == index_id)
        ).scalar()
        if current is not None:
            names = [p for p in json.loads(current) if p not in set(wanted)]
            self._conn.execute(
                sa.update(SPLIT_INDEXES).where(SPLIT_INDEXES.c.INDEX_ID == index_id).values(PARTITIONS=json.dumps(names))
            )
        return removed

    def drop_for_table(self, db_name: str, table_name: str, catalog: str = DEFAULT_CATALOG) -> list[IndexRecord]:
        """Delete every index of a table (before the table row goes); returns them."""
        records = self.list_indexes(db_name, table_name, catalog=catalog)
        if records:
            self._conn.execute(
                sa.delete(SPLIT_INDEXES).where(SPLIT_INDEXES.c.INDEX_NAME.in_([r.name for r in records]))
            )
        return records

    def drop_for_partitions(
        self, db_name: str, table_name: str, partitions: Sequence[str], catalog: str = DEFAULT_CATALOG
    ) -> list[str]:
        """Delete the parts of every index of a table that belong to dropped partitions; a TABLE-level part
        covering them is kept (its files are gone: it is Out-of-sync until UPDATE INDEX). Returns the removed
        part locations."""
        removed: list[str] = []
        for record in self.list_indexes(db_name, table_name, catalog=catalog):
            removed.extend(self.drop_partition_parts(record.name, partitions))
        return removed

    # ------------------------------------------------------------------ reads

    def _index_id(self, name: str) -> int | None:
        value = self._conn.execute(
            sa.select(SPLIT_INDEXES.c.INDEX_ID).where(SPLIT_INDEXES.c.INDEX_NAME == normalize(name))
        ).scalar()
        return None if value is None else int(value)

    def _require(self, name: str) -> int:
        index_id = self._index_id(name)
        if index_id is None:
            raise NoSuchObject(f"index {normalize(name)} does not exist")
        return index_id

    def get(self, name: str) -> IndexRecord:
        """One index with its parts; NoSuchObject when there is none."""
        found = self._load(SPLIT_INDEXES.c.INDEX_NAME == normalize(name))
        if not found:
            raise NoSuchObject(f"index {normalize(name)} does not exist")
        return found[0]

    def list_indexes(
        self, db_name: str | None = None, table_name: str | None = None, catalog: str = DEFAULT_CATALOG
    ) -> list[IndexRecord]:
        """Indexes (with parts), all or those of a database or table, by name. A table's indexes are those on
        the table that exists under that name now."""
        if db_name is None:
            return self._load(sa.true())
        if table_name is None:
            tables = sa.select(TBLS.c.TBL_ID).join(DBS, DBS.c.DB_ID == TBLS.c.DB_ID).where(
                DBS.c.NAME == normalize(db_name), DBS.c.CTLG_NAME == normalize(catalog)
            )
            return self._load(sa.or_(
                SPLIT_INDEXES.c.TBL_ID.in_(tables.scalar_subquery()),
                sa.and_(SPLIT_INDEXES.c.TBL_ID.is_(None), SPLIT_INDEXES.c.DB_NAME == normalize(db_name)),
            ))
        return self._load(SPLIT_INDEXES.c.TBL_ID == table_id_query(catalog, db_name, table_name))

    def _load(self, condition: Any) -> list[IndexRecord]:
        query = (
            sa.select(
                SPLIT_INDEXES,
                TBLS.c.TBL_NAME.label("CURRENT_TBL_NAME"),
                DBS.c.NAME.label("CURRENT_DB_NAME"),
            )
            .outerjoin(TBLS, TBLS.c.TBL_ID == SPLIT_INDEXES.c.TBL_ID)
            .outerjoin(DBS, DBS.c.DB_ID == TBLS.c.DB_ID)
            .where(condition)
            .order_by(SPLIT_INDEXES.c.INDEX_NAME)
        )
        rows = self._conn.execute(query).all()
        if not rows:
            return []
        ids = [r.INDEX_ID for r in rows]
        parts: dict[int, list[tuple[int, Any]]] = {i: [] for i in ids}
        part_rows: list[Any] = []
        for batch in chunks(ids, 500):
            part_rows.extend(self._conn.execute(
                sa.select(SPLIT_INDEX_PARTS).where(SPLIT_INDEX_PARTS.c.INDEX_ID.in_(list(batch)))
                .order_by(SPLIT_INDEX_PARTS.c.INDEX_ID, SPLIT_INDEX_PARTS.c.PART_ID)
            ).all())
        files: dict[int, list[DataFile]] = {p.PART_ID: [] for p in part_rows}
        for batch in chunks(list(files), 500):
            for f in self._conn.execute(
                sa.select(SPLIT_INDEX_FILES).where(SPLIT_INDEX_FILES.c.PART_ID.in_(list(batch)))
                .order_by(SPLIT_INDEX_FILES.c.PART_ID, SPLIT_INDEX_FILES.c.INTEGER_IDX)
            ):
                files[f.PART_ID].append(DataFile(f.FILE_PATH, int(f.FILE_SIZE), int(f.FILE_MTIME_NS)))
        for p in part_rows:
            parts[p.INDEX_ID].append((p.PART_ID, p))
        out = []
        for r in rows:
            record_parts = tuple(
                IndexPart(p.PART_KEY, p.PART_NAME, p.LOCATION, int(p.FILE_SIZE), tuple(files[part_id]))
                for part_id, p in parts[r.INDEX_ID]
            )
            exists = r.TBL_ID is not None
            out.append(IndexRecord(
                name=r.INDEX_NAME,
                db_name=r.CURRENT_DB_NAME if exists else r.DB_NAME,
                table_name=r.CURRENT_TBL_NAME if exists else r.TBL_NAME,
                column=r.COLUMN_NAME,
                column_type=r.COLUMN_TYPE,
                kind=IndexKind(r.INDEX_TYPE),
                level=IndexLevel(r.INDEX_LEVEL),
                properties=dict(json.loads(r.PROPERTIES)),
                partitions=None if r.PARTITIONS is None else tuple(json.loads(r.PARTITIONS)),
                location=r.LOCATION,
                state=IndexState(r.STATE),
                created=int(r.CREATE_TIME),
                built=int(r.BUILD_TIME),
                owner=r.OWNER_NAME or "",
                table_exists=exists,
                parts=record_parts,
            ))
        return out
