"""Partitions (PARTITIONS, PARTITION_KEY_VALS, PARTITION_PARAMS and each partition's storage descriptor).

Every operation on many partitions is a fixed number of statements (per thousand partitions), never a
statement per partition.
"""

from __future__ import annotations

import builtins
import functools
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import sqlalchemy as sa

from metastore.catalog import DEFAULT_CATALOG, FieldSchema, Partition, StorageDescriptor
from metastore.errors import AlreadyExists, InvalidInput, InvalidObject, InvalidOperation, NoSuchObject
from metastore.partnames import make_part_name, values_from_part_name
from metastore.stats.accurate import params_with_columns_removed
from metastore.store import schema
from metastore.store.child_rows import ChildKind, parameters_of
from metastore.store.chunking import chunks
from metastore.store.column_stats import forget_partition_columns
from metastore.store.identifiers import normalize, validate_columns
from metastore.store.ids import allocate_ids
from metastore.store.parameters import PARTITION_PARAMETERS
from metastore.store.partition_filter import compile_filter, register_sqlite_functions
from metastore.store.partition_listing import (
    ALL_REQUEST,
    Listing,
    RowPage,
    columns_of,
    filter_request,
    listing_key,
    new_column_descriptors,
    object_page,
    page_statement,
    ps_request,
)
from metastore.store.prepared import execute_prepared
from metastore.store.refs import (
    TableRef,
    table_ref,
    table_ref_and_keys,
    table_ref_and_names_version,
)
from metastore.store.schema import PARTITION_KEY_VALS, PARTITIONS, SDS
from metastore.store.storage import (
    StorageRef,
    delete_storage,
    delete_unused_column_descriptors,
    dropped_or_retyped,
    insert_column_descriptor,
    insert_storage,
    load_columns,
    load_storage_with,
    replace_storage,
    same_columns,
    storage_refs,
)
from metastore.store.upsert import insert_rows


@functools.cache
def _rows_by_names_query(lock: bool) -> sa.Select[Any]:
    """The stored rows of a table's partitions (:tbl_id) named :names (an expanding list), by PART_ID; locked
    with ``lock``. Built once (not per call: an ANALYZE's write looks its partitions up by name)."""
    query = (
        sa.select(*_ROW_COLUMNS)
        .where(PARTITIONS.c.TBL_ID == sa.bindparam("tbl_id"),
               PARTITIONS.c.PART_NAME.in_(sa.bindparam("names", expanding=True)))
        .order_by(PARTITIONS.c.PART_ID)
    )
    return query.with_for_update() if lock else query


_ROW_COLUMNS = (
    PARTITIONS.c.PART_ID,
    PARTITIONS.c.PART_NAME,
    PARTITIONS.c.SD_ID,
    PARTITIONS.c.CREATE_TIME,
    PARTITIONS.c.LAST_ACCESS_TIME,
    PARTITIONS.c.WRITE_ID,
)


# Partitions per page of a long listing (stream_names, stream_by_filter): what a listing holds at a time.
PAGE_ROWS = 2000
# Names per page of a name listing (stream_names): a name is a short string (about 1.5 MB of Python objects for
# 20,000), and every page is a statement, so a listing of up to this many names is one statement (no count).
NAME_PAGE_ROWS = 20_000


# The listing version of a table's partitions (PostgreSQL): their LISTING_VERSION values in order, as one digest.
# Each value is given to one state of one partition only (a sequence), so the sorted values stand for the states.
# A table's listing version: its partitions' count and a digest of their LISTING_VERSIONs (kept by triggers,
# migration 0008). One expression for both statements that read it (_LISTING_VERSION, _LISTING_LOOKUP): a reply
# cached under one must be found under the other.
_LISTING_VERSION_OF = (
    'SELECT count(*) AS n, md5(coalesce(string_agg(p."LISTING_VERSION"::text, \',\' ORDER BY p."LISTING_VERSION"), '
    '\'\')) AS digest FROM "PARTITIONS" p WHERE p."TBL_ID" = {tbl_id}'
)
_LISTING_VERSION = sa.text(_LISTING_VERSION_OF.format(tbl_id=":tbl_id"))


# table_ref, partition_keys and _LISTING_VERSION in one statement, as text for PREPARE (execute_prepared numbers the
# :parameters); see listing_lookup.
_LISTING_LOOKUP = (
    'SELECT t."TBL_ID", t."DB_ID", t."SD_ID", s."CD_ID", k.names, k.types, v.n, v.digest FROM "TBLS" t '
    'JOIN "DBS" d ON d."DB_ID" = t."DB_ID" LEFT JOIN "SDS" s ON s."SD_ID" = t."SD_ID" '
    'CROSS JOIN LATERAL (SELECT array_agg(pk."PKEY_NAME" ORDER BY pk."INTEGER_IDX") AS names, '
    'array_agg(pk."PKEY_TYPE" ORDER BY pk."INTEGER_IDX") AS types '
    'FROM "PARTITION_KEYS" pk WHERE pk."TBL_ID" = t."TBL_ID") k '
    'CROSS JOIN LATERAL (' + _LISTING_VERSION_OF.format(tbl_id='t."TBL_ID"') + ') v '
    'WHERE d."NAME" = :db AND d."CTLG_NAME" = :catalog AND t."TBL_NAME" = :tbl'
)
_LISTING_LOOKUP_PARAMS = (("db", "text"), ("catalog", "text"), ("tbl", "text"))


# A page of a table's partition names (PostgreSQL), after %(last)s in name order; read through the driver's cursor
# (no SQLAlchemy row per name).
_NAMES = 'SELECT "PART_NAME" FROM "PARTITIONS" WHERE "TBL_ID" = %(tbl_id)s {after}ORDER BY "PART_NAME" LIMIT %(size)s'
_NAMES_FIRST = _NAMES.format(after="")
_NAMES_NEXT = _NAMES.format(after='AND "PART_NAME" > %(last)s ')


@dataclass
class NamesPage:
    """A page of partition names, in order."""

    names: list[str]

    def __len__(self) -> int:
        return len(self.names)


def _limit(max_parts: int) -> int | None:
    """Hive's max_parts: negative means all."""
    return None if max_parts is None or max_parts < 0 else max_parts


class _KeyValueJoins:
    """PARTITION_KEY_VALS joined once per partition key a condition uses."""

    def __init__(self) -> None:
        self.aliases: dict[int, sa.FromClause] = {}

    def value(self, idx: int) -> sa.ColumnElement[str]:
        if idx not in self.aliases:
            self.aliases[idx] = PARTITION_KEY_VALS.alias(f"kv{idx}")
        return self.aliases[idx].c.PART_KEY_VAL

    def apply(self, query: sa.Select[Any]) -> sa.Select[Any]:
        source: sa.FromClause = PARTITIONS
        for idx, alias in sorted(self.aliases.items()):
            source = source.join(
                alias, sa.and_(alias.c.PART_ID == PARTITIONS.c.PART_ID, alias.c.INTEGER_IDX == idx)
            )
        return query.select_from(source)


class PartitionRepository:
    """Add, read, list, filter, alter, rename and drop partitions within one unit of work."""

    def __init__(self, conn: sa.Connection) -> None:
        self._conn = conn

    # ------------------------------------------------------------------ helpers

    def _table(
        self, db_name: str, table_name: str, catalog: str, *, for_update: bool = False
    ) -> tuple[TableRef, list[FieldSchema]]:
        return table_ref_and_keys(self._conn, catalog, db_name, table_name, for_update=for_update)

    def _filtered_table(self, db_name: str, table_name: str, catalog: str) -> tuple[TableRef, list[FieldSchema]]:
        try:
            return self._table(db_name, table_name, catalog)
        except NoSuchObject:
            # Hive's words for the filter calls (its tests look for them), names as the client gave them.
            raise NoSuchObject(f"{db_name}.{table_name} table not found") from None

    def _name(self, ref: TableRef, keys: Sequence[FieldSchema], values: Sequence[str]) -> str:
        if not keys:
            raise InvalidObject(f"table {ref.qualified_name} is not partitioned")
        if len(values) != len(keys):
            raise InvalidObject(
                f"table {ref.qualified_name} has {len(keys)} partition key(s) {[k.name for k in keys]}, "
                f"got {len(values)} value(s) {list(values)!r}"
            )
        for key, value in zip(keys, values, strict=True):
            if not isinstance(value, str) or value == "":
                raise InvalidObject(f"partition value for key {key.name!r} of {ref.qualified_name} is empty")
            if len(value) > schema.PART_KEY_VAL_LEN:
                raise InvalidObject(
                    f"partition value for key {key.name!r} is {len(value)} characters long; "
                    f"the limit is {schema.PART_KEY_VAL_LEN}"
                )
            if "\x00" in value:
                raise InvalidObject(f"partition value for key {key.name!r} contains a NUL character")
        name = make_part_name([k.name for k in keys], list(values))
        if len(name) > schema.PART_NAME_LEN:
            raise InvalidObject(
                f"partition name {name[:60]!r}... is longer than {schema.PART_NAME_LEN} characters"
            )
        return name

    def _rows(
        self,
        ref: TableRef,
        condition: sa.ColumnElement[bool] | None = None,
        joins: _KeyValueJoins | None = None,
        max_parts: int = -1,
        columns: Sequence[sa.ColumnElement[Any]] = _ROW_COLUMNS,
    ) -> Sequence[sa.Row[Any]]:
        query = sa.select(*columns).where(PARTITIONS.c.TBL_ID == ref.tbl_id)
        if condition is not None:
            query = query.where(condition)
        query = (joins or _KeyValueJoins()).apply(query).order_by(PARTITIONS.c.PART_NAME)
        limit = _limit(max_parts)
        if limit is not None:
            query = query.limit(limit)
        return self._conn.execute(query).all()

    def _pages(
        self,
        ref: TableRef,
        condition: sa.ColumnElement[bool] | None,
        joins: _KeyValueJoins | None,
        limit: int | None,
        page: int,
        columns: Sequence[sa.ColumnElement[Any]],
        wrap: Callable[[sa.Select[Any]], sa.Select[Any]] | None = None,
    ) -> Iterator[Sequence[sa.Row[Any]]]:
        """The rows _rows returns, `page` at a time in name order, at most `limit` in all: each page starts
        after the last name of the one before (the unique index (TBL_ID, PART_NAME) serves each page), so a
        table of any size is listed without holding more than a page. wrap: what runs instead of each page's
        select (a statement over it whose rows have its PART_NAME, in its order)."""
        last: str | None = None
        left = limit
        while left is None or left > 0:
            size = page if left is None else min(page, left)
            query = sa.select(*columns).where(PARTITIONS.c.TBL_ID == ref.tbl_id)
            if condition is not None:
                query = query.where(condition)
            if last is not None:
                query = query.where(PARTITIONS.c.PART_NAME > last)
            query = (joins or _KeyValueJoins()).apply(query).order_by(PARTITIONS.c.PART_NAME).limit(size)
            rows = self._conn.execute(wrap(query) if wrap is not None else query).all()
            if rows:
                yield rows
            if len(rows) < size:
                return
            last = rows[-1].PART_NAME
            if left is not None:
                left -= len(rows)

    def _counted_pages(
        self,
        ref: TableRef,
        condition: sa.ColumnElement[bool] | None,
        joins: _KeyValueJoins | None,
        max_parts: int,
        page: int,
        columns: Sequence[sa.ColumnElement[Any]],
        wrap: Callable[[sa.Select[Any]], sa.Select[Any]] | None = None,
    ) -> tuple[int, Iterator[Sequence[sa.Row[Any]]]]:
        """(how many rows _rows would return, those rows a page at a time). A listing that fits one page costs
        one statement, as _rows; a longer one a count besides. Run inside one snapshot (Store.snapshot), so
        the count and the pages agree."""
        limit = _limit(max_parts)
        pages = self._pages(ref, condition, joins, limit, page, columns, wrap)
        first = next(pages, ())
        if len(first) < page or (limit is not None and len(first) == limit):
            count = len(first)
        else:
            query = (joins or _KeyValueJoins()).apply(
                sa.select(sa.func.count()).where(PARTITIONS.c.TBL_ID == ref.tbl_id)
            )
            if condition is not None:
                query = query.where(condition)
            count = self._conn.execute(query).scalar_one()
            if limit is not None:
                count = min(count, limit)

        def all_pages() -> Iterator[Sequence[sa.Row[Any]]]:
            if first:
                yield first
            yield from pages

        return count, all_pages()

    def _rows_by_names(
        self, ref: TableRef, names: Sequence[str], *, lock: bool = False
    ) -> dict[str, sa.Row[Any]]:
        found: dict[str, sa.Row[Any]] = {}
        query = _rows_by_names_query(lock)
        for batch in chunks(list(dict.fromkeys(names))):
            rows = self._conn.execute(query, {"tbl_id": ref.tbl_id, "names": list(batch)})
            found.update({r.PART_NAME: r for r in rows})
        return found

    def _load(self, ref: TableRef, rows: Sequence[sa.Row[Any]]) -> list[Partition]:
        if not rows:
            return []
        part_ids = [r.PART_ID for r in rows]
        # the descriptors, then their child rows with the partitions' values and parameters: one statement
        params_table = PARTITION_PARAMETERS.table
        sds, (value_rows, param_rows) = load_storage_with(
            self._conn, [r.SD_ID for r in rows if r.SD_ID is not None], [
                ChildKind(PARTITION_KEY_VALS.c.PART_ID, part_ids, (PARTITION_KEY_VALS.c.PART_KEY_VAL,),
                          position=PARTITION_KEY_VALS.c.INTEGER_IDX),
                ChildKind(PARTITION_PARAMETERS.owner_column, part_ids,
                          (params_table.c.PARAM_KEY, params_table.c.PARAM_VALUE)),
            ])
        values: dict[int, list[str]] = {pid: [] for pid in part_ids}
        for pid, value, *_ in value_rows:
            values[pid].append(value)
        params = parameters_of(param_rows, part_ids)
        return [
            Partition(
                db_name=ref.db_name,
                table_name=ref.table_name,
                values=values[r.PART_ID],
                create_time=r.CREATE_TIME,
                last_access_time=r.LAST_ACCESS_TIME,
                sd=sds.get(r.SD_ID, StorageDescriptor()),
                parameters=params[r.PART_ID],
                catalog_name=ref.catalog,
                write_id=r.WRITE_ID,
            )
            for r in rows
        ]

    def _column_descriptors(
        self, ref: TableRef, partitions: Sequence[Partition], previous: Sequence[int | None] | None = None
    ) -> tuple[list[int | None], list[list[FieldSchema]]]:
        """A column descriptor per partition: its previous one or the table's when the columns are the same,
        else a new one shared by partitions with equal columns; none for a partition whose columns are unset
        (Thrift null), as Hive 2.3 stores it. Also returns the normalised columns (the table's for unset ones)."""
        candidates = {cd for cd in (previous or []) if cd is not None}
        if ref.cd_id is not None:
            candidates.add(ref.cd_id)
        known = load_columns(self._conn, list(candidates))
        table_cols = known.get(ref.cd_id, []) if ref.cd_id is not None else []
        created: dict[tuple[tuple[str, str, str | None], ...], int] = {}
        cd_ids: list[int | None] = []
        all_cols: list[list[FieldSchema]] = []
        for i, p in enumerate(partitions):
            if p.sd.cols_unset:
                cd_ids.append(None)
                all_cols.append(list(table_cols))
                continue
            cols = (
                validate_columns(p.sd.cols, f"partition {p.values} of {ref.qualified_name}")
                if p.sd.cols
                else table_cols
            )
            prev = previous[i] if previous else None
            if prev is not None and same_columns(known.get(prev, []), cols):
                cd = prev
            elif ref.cd_id is not None and same_columns(table_cols, cols):
                cd = ref.cd_id
            else:
                signature = tuple((c.name, c.type, c.comment) for c in cols)
                if signature not in created:
                    created[signature] = insert_column_descriptor(self._conn, cols)
                cd = created[signature]
            cd_ids.append(cd)
            all_cols.append(list(cols))
        return cd_ids, all_cols

    # ------------------------------------------------------------------ add

    def add(self, partitions: Sequence[Partition], *, if_not_exists: bool = False) -> list[Partition]:
        """Add partitions of one table; returns those added. AlreadyExists if one exists (unless
        if_not_exists, which skips them); InvalidObject for values not fitting the partition keys or
        partitions of different tables; NoSuchObject for a missing table."""
        if not partitions:
            return []
        first = partitions[0]
        target = (normalize(first.catalog_name), normalize(first.db_name), normalize(first.table_name))
        for p in partitions:
            if (normalize(p.catalog_name), normalize(p.db_name), normalize(p.table_name)) != target:
                raise InvalidObject(
                    f"partitions of different tables in one request: {first.db_name}.{first.table_name} and "
                    f"{p.db_name}.{p.table_name}"
                )
        ref, keys = self._table(first.db_name, first.table_name, first.catalog_name)
        names = [self._name(ref, keys, p.values) for p in partitions]
        seen: set[str] = set()
        for name in names:
            if name in seen:
                raise InvalidObject(f"partition {name} of {ref.qualified_name} appears twice in the request")
            seen.add(name)
        existing = self._rows_by_names(ref, names)
        if existing and not if_not_exists:
            shown = ", ".join(sorted(existing)[:5])
            raise AlreadyExists(f"partition(s) of {ref.qualified_name} already exist: {shown}")
        todo = [(p, n) for p, n in zip(partitions, names, strict=True) if n not in existing]
        if not todo:
            return []
        now = int(time.time())
        added = [
            replace(
                p,
                db_name=ref.db_name,
                table_name=ref.table_name,
                catalog_name=ref.catalog,
                create_time=p.create_time or now,
            )
            for p, _ in todo
        ]
        cd_ids, _ = self._column_descriptors(ref, added)
        sd_ids = insert_storage(self._conn, [p.sd for p in added], cd_ids)
        part_rows = [
            {
                "TBL_ID": ref.tbl_id,
                "SD_ID": sd_id,
                "PART_NAME": name,
                "CREATE_TIME": p.create_time,
                "LAST_ACCESS_TIME": p.last_access_time,
                "WRITE_ID": p.write_id,
            }
            for p, (_, name), sd_id in zip(added, todo, sd_ids, strict=True)
        ]
        part_ids = allocate_ids(self._conn, PARTITIONS, "PART_ID", len(part_rows))
        try:
            insert_rows(
                self._conn,
                PARTITIONS,
                [{"PART_ID": i, **row} for i, row in zip(part_ids, part_rows, strict=True)],
            )
        except sa.exc.IntegrityError:  # a concurrent add won the race; this transaction rolls back
            raise AlreadyExists(f"partition(s) of {ref.qualified_name} were added concurrently") from None
        insert_rows(
            self._conn,
            PARTITION_KEY_VALS,
            [
                {"PART_ID": pid, "INTEGER_IDX": i, "PART_KEY_VAL": v}
                for pid, p in zip(part_ids, added, strict=True)
                for i, v in enumerate(p.values)
            ],
        )
        PARTITION_PARAMETERS.insert(
            self._conn, {pid: p.parameters for pid, p in zip(part_ids, added, strict=True)}
        )
        return added

    # ------------------------------------------------------------------ read

    def get(
        self, db_name: str, table_name: str, values: Sequence[str], *, catalog: str = DEFAULT_CATALOG
    ) -> Partition:
        """The partition with these values; NoSuchObject if it does not exist."""
        ref, keys = self._table(db_name, table_name, catalog)
        name = self._name(ref, keys, values)
        return self._get_named(ref, name)

    def _get_named(self, ref: TableRef, name: str) -> Partition:
        row = self._rows_by_names(ref, [name]).get(name)
        if row is None:
            raise NoSuchObject(f"partition {name} of {ref.qualified_name} does not exist")
        return self._load(ref, [row])[0]

    def get_by_name(
        self, db_name: str, table_name: str, name: str, *, catalog: str = DEFAULT_CATALOG
    ) -> Partition:
        """The partition called `name` (`k1=v1/k2=v2`, Hive-escaped); NoSuchObject if there is none or the
        name does not fit the table's partition keys."""
        ref, keys = self._table(db_name, table_name, catalog)
        return self._get_named(ref, self._canonical_name(ref, keys, name))

    def _canonical_name(self, ref: TableRef, keys: Sequence[FieldSchema], name: str) -> str:
        try:
            return self._name(ref, keys, values_from_part_name(name, [k.name for k in keys]))
        except InvalidObject as exc:
            raise NoSuchObject(f"partition {name!r} of {ref.qualified_name} does not exist: {exc}") from None

    def _canonical_names(self, ref: TableRef, keys: Sequence[FieldSchema], names: Sequence[str]) -> list[str]:
        """The canonical forms of `names`, leaving out malformed names and names of other keys."""
        canonical = []
        for n in names:
            try:
                canonical.append(self._canonical_name(ref, keys, n))
            except NoSuchObject:
                continue
        return canonical

    def get_by_names(
        self, db_name: str, table_name: str, names: Sequence[str], *, catalog: str = DEFAULT_CATALOG
    ) -> list[Partition]:
        """The partitions that exist among `names`, ordered by name (missing or malformed names are left out)."""
        ref, keys = self._table(db_name, table_name, catalog)
        canonical = self._canonical_names(ref, keys, names)
        rows = sorted(self._rows_by_names(ref, canonical).values(), key=lambda r: r.PART_NAME)
        return self._load(ref, rows)

    def list(
        self, db_name: str, table_name: str, *, max_parts: int = -1, catalog: str = DEFAULT_CATALOG
    ) -> list[Partition]:
        """The table's partitions ordered by name, at most max_parts (-1: all)."""
        ref = table_ref(self._conn, catalog, db_name, table_name)
        return self._load(ref, self._rows(ref, max_parts=max_parts))

    def list_names(
        self, db_name: str, table_name: str, *, max_parts: int = -1, catalog: str = DEFAULT_CATALOG
    ) -> builtins.list[str]:
        """The table's partition names in order, at most max_parts (-1: all)."""
        ref = table_ref(self._conn, catalog, db_name, table_name)
        return [r.PART_NAME for r in self._rows(ref, max_parts=max_parts, columns=[PARTITIONS.c.PART_NAME])]

    def stream_names(
        self, db_name: str, table_name: str, *, max_parts: int = -1, page: int = NAME_PAGE_ROWS,
        catalog: str = DEFAULT_CATALOG,
    ) -> tuple[int, Iterator[NamesPage]]:
        """list_names as (how many, the names a page at a time); inside one snapshot (Store.snapshot). On
        PostgreSQL the names are read through the driver's cursor (no SQLAlchemy row per name)."""
        ref = table_ref(self._conn, catalog, db_name, table_name)  # (the partition keys are not needed)
        return self.stream_names_of(ref, max_parts=max_parts, page=page)

    def names_version(
        self, db_name: str, table_name: str, *, catalog: str = DEFAULT_CATALOG
    ) -> tuple[TableRef, int | None]:
        """The table and, read in the same statement, the version of its set of partition names: renewed by
        PostgreSQL triggers whenever a partition is added, dropped, renamed or moved (migration 0009), so equal
        in two snapshots only if the table's names (in order) are. None when not versioned (SQLite; a table
        whose partitions never changed since it was created)."""
        return table_ref_and_names_version(self._conn, catalog, db_name, table_name)

    def stream_names_of(
        self, ref: TableRef, *, max_parts: int = -1, page: int = NAME_PAGE_ROWS
    ) -> tuple[int, Iterator[NamesPage]]:
        """stream_names of a table already looked up (in this snapshot)."""
        if self._conn.dialect.name == "postgresql":
            return self._driver_names(ref, _limit(max_parts), page)
        count, pages = self._counted_pages(ref, None, None, max_parts, page, [PARTITIONS.c.PART_NAME])
        return count, (NamesPage([r.PART_NAME for r in rows]) for rows in pages)

    def _driver_names(self, ref: TableRef, limit: int | None, page: int) -> tuple[int, Iterator[NamesPage]]:
        def read(last: str | None, size: int) -> tuple[NamesPage, str | None]:
            result = self._conn.exec_driver_sql(
                _NAMES_FIRST if last is None else _NAMES_NEXT, {"tbl_id": ref.tbl_id, "last": last, "size": size}
            )
            try:
                names = [name for (name,) in result.cursor.fetchall()]
            finally:
                result.close()
            return NamesPage(names), (names[-1] if names else None)

        size = page if limit is None else min(page, limit)
        first, last = read(None, size)
        if len(first) < size or (limit is not None and len(first) == limit):
            count = len(first)
        else:
            count = self._conn.execute(
                sa.select(sa.func.count()).select_from(PARTITIONS).where(PARTITIONS.c.TBL_ID == ref.tbl_id)
            ).scalar_one()
            if limit is not None:
                count = min(count, limit)

        def pages() -> Iterator[NamesPage]:
            nonlocal last
            if len(first):
                yield first
            left = None if limit is None else limit - len(first)
            got = len(first)
            while got == page and (left is None or left > 0):
                size = page if left is None else min(page, left)
                current, last = read(last, size)
                if len(current):
                    yield current
                got = len(current)
                if left is not None:
                    left -= got
                if got < size:
                    return

        return count, pages()

    def stream_by_filter(
        self, db_name: str, table_name: str, filter_text: str, *, max_parts: int = -1, page: int = PAGE_ROWS,
        catalog: str = DEFAULT_CATALOG,
    ) -> tuple[int, Iterator[builtins.list[Partition]]]:
        """list_by_filter as (how many, the partitions a page at a time); inside one snapshot (Store.snapshot).
        InvalidInput for a bad filter, before anything is read."""
        ref, keys = self._filtered_table(db_name, table_name, catalog)
        condition, joins = self._filter(ref, keys, filter_text)
        count, pages = self._counted_pages(ref, condition, joins, max_parts, page, _ROW_COLUMNS)
        return count, (self._load(ref, rows) for rows in pages)

    def _row_pages(
        self,
        ref: TableRef,
        condition: sa.ColumnElement[bool] | None,
        joins: _KeyValueJoins | None,
        max_parts: int,
        page: int,
    ) -> tuple[int, Iterator[RowPage]]:
        """What _counted_pages gives, each page as a RowPage (rows for partition_bytes, no Partition objects
        on PostgreSQL: one statement a page, partition_listing.page_statement)."""
        if self._conn.dialect.name != "postgresql":
            count, pages = self._counted_pages(ref, condition, joins, max_parts, page, _ROW_COLUMNS)
            return count, (
                object_page(ref.db_name, ref.table_name, ref.catalog, self._load(ref, rows)) for rows in pages
            )
        count, pages = self._counted_pages(ref, condition, joins, max_parts, page, _ROW_COLUMNS, page_statement)
        seen: set[Any] = set()

        def row_pages() -> Iterator[RowPage]:
            for rows in pages:
                new = new_column_descriptors(rows, seen)
                columns = columns_of(load_columns(self._conn, new)) if new else {}
                yield RowPage(ref.db_name, ref.table_name, ref.catalog, rows, columns)

        return count, row_pages()

    def _listing(
        self,
        ref: TableRef,
        keys: Sequence[FieldSchema],
        request: tuple[Any, ...],
        condition: sa.ColumnElement[bool] | None,
        joins: _KeyValueJoins | None,
        max_parts: int,
        page: int,
    ) -> Listing:
        return Listing(
            ref,
            listing_key(request, max_parts, [(k.name, k.type) for k in keys]),
            lambda: self._row_pages(ref, condition, joins, max_parts, page),
        )

    def listing_by_filter(
        self, db_name: str, table_name: str, filter_text: str, *, max_parts: int = -1, page: int = PAGE_ROWS,
        catalog: str = DEFAULT_CATALOG,
    ) -> Listing:
        """list_by_filter as a Listing (rows for partition_bytes, read a page at a time by Listing.read);
        inside one snapshot (Store.snapshot). InvalidInput for a bad filter, here, before anything is read."""
        ref, keys = self._filtered_table(db_name, table_name, catalog)
        condition, joins = self._filter(ref, keys, filter_text)
        return self._listing(ref, keys, filter_request(filter_text), condition, joins, max_parts, page)

    def listing(
        self, db_name: str, table_name: str, *, max_parts: int = -1, page: int = PAGE_ROWS,
        catalog: str = DEFAULT_CATALOG,
    ) -> Listing:
        """list as a Listing (see listing_by_filter)."""
        ref, keys = self._table(db_name, table_name, catalog)
        return self._listing(ref, keys, ALL_REQUEST, None, None, max_parts, page)

    def listing_by_partial_values(
        self, db_name: str, table_name: str, values: Sequence[str], *, max_parts: int = -1, page: int = PAGE_ROWS,
        catalog: str = DEFAULT_CATALOG,
    ) -> Listing:
        """list_by_partial_values as a Listing (see listing_by_filter)."""
        ref, keys = self._table(db_name, table_name, catalog)
        condition, joins = self._partial(ref, keys, values)
        return self._listing(ref, keys, ps_request(values), condition, joins, max_parts, page)

    def stream_rows_by_filter(
        self, db_name: str, table_name: str, filter_text: str, *, max_parts: int = -1, page: int = PAGE_ROWS,
        catalog: str = DEFAULT_CATALOG,
    ) -> tuple[int, Iterator[RowPage]]:
        """listing_by_filter, read."""
        return self.listing_by_filter(
            db_name, table_name, filter_text, max_parts=max_parts, page=page, catalog=catalog
        ).read()

    def stream_rows(
        self, db_name: str, table_name: str, *, max_parts: int = -1, page: int = PAGE_ROWS,
        catalog: str = DEFAULT_CATALOG,
    ) -> tuple[int, Iterator[RowPage]]:
        """listing, read."""
        return self.listing(db_name, table_name, max_parts=max_parts, page=page, catalog=catalog).read()

    def stream_rows_by_partial_values(
        self, db_name: str, table_name: str, values: Sequence[str], *, max_parts: int = -1, page: int = PAGE_ROWS,
        catalog: str = DEFAULT_CATALOG,
    ) -> tuple[int, Iterator[RowPage]]:
        """listing_by_partial_values, read."""
        return self.listing_by_partial_values(
            db_name, table_name, values, max_parts=max_parts, page=page, catalog=catalog
        ).read()

    def listing_version(self, tbl_id: int) -> tuple[int, str] | None:
        """(number of partitions, digest of their LISTING_VERSION values, sorted) of a table on PostgreSQL,
        where triggers renew a partition's version whenever anything a listing sends of it changes (migration
        0008): equal in two snapshots only if the table's partitions are. None elsewhere (not kept)."""
        if self._conn.dialect.name != "postgresql":
            return None
        row = self._conn.execute(_LISTING_VERSION, {"tbl_id": tbl_id}).one()
        return int(row[0]), str(row[1])

    def listing_lookup(
        self, db_name: str, table_name: str, *, catalog: str = DEFAULT_CATALOG
    ) -> tuple[TableRef, builtins.list[tuple[str, str]], tuple[int, str]] | None:
        """The table, its partition keys as (name, type) and its partitions' listing version (listing_version),
        all read by one statement (so in one snapshot): what a cached listing reply's key and version are
        made of. A server-side prepared statement on the DB-API cursor, as table_ref_and_names_version: a
        cache hit is this one statement. None on databases without listing versions, and when there is no
        such table (the listing itself then reports it, in its own words)."""
        if self._conn.dialect.name != "postgresql":
            return None
        db, tbl, cat = normalize(db_name), normalize(table_name), normalize(catalog)
        rows = execute_prepared(
            self._conn, "metastore_listing_lookup", _LISTING_LOOKUP, _LISTING_LOOKUP_PARAMS,
            {"db": db, "catalog": cat, "tbl": tbl}, in_transaction=self._conn.in_transaction(),
        )
        if not rows:
            return None
        tbl_id, db_id, sd_id, cd_id, key_names, key_types, count, digest = rows[0]
        ref = TableRef(tbl_id=tbl_id, db_id=db_id, sd_id=sd_id, cd_id=cd_id, db_name=db, table_name=tbl, catalog=cat)
        return ref, list(zip(key_names or (), key_types or (), strict=True)), (int(count), str(digest))

    def rows_by_names(
        self, db_name: str, table_name: str, names: Sequence[str], *, catalog: str = DEFAULT_CATALOG
    ) -> RowPage:
        """get_by_names as one RowPage (ordered by name)."""
        if self._conn.dialect.name != "postgresql":
            ref = table_ref(self._conn, catalog, db_name, table_name)
            return object_page(ref.db_name, ref.table_name, ref.catalog, self.get_by_names(
                db_name, table_name, names, catalog=catalog
            ))
        ref, keys = self._table(db_name, table_name, catalog)
        canonical = self._canonical_names(ref, keys, names)
        if not canonical:
            return RowPage(ref.db_name, ref.table_name, ref.catalog, [])
        from sqlalchemy.dialects import postgresql  # here: only PostgreSQL needs it (~18 ms of start-up)

        condition = PARTITIONS.c.PART_NAME == sa.any_(
            sa.bindparam(None, list(dict.fromkeys(canonical)), type_=postgresql.ARRAY(PARTITIONS.c.PART_NAME.type))
        )
        _, pages = self._row_pages(ref, condition, None, -1, len(canonical) + 1)
        page = next(pages, RowPage(ref.db_name, ref.table_name, ref.catalog, []))
        page.rows = sorted(page.rows, key=lambda r: r[0])  # by name as Python orders, as get_by_names
        return page

    def count(self, db_name: str, table_name: str, *, catalog: str = DEFAULT_CATALOG) -> int:
        """How many partitions the table has."""
        ref = table_ref(self._conn, catalog, db_name, table_name)
        return self._conn.execute(
            sa.select(sa.func.count()).select_from(PARTITIONS).where(PARTITIONS.c.TBL_ID == ref.tbl_id)
        ).scalar_one()

    def _partial(
        self, ref: TableRef, keys: Sequence[FieldSchema], values: Sequence[str]
    ) -> tuple[sa.ColumnElement[bool] | None, _KeyValueJoins]:
        if not keys:
            raise InvalidObject(f"table {ref.qualified_name} is not partitioned")
        if len(values) > len(keys):
            raise InvalidObject(
                f"table {ref.qualified_name} has {len(keys)} partition key(s), got {len(values)} values {list(values)!r}"
            )
        joins = _KeyValueJoins()
        conditions = [joins.value(i) == v for i, v in enumerate(values) if v not in ("", None)]
        return (sa.and_(*conditions) if conditions else None), joins

    def list_by_partial_values(
        self,
        db_name: str,
        table_name: str,
        values: Sequence[str],
        *,
        max_parts: int = -1,
        catalog: str = DEFAULT_CATALOG,
    ) -> builtins.list[Partition]:
        """Partitions whose leading key values match `values` ('' matches any value; Hive's
        get_partitions_ps), ordered by name."""
        ref, keys = self._table(db_name, table_name, catalog)
        condition, joins = self._partial(ref, keys, values)
        return self._load(ref, self._rows(ref, condition, joins, max_parts))

    def list_names_by_partial_values(
        self,
        db_name: str,
        table_name: str,
        values: Sequence[str],
        *,
        max_parts: int = -1,
        catalog: str = DEFAULT_CATALOG,
    ) -> builtins.list[str]:
        """Names of the partitions list_by_partial_values returns."""
        ref, keys = self._table(db_name, table_name, catalog)
        condition, joins = self._partial(ref, keys, values)
        return [
            r.PART_NAME
            for r in self._rows(ref, condition, joins, max_parts, columns=[PARTITIONS.c.PART_NAME])
        ]

    def _filter(
        self, ref: TableRef, keys: Sequence[FieldSchema], text: str
    ) -> tuple[sa.ColumnElement[bool], _KeyValueJoins]:
        if not keys:
            raise InvalidInput(
                f"table {ref.qualified_name} is not partitioned; it has no partitions to filter"
            )
        joins = _KeyValueJoins()
        dialect = self._conn.dialect.name
        if dialect == "sqlite":
            # The sqlite dialect's driver is pysqlite (engine.create_engine), whose connections are sqlite3's.
            register_sqlite_functions(cast(sqlite3.Connection, self._conn.connection.driver_connection))

        def key_values(idx: int) -> list[str]:
            # LIKE on PostgreSQL: the distinct values of one key, matched against the regex in Python.
            return list(
                self._conn.execute(
                    sa.select(PARTITION_KEY_VALS.c.PART_KEY_VAL)
                    .join(PARTITIONS, PARTITIONS.c.PART_ID == PARTITION_KEY_VALS.c.PART_ID)
                    .where(PARTITIONS.c.TBL_ID == ref.tbl_id, PARTITION_KEY_VALS.c.INTEGER_IDX == idx)
                    .distinct()
                ).scalars()
            )

        return compile_filter(text, keys, joins.value, dialect, key_values), joins

    def list_by_filter(
        self,
        db_name: str,
        table_name: str,
        filter_text: str,
        *,
        max_parts: int = -1,
        catalog: str = DEFAULT_CATALOG,
    ) -> builtins.list[Partition]:
        """Partitions accepted by a Hive partition filter (`ds = '2024-01-01' and hr > 5`), ordered by name;
        InvalidInput for a bad filter."""
        ref, keys = self._filtered_table(db_name, table_name, catalog)
        condition, joins = self._filter(ref, keys, filter_text)
        return self._load(ref, self._rows(ref, condition, joins, max_parts))

    def list_names_by_filter(
        self,
        db_name: str,
        table_name: str,
        filter_text: str,
        *,
        max_parts: int = -1,
        catalog: str = DEFAULT_CATALOG,
    ) -> builtins.list[str]:
        """Names of the partitions list_by_filter returns."""
        ref, keys = self._filtered_table(db_name, table_name, catalog)
        condition, joins = self._filter(ref, keys, filter_text)
        return [
            r.PART_NAME
            for r in self._rows(ref, condition, joins, max_parts, columns=[PARTITIONS.c.PART_NAME])
        ]

    def count_by_filter(
        self, db_name: str, table_name: str, filter_text: str, *, catalog: str = DEFAULT_CATALOG
    ) -> int:
        """How many partitions a Hive partition filter accepts."""
        ref, keys = self._filtered_table(db_name, table_name, catalog)
        condition, joins = self._filter(ref, keys, filter_text)
        query = joins.apply(sa.select(sa.func.count()).where(PARTITIONS.c.TBL_ID == ref.tbl_id, condition))
        return self._conn.execute(query).scalar_one()

    # ------------------------------------------------------------------ alter

    def alter(
        self, db_name: str, table_name: str, partition: Partition, *, catalog: str = DEFAULT_CATALOG
    ) -> None:
        """Replace the definition of the partition with the same values (storage, parameters, times)."""
        self.alter_many(db_name, table_name, [partition], catalog=catalog)

    def alter_many(
        self,
        db_name: str,
        table_name: str,
        partitions: Sequence[Partition],
        *,
        catalog: str = DEFAULT_CATALOG,
    ) -> None:
        """Replace the definitions of many partitions (found by their values) in a few statements.
        InvalidOperation if one does not exist (Hive's "alter is not possible"). Statistics of columns a
        partition drops or retypes are deleted and leave its COLUMN_STATS_ACCURATE."""
        if not partitions:
            return
        ref, rows = self._rows_to_alter(db_name, table_name, partitions, catalog)
        self._rewrite(ref, rows, partitions)

    def _rows_to_alter(
        self, db_name: str, table_name: str, partitions: Sequence[Partition], catalog: str
    ) -> tuple[TableRef, Sequence[sa.Row[Any]]]:
        """The table and the stored rows (locked, in request order) of partitions about to be altered: InvalidObject
        if one appears twice, InvalidOperation (Hive's "alter is not possible") if one does not exist."""
        ref, keys = self._table(db_name, table_name, catalog)
        names = [self._name(ref, keys, p.values) for p in partitions]
        if len(set(names)) != len(names):
            raise InvalidObject(f"the same partition of {ref.qualified_name} appears twice in the request")
        rows = self._rows_by_names(ref, names, lock=True)
        missing = [n for n in names if n not in rows]
        if missing:
            raise InvalidOperation(
                f"partition(s) of {ref.qualified_name} do not exist, alter is not possible: {', '.join(missing[:5])}"
            )
        return ref, [rows[n] for n in names]

    def _rewrite(self, ref: TableRef, rows: Sequence[sa.Row[Any]], partitions: Sequence[Partition]) -> None:
        """Overwrite stored partitions (rows) with new definitions, keeping their ids."""
        refs = storage_refs(self._conn, [r.SD_ID for r in rows])
        previous_cds = [refs[r.SD_ID].cd_id if r.SD_ID in refs else None for r in rows]
        old_columns = load_columns(self._conn, [cd for cd in previous_cds if cd is not None])
        cd_ids, new_columns = self._column_descriptors(ref, partitions, previous_cds)
        lost: dict[int, list[str]] = {}
        params: dict[int, dict[str, str]] = {}
        for row, p, prev_cd, cols in zip(rows, partitions, previous_cds, new_columns, strict=True):
            dropped = dropped_or_retyped(old_columns.get(prev_cd, []), cols) if prev_cd is not None else []
            if dropped:
                lost[row.PART_ID] = dropped
            params[row.PART_ID] = (
                params_with_columns_removed(p.parameters, dropped) if dropped else dict(p.parameters)
            )
        update = (
            sa.update(PARTITIONS)
            .where(PARTITIONS.c.PART_ID == sa.bindparam("p_id"))
            .values(
                CREATE_TIME=sa.bindparam("p_create"),
                LAST_ACCESS_TIME=sa.bindparam("p_access"),
                WRITE_ID=sa.bindparam("p_write"),
            )
        )
        self._conn.execute(
            update,
            [
                {
                    "p_id": r.PART_ID,
                    "p_create": p.create_time or r.CREATE_TIME,
                    "p_access": p.last_access_time,
                    "p_write": p.write_id,
                }
                for r, p in zip(rows, partitions, strict=True)
            ],
        )
        with_sd = [(r, p, cd) for r, p, cd in zip(rows, partitions, cd_ids, strict=True) if r.SD_ID in refs]
        replace_storage(
            self._conn,
            [StorageRef(refs[r.SD_ID].sd_id, refs[r.SD_ID].serde_id, cd) for r, _, cd in with_sd],
            [p.sd for _, p, _ in with_sd],
            [cd for _, _, cd in with_sd],
        )
        PARTITION_PARAMETERS.replace(self._conn, params)
        forget_partition_columns(self._conn, lost)
        delete_unused_column_descriptors(
            self._conn,
            [prev for prev, cd in zip(previous_cds, cd_ids, strict=True) if prev is not None and prev != cd],
        )

    def replace_parameters(
        self,
        db_name: str,
        table_name: str,
        partitions: Sequence[Partition],
        *,
        catalog: str = DEFAULT_CATALOG,
    ) -> None:
        """Replace the parameters of many partitions (found by their values) with theirs, leaving the rest of
        their stored definitions as they are: what :meth:`alter_many` stores for partitions that differ from
        their stored definitions only in their parameters, in two statements instead of a rewrite of each
        definition. InvalidOperation if one does not exist, as alter_many."""
        if not partitions:
            return
        ref, rows = self._rows_to_alter(db_name, table_name, partitions, catalog)
        PARTITION_PARAMETERS.replace(
            self._conn, {row.PART_ID: dict(p.parameters) for row, p in zip(rows, partitions, strict=True)}
        )

    def rename(
        self,
        db_name: str,
        table_name: str,
        old_values: Sequence[str],
        new_partition: Partition,
        *,
        catalog: str = DEFAULT_CATALOG,
    ) -> None:
        """Give a partition new values (and definition); its statistics stay with it. NoSuchObject if it
        does not exist, AlreadyExists if the new values are taken."""
        ref, keys = self._table(db_name, table_name, catalog)
        old_name = self._name(ref, keys, old_values)
        new_name = self._name(ref, keys, new_partition.values)
        row = self._rows_by_names(ref, [old_name], lock=True).get(old_name)
        if row is None:
            raise NoSuchObject(f"partition {old_name} of {ref.qualified_name} does not exist")
        if new_name != old_name:
            if self._rows_by_names(ref, [new_name]):
                raise AlreadyExists(
                    f"cannot rename {old_name} of {ref.qualified_name} to {new_name}: it exists"
                )
            self._conn.execute(
                sa.update(PARTITIONS).where(PARTITIONS.c.PART_ID == row.PART_ID).values(PART_NAME=new_name)
            )
            self._conn.execute(
                sa.delete(PARTITION_KEY_VALS).where(PARTITION_KEY_VALS.c.PART_ID == row.PART_ID)
            )
            insert_rows(
                self._conn,
                PARTITION_KEY_VALS,
                [
                    {"PART_ID": row.PART_ID, "INTEGER_IDX": i, "PART_KEY_VAL": v}
                    for i, v in enumerate(new_partition.values)
                ],
            )
        self._rewrite(ref, [row], [new_partition])

    def relocate(
        self,
        db_name: str,
        table_name: str,
        old_prefix: str,
        new_prefix: str,
        *,
        catalog: str = DEFAULT_CATALOG,
    ) -> int:
        """Rewrite the start of every partition location that begins with old_prefix (after the table's
        directory moved, e.g. on rename); returns how many locations changed."""
        ref = table_ref(self._conn, catalog, db_name, table_name)
        part_sds = sa.select(PARTITIONS.c.SD_ID).where(PARTITIONS.c.TBL_ID == ref.tbl_id)
        result = self._conn.execute(
            sa.update(SDS)
            .where(
                SDS.c.SD_ID.in_(part_sds), sa.func.substr(SDS.c.LOCATION, 1, len(old_prefix)) == old_prefix
            )
            .values(LOCATION=sa.literal(new_prefix) + sa.func.substr(SDS.c.LOCATION, len(old_prefix) + 1))
        )
        return result.rowcount

    def update_parameters(
        self,
        db_name: str,
        table_name: str,
        changes_by_partition: Mapping[str, Mapping[str, str | None]],
        *,
        catalog: str = DEFAULT_CATALOG,
    ) -> None:
        """Set (value) or remove (None) some parameters of many partitions (by name) in a few statements.
        NoSuchObject naming the partitions that do not exist; nothing is changed then."""
        ref = table_ref(self._conn, catalog, db_name, table_name)
        rows = self._rows_by_names(ref, list(changes_by_partition), lock=True)
        missing = [n for n in changes_by_partition if n not in rows]
        if missing:
            raise NoSuchObject(f"partition(s) of {ref.qualified_name} do not exist: {', '.join(missing[:5])}")
        PARTITION_PARAMETERS.update(
            self._conn, {rows[name].PART_ID: changes for name, changes in changes_by_partition.items()}
        )

    # ------------------------------------------------------------------ drop

    def drop(
        self, db_name: str, table_name: str, values: Sequence[str], *, catalog: str = DEFAULT_CATALOG
    ) -> Partition:
        """Drop the partition with these values and its statistics; returns what it was."""
        ref, keys = self._table(db_name, table_name, catalog)
        return self._drop(ref, [self._name(ref, keys, values)])[0]

    def drop_by_name(
        self, db_name: str, table_name: str, name: str, *, catalog: str = DEFAULT_CATALOG
    ) -> Partition:
        """Drop the partition called `name` and its statistics; returns what it was."""
        ref, keys = self._table(db_name, table_name, catalog)
        return self._drop(ref, [self._canonical_name(ref, keys, name)])[0]

    def drop_by_names(
        self, db_name: str, table_name: str, names: Sequence[str], *, catalog: str = DEFAULT_CATALOG
    ) -> builtins.list[Partition]:
        """Drop many partitions by name in a few statements; NoSuchObject (dropping none) if one is missing."""
        ref, keys = self._table(db_name, table_name, catalog)
        return self._drop(ref, [self._canonical_name(ref, keys, n) for n in names])

    def _drop(self, ref: TableRef, names: Sequence[str]) -> builtins.list[Partition]:
        rows = self._rows_by_names(ref, names, lock=True)
        missing = [n for n in dict.fromkeys(names) if n not in rows]
        if missing:
            raise NoSuchObject(f"partition(s) of {ref.qualified_name} do not exist: {', '.join(missing[:5])}")
        ordered = [rows[n] for n in dict.fromkeys(names)]
        dropped = self._load(ref, ordered)
        part_ids = [r.PART_ID for r in ordered]
        for batch in chunks(part_ids):
            # Statistics, key values and parameters go by ON DELETE CASCADE.
            self._conn.execute(sa.delete(PARTITIONS).where(PARTITIONS.c.PART_ID.in_(batch)))
        delete_storage(self._conn, [r.SD_ID for r in ordered if r.SD_ID is not None])
        return dropped
