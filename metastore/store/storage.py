"""Storage descriptors (SDS + SERDES + SD/SERDE params + bucketing/sort columns) and column descriptors
(CDS + COLUMNS_V2), written and read set-based for any number of tables or partitions at once.

Partitions share their table's column descriptor while their columns are the table's (as Hive does), so a
table with thousands of partitions stores its column list once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from metastore.catalog import FieldSchema, Order, SerDeInfo, SkewedInfo, StorageDescriptor
from metastore.listing_rows import skewed_text
from metastore.store.child_rows import (
    ChildKind,
    ChildRow,
    ids_condition,
    parameters_of,
    read_child_rows,
)
from metastore.store.chunking import bind_list, chunks, id_conditions
from metastore.store.ids import allocate_ids
from metastore.store.parameters import SD_PARAMETERS, SERDE_PARAMETERS
from metastore.store.schema import (
    BUCKETING_COLS,
    CDS,
    COLUMNS_V2,
    PARTITIONS,
    SDS,
    SERDES,
    SORT_COLS,
    TBLS,
)
from metastore.store.upsert import insert_rows

# ---------------------------------------------------------------- column descriptors


def insert_column_descriptor(conn: sa.Connection, cols: Sequence[FieldSchema]) -> int:
    """A new column descriptor holding `cols` (names already normalised); returns its CD_ID."""
    cd_id = conn.execute(sa.insert(CDS).returning(CDS.c.CD_ID)).scalar_one()
    insert_rows(
        conn,
        COLUMNS_V2,
        [
            {
                "CD_ID": cd_id,
                "COLUMN_NAME": c.name,
                "TYPE_NAME": c.type,
                "COMMENT": c.comment,
                "INTEGER_IDX": i,
            }
            for i, c in enumerate(cols)
        ],
    )
    return cd_id


def load_columns(conn: sa.Connection, cd_ids: Sequence[int]) -> dict[int, list[FieldSchema]]:
    """{CD_ID: columns in order}."""
    out: dict[int, list[FieldSchema]] = {cd: [] for cd in cd_ids if cd is not None}
    for condition in id_conditions(conn, COLUMNS_V2.c.CD_ID, list(out)):
        rows = conn.execute(
            sa.select(
                COLUMNS_V2.c.CD_ID, COLUMNS_V2.c.COLUMN_NAME, COLUMNS_V2.c.TYPE_NAME, COLUMNS_V2.c.COMMENT
            )
            .where(condition)
            .order_by(COLUMNS_V2.c.CD_ID, COLUMNS_V2.c.INTEGER_IDX)
        )
        for r in rows:
            out[r.CD_ID].append(FieldSchema(name=r.COLUMN_NAME, type=r.TYPE_NAME, comment=r.COMMENT))
    return out


def delete_unused_column_descriptors(conn: sa.Connection, cd_ids: Sequence[int]) -> None:
    """Remove those of `cd_ids` no storage descriptor refers to any more."""
    candidates = [cd for cd in dict.fromkeys(cd_ids) if cd is not None]
    for batch in chunks(candidates):
        used = {r[0] for r in conn.execute(sa.select(SDS.c.CD_ID).where(SDS.c.CD_ID.in_(batch)).distinct())}
        unused = [cd for cd in batch if cd not in used]
        if unused:
            conn.execute(sa.delete(CDS).where(CDS.c.CD_ID.in_(unused)))


def same_columns(a: Sequence[FieldSchema], b: Sequence[FieldSchema]) -> bool:
    """Whether two column lists are identical (names, types, comments, order)."""
    return [(c.name, c.type, c.comment) for c in a] == [(c.name, c.type, c.comment) for c in b]


def dropped_or_retyped(old: Sequence[FieldSchema], new: Sequence[FieldSchema]) -> list[str]:
    """Old columns with no new column of the same name and type (compared case-insensitively, as Hive's
    alter handler does): their statistics no longer apply."""
    new_types = {c.name.lower(): c.type.strip().lower() for c in new}
    return [c.name for c in old if new_types.get(c.name.lower()) != c.type.strip().lower()]


# ---------------------------------------------------------------- storage descriptors


@dataclass(frozen=True)
class StorageRef:
    """Where one stored storage descriptor lives."""

    sd_id: int
    serde_id: int | None
    cd_id: int | None




def _skewed_from_text(text: str | None) -> SkewedInfo | None:
    if text is None:
        return None
    doc = json.loads(text)
    return SkewedInfo(
        skewed_col_names=list(doc.get("names", [])),
        skewed_col_values=[list(v) for v in doc.get("values", [])],
        skewed_col_value_location_maps={tuple(k): v for k, v in doc.get("locations", [])},
    )


def _sd_row(sd: StorageDescriptor, cd_id: int | None, serde_id: int) -> dict[str, Any]:
    return {
        "CD_ID": cd_id,
        "SERDE_ID": serde_id,
        "INPUT_FORMAT": sd.input_format,
        "OUTPUT_FORMAT": sd.output_format,
        "LOCATION": sd.location,
        "IS_COMPRESSED": bool(sd.compressed),
        "IS_STOREDASSUBDIRECTORIES": bool(sd.stored_as_sub_directories),
        "NUM_BUCKETS": sd.num_buckets,
        "SKEWED_INFO": skewed_text(sd.skewed_info),
    }


def _insert_with_new_ids(
    conn: sa.Connection, table: sa.Table, id_col: str, rows: list[dict[str, Any]]
) -> list[int]:
    """Insert rows under freshly allocated ids (in a few statements) and return the ids in row order."""
    ids = allocate_ids(conn, table, id_col, len(rows))
    insert_rows(conn, table, [{id_col: i, **row} for i, row in zip(ids, rows, strict=True)])
    return ids


def _insert_sd_children(conn: sa.Connection, sd_ids: Sequence[int], sds: Sequence[StorageDescriptor]) -> None:
    SD_PARAMETERS.insert(conn, {sd_id: sd.parameters for sd_id, sd in zip(sd_ids, sds, strict=True)})
    insert_rows(
        conn,
        BUCKETING_COLS,
        [
            {"SD_ID": sd_id, "INTEGER_IDX": i, "BUCKET_COL_NAME": col.lower()}
            for sd_id, sd in zip(sd_ids, sds, strict=True)
            for i, col in enumerate(sd.bucket_cols)
        ],
    )
    insert_rows(
        conn,
        SORT_COLS,
        [
            {"SD_ID": sd_id, "INTEGER_IDX": i, "COLUMN_NAME": o.col.lower(), "ORDER": o.order}
            for sd_id, sd in zip(sd_ids, sds, strict=True)
            for i, o in enumerate(sd.sort_cols)
        ],
    )


def insert_storage(
    conn: sa.Connection, sds: Sequence[StorageDescriptor], cd_ids: Sequence[int | None]
) -> list[int]:
    """Store storage descriptors (each with its own SerDe row, pointing at the given column descriptor);
    returns their SD_IDs in order. A fixed number of statements whatever the count."""
    serde_ids = _insert_with_new_ids(
        conn,
        SERDES,
        "SERDE_ID",
        [{"NAME": sd.serde_info.name, "SLIB": sd.serde_info.serialization_lib} for sd in sds],
    )
    SERDE_PARAMETERS.insert(
        conn, {sid: sd.serde_info.parameters for sid, sd in zip(serde_ids, sds, strict=True)}
    )
    sd_ids = _insert_with_new_ids(
        conn,
        SDS,
        "SD_ID",
        [_sd_row(sd, cd, sid) for sd, cd, sid in zip(sds, cd_ids, serde_ids, strict=True)],
    )
    _insert_sd_children(conn, sd_ids, sds)
    return sd_ids


def replace_storage(
    conn: sa.Connection,
    refs: Sequence[StorageRef],
    sds: Sequence[StorageDescriptor],
    cd_ids: Sequence[int | None],
) -> None:
    """Overwrite stored descriptors in place (same SD_ID and SERDE_ID), with new column descriptors."""
    if not refs:
        return
    # Bound names must differ from column names in UPDATE ... SET, hence the p_ prefix.
    sd_rows = []
    serde_rows = []
    for ref, sd, cd in zip(refs, sds, cd_ids, strict=True):
        # ref.serde_id is never None here: insert_storage gives every descriptor it writes a SerDe row
        # (SDS.SERDE_ID is nullable only because Hive's schema has it so). Same below.
        row = {f"p_{k}": v for k, v in _sd_row(sd, cd, ref.serde_id).items()}  # type: ignore[arg-type]
        row["p_key"] = ref.sd_id
        sd_rows.append(row)
        serde_rows.append(
            {"p_key": ref.serde_id, "p_NAME": sd.serde_info.name, "p_SLIB": sd.serde_info.serialization_lib}
        )
    sd_columns = [k[2:] for k in sd_rows[0] if k != "p_key"]
    sd_update = (
        sa.update(SDS)
        .where(SDS.c.SD_ID == sa.bindparam("p_key"))
        .values({c: sa.bindparam(f"p_{c}") for c in sd_columns})
    )
    conn.execute(sd_update, sd_rows)
    serde_update = (
        sa.update(SERDES)
        .where(SERDES.c.SERDE_ID == sa.bindparam("p_key"))
        .values(NAME=sa.bindparam("p_NAME"), SLIB=sa.bindparam("p_SLIB"))
    )
    conn.execute(serde_update, serde_rows)
    sd_ids = [r.sd_id for r in refs]
    SERDE_PARAMETERS.replace(
        conn,
        {ref.serde_id: sd.serde_info.parameters for ref, sd in zip(refs, sds, strict=True)},  # type: ignore[misc]
    )
    SD_PARAMETERS.delete(conn, sd_ids)
    for batch in chunks(sd_ids):
        conn.execute(sa.delete(BUCKETING_COLS).where(BUCKETING_COLS.c.SD_ID.in_(batch)))
        conn.execute(sa.delete(SORT_COLS).where(SORT_COLS.c.SD_ID.in_(batch)))
    _insert_sd_children(conn, sd_ids, sds)


def storage_refs(conn: sa.Connection, sd_ids: Sequence[int]) -> dict[int, StorageRef]:
    """{SD_ID: its SerDe and column descriptor ids}."""
    out: dict[int, StorageRef] = {}
    for batch in chunks([s for s in dict.fromkeys(sd_ids) if s is not None]):
        for r in conn.execute(
            sa.select(SDS.c.SD_ID, SDS.c.SERDE_ID, SDS.c.CD_ID).where(SDS.c.SD_ID.in_(batch))
        ):
            out[r.SD_ID] = StorageRef(sd_id=r.SD_ID, serde_id=r.SERDE_ID, cd_id=r.CD_ID)
    return out


#: load_storage_with's statement of the descriptors' rows (with their SerDe's), built once per dialect.
_DESCRIPTORS: dict[bool, Any] = {}


def _descriptors_statement(postgresql: bool) -> Any:
    statement = _DESCRIPTORS.get(postgresql)
    if statement is None:
        statement = _DESCRIPTORS[postgresql] = (
            sa.select(SDS, SERDES.c.NAME.label("SERDE_NAME"), SERDES.c.SLIB)
            .outerjoin(SERDES, SERDES.c.SERDE_ID == SDS.c.SERDE_ID)
            .where(ids_condition(SDS.c.SD_ID, "ids", postgresql))
        )
    return statement


def load_storage(conn: sa.Connection, sd_ids: Sequence[int]) -> dict[int, StorageDescriptor]:
    """{SD_ID: descriptor}, two queries per thousand descriptors."""
    return load_storage_with(conn, sd_ids, ())[0]


def load_storage_with(
    conn: sa.Connection, sd_ids: Sequence[int], extra: Sequence[ChildKind]
) -> tuple[dict[int, StorageDescriptor], list[list[ChildRow]]]:
    """{SD_ID: descriptor} and the rows of ``extra`` kinds (the owners' own parameters, keys...), read together:
    the descriptors' rows, then every kind of child row (columns, SerDe and descriptor parameters, bucketing and
    sort columns, and ``extra``) in one statement (child_rows; a few per thousand ids on SQLite)."""
    ids = [s for s in dict.fromkeys(sd_ids) if s is not None]
    base: dict[int, sa.Row[Any]] = {}
    if ids:
        postgresql = conn.dialect.name == "postgresql"
        rows = conn.execute(_descriptors_statement(postgresql), {"ids": bind_list(ids, conn.dialect.name)}).all()
        base.update({r.SD_ID: r for r in rows})
    cd_ids = list({r.CD_ID: None for r in base.values() if r.CD_ID is not None})
    serde_ids = [r.SERDE_ID for r in base.values() if r.SERDE_ID is not None]
    sd_list = list(base)
    serde_table, sd_table = SERDE_PARAMETERS.table, SD_PARAMETERS.table
    found = read_child_rows(conn, [
        ChildKind(COLUMNS_V2.c.CD_ID, cd_ids, (COLUMNS_V2.c.COLUMN_NAME, COLUMNS_V2.c.TYPE_NAME, COLUMNS_V2.c.COMMENT),
                  position=COLUMNS_V2.c.INTEGER_IDX),
        ChildKind(SERDE_PARAMETERS.owner_column, serde_ids, (serde_table.c.PARAM_KEY, serde_table.c.PARAM_VALUE)),
        ChildKind(SD_PARAMETERS.owner_column, sd_list, (sd_table.c.PARAM_KEY, sd_table.c.PARAM_VALUE)),
        ChildKind(BUCKETING_COLS.c.SD_ID, sd_list, (BUCKETING_COLS.c.BUCKET_COL_NAME,),
                  position=BUCKETING_COLS.c.INTEGER_IDX),
        ChildKind(SORT_COLS.c.SD_ID, sd_list, (SORT_COLS.c.COLUMN_NAME,), number=SORT_COLS.c.ORDER,
                  position=SORT_COLS.c.INTEGER_IDX),
        *extra,
    ])
    column_rows, serde_rows, sd_rows, bucket_rows, sort_rows = found[:5]
    columns: dict[int, list[FieldSchema]] = {cd: [] for cd in cd_ids}
    for cd, name, type_name, comment, _ in column_rows:
        columns[cd].append(FieldSchema(name=name, type=type_name, comment=comment))
    serde_params = parameters_of(serde_rows, serde_ids)
    sd_params = parameters_of(sd_rows, sd_list)
    buckets: dict[int, list[str]] = {sd: [] for sd in base}
    for sd, name, *_ in bucket_rows:
        buckets[sd].append(name)
    sorts: dict[int, list[Order]] = {sd: [] for sd in base}
    for sd, name, _, _, order in sort_rows:
        sorts[sd].append(Order(col=name, order=order))
    out: dict[int, StorageDescriptor] = {}
    for sd_id, r in base.items():
        out[sd_id] = StorageDescriptor(
            cols=list(columns.get(r.CD_ID, [])),
            # No column descriptor: the partition was added without columns (see _column_descriptors).
            cols_unset=r.CD_ID is None,
            location=r.LOCATION,
            input_format=r.INPUT_FORMAT,
            output_format=r.OUTPUT_FORMAT,
            compressed=bool(r.IS_COMPRESSED),
            num_buckets=r.NUM_BUCKETS,
            serde_info=SerDeInfo(
                name=r.SERDE_NAME,
                serialization_lib=r.SLIB,
                parameters=serde_params.get(r.SERDE_ID, {}) if r.SERDE_ID is not None else {},
            ),
            bucket_cols=buckets[sd_id],
            sort_cols=sorts[sd_id],
            parameters=sd_params[sd_id],
            skewed_info=_skewed_from_text(r.SKEWED_INFO),
            stored_as_sub_directories=bool(r.IS_STOREDASSUBDIRECTORIES),
        )
    return out, found[5:]


def delete_storage(conn: sa.Connection, sd_ids: Sequence[int]) -> None:
    """Remove storage descriptors (no table or partition may refer to them any more), their SerDes and the
    column descriptors that become unused."""
    refs = storage_refs(conn, sd_ids)
    if not refs:
        return
    for batch in chunks(list(refs)):
        conn.execute(sa.delete(SDS).where(SDS.c.SD_ID.in_(batch)))
    serde_ids = [r.serde_id for r in refs.values() if r.serde_id is not None]
    for batch in chunks(serde_ids):
        conn.execute(sa.delete(SERDES).where(SERDES.c.SERDE_ID.in_(batch)))
    delete_unused_column_descriptors(conn, [r.cd_id for r in refs.values() if r.cd_id is not None])


def partition_storage_ids(conn: sa.Connection, tbl_ids: Sequence[int]) -> list[int]:
    """SD_IDs of every partition of the tables."""
    out: list[int] = []
    for batch in chunks(list(tbl_ids)):
        out.extend(
            r[0]
            for r in conn.execute(
                sa.select(PARTITIONS.c.SD_ID).where(
                    PARTITIONS.c.TBL_ID.in_(batch), PARTITIONS.c.SD_ID.is_not(None)
                )
            )
        )
    return out


def table_storage_ids(conn: sa.Connection, tbl_ids: Sequence[int]) -> list[int]:
    """SD_IDs of the tables themselves."""
    out: list[int] = []
    for batch in chunks(list(tbl_ids)):
        out.extend(
            r[0]
            for r in conn.execute(
                sa.select(TBLS.c.SD_ID).where(TBLS.c.TBL_ID.in_(batch), TBLS.c.SD_ID.is_not(None))
            )
        )
    return out
