"""Partition listings read as rows for metastore.wire.partition_bytes (no Partition objects per partition).

On PostgreSQL a page of partitions is one statement: the page of PARTITIONS rows joined with its storage
descriptor and SerDe, and each child table (key values, parameters, SerDe and storage descriptor parameters,
bucket and sort columns) aggregated per partition into arrays through a LATERAL subquery. Parameters come
ordered by key (bytewise, COLLATE "C": the order Python's sorted gives, which the object path uses). Other
databases read the page as objects (PartitionRepository._load) and turn them into the same rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.selectable import LateralFromClause

from metastore.catalog import FieldSchema, Partition
from metastore.listing_rows import partition_row
from metastore.store.refs import TableRef
from metastore.store.schema import (
    BUCKETING_COLS,
    PARTITION_KEY_VALS,
    PARTITION_PARAMS,
    SD_PARAMS,
    SDS,
    SERDE_PARAMS,
    SERDES,
    SORT_COLS,
)


def _agg(column: sa.ColumnElement[Any], order: sa.ColumnElement[Any], label: str) -> sa.Label[Any]:
    # imported here: only PostgreSQL needs its dialect (~18 ms of start-up)
    from sqlalchemy.dialects.postgresql import aggregate_order_by

    return sa.func.array_agg(aggregate_order_by(column, order)).label(label)


def _params(table: sa.Table, owner: sa.ColumnElement[Any], name: str) -> LateralFromClause:
    key = table.c.PARAM_KEY.collate("C")
    return (
        sa.select(_agg(table.c.PARAM_KEY, key, "param_keys"), _agg(table.c.PARAM_VALUE, key, "param_values"))
        .where(table.c[table.primary_key.columns.keys()[0]] == owner)
        .lateral(name)
    )


def page_statement(page: sa.Select[Any]) -> sa.Select[Any]:
    """The rows (partition_bytes.ROW_FIELDS, PART_NAME first) of the partitions `page` selects (a select of
    PARTITIONS' PART_ID, PART_NAME, SD_ID, CREATE_TIME, LAST_ACCESS_TIME and WRITE_ID, ordered by name), in
    the same order. PostgreSQL only."""
    p = page.subquery("p")
    kv = (
        sa.select(_agg(PARTITION_KEY_VALS.c.PART_KEY_VAL, PARTITION_KEY_VALS.c.INTEGER_IDX, "vals"))
        .where(PARTITION_KEY_VALS.c.PART_ID == p.c.PART_ID)
        .lateral("kv")
    )
    pp = _params(PARTITION_PARAMS, p.c.PART_ID, "pp")
    sp = _params(SERDE_PARAMS, SDS.c.SERDE_ID, "sp")
    dp = _params(SD_PARAMS, SDS.c.SD_ID, "dp")
    bc = (
        sa.select(_agg(BUCKETING_COLS.c.BUCKET_COL_NAME, BUCKETING_COLS.c.INTEGER_IDX, "cols"))
        .where(BUCKETING_COLS.c.SD_ID == SDS.c.SD_ID)
        .lateral("bc")
    )
    sc = (
        sa.select(
            _agg(SORT_COLS.c.COLUMN_NAME, SORT_COLS.c.INTEGER_IDX, "cols"),
            _agg(SORT_COLS.c.ORDER, SORT_COLS.c.INTEGER_IDX, "orders"),
        )
        .where(SORT_COLS.c.SD_ID == SDS.c.SD_ID)
        .lateral("sc")
    )
    source = (
        p.outerjoin(SDS, SDS.c.SD_ID == p.c.SD_ID)
        .outerjoin(SERDES, SERDES.c.SERDE_ID == SDS.c.SERDE_ID)
        .outerjoin(kv, sa.true())
        .outerjoin(pp, sa.true())
        .outerjoin(sp, sa.true())
        .outerjoin(dp, sa.true())
        .outerjoin(bc, sa.true())
        .outerjoin(sc, sa.true())
    )
    return (
        sa.select(
            p.c.PART_NAME, p.c.CREATE_TIME, p.c.LAST_ACCESS_TIME, p.c.WRITE_ID, kv.c.vals, pp.c.param_keys, pp.c.param_values,
            SDS.c.SD_ID.is_not(None), SDS.c.CD_ID, SDS.c.LOCATION, SDS.c.INPUT_FORMAT, SDS.c.OUTPUT_FORMAT,
            SDS.c.IS_COMPRESSED, SDS.c.NUM_BUCKETS, SERDES.c.NAME, SERDES.c.SLIB, sp.c.param_keys, sp.c.param_values,
            bc.c.cols, sc.c.cols, sc.c.orders, dp.c.param_keys, dp.c.param_values, SDS.c.SKEWED_INFO,
            SDS.c.IS_STOREDASSUBDIRECTORIES,
        )
        .select_from(source)
        .order_by(p.c.PART_NAME)
    )


def new_column_descriptors(rows: Sequence[Sequence[Any]], seen: set[Any]) -> list[int]:
    """The column descriptor ids of `rows` not in `seen` (added to it)."""
    new = []
    for row in rows:
        cd = row[8]
        if cd is not None and cd not in seen:
            seen.add(cd)
            new.append(cd)
    return new


Columns = Sequence[tuple[str, str, str | None]]


def filter_request(filter_text: str) -> tuple[Any, ...]:
    """The request part of a listing's key (listing_key) for a listing by filter."""
    return ("filter", filter_text)


ALL_REQUEST: tuple[Any, ...] = ("all",)  # ... for a listing of every partition


def ps_request(values: Sequence[str]) -> tuple[Any, ...]:
    """... for a listing by partial partition values."""
    return ("ps", tuple(values))


def listing_key(request: tuple[Any, ...], max_parts: int, keys: Sequence[tuple[str, str]]) -> tuple[Any, ...]:
    """What besides the table's partitions decides a listing's reply: the request (filter_request, ALL_REQUEST,
    ps_request), its limit and the table's partition keys as (name, type). Listing.key, and the cache's
    check before a listing is opened (CatalogService.cached_partition_listing), are this."""
    return (*request, max_parts, tuple(keys))


@dataclass
class Listing:
    """A partition listing checked and ready to read (inside the snapshot it was made in): its table, what
    besides the table's partitions decides its reply (the request and the table's partition keys), and
    `read`, which returns (how many partitions, the RowPages in order)."""

    ref: TableRef
    key: tuple[Any, ...]
    read: Callable[[], tuple[int, Iterator[RowPage]]]


@dataclass
class RowPage:
    """A page of a partition listing as rows (partition_bytes.ROW_FIELDS) of one table, with the columns of
    the column descriptors (cols_key) its rows use first in the listing."""

    db_name: str
    table_name: str
    catalog: str
    rows: Sequence[Sequence[Any]]
    columns: dict[Any, Columns] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rows)


def columns_of(cols: Mapping[int, Sequence[FieldSchema]]) -> dict[Any, Columns]:
    """{CD_ID: columns as (name, type, comment)} from storage.load_columns."""
    return {cd: [(c.name, c.type, c.comment) for c in cs] for cd, cs in cols.items()}


def object_page(db_name: str, table_name: str, catalog: str, parts: Sequence[Partition]) -> RowPage:
    """Partitions read as objects as a RowPage (each column list its own cols_key)."""
    page = RowPage(db_name, table_name, catalog, [])
    rows = []
    for p in parts:
        row, cols = partition_row(p)
        if cols is not None:
            page.columns[cols] = cols
        rows.append(row)
    page.rows = rows
    return page






