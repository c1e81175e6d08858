"""Key/value parameter tables (DATABASE_PARAMS, TABLE_PARAMS, PARTITION_PARAMS, SD_PARAMS, SERDE_PARAMS)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from metastore.errors import InvalidObject
from metastore.store import schema
from metastore.store.chunking import chunks, id_conditions
from metastore.store.upsert import insert_rows, upsert


@dataclass(frozen=True)
class ParameterTable:
    """One parameter table and the column naming the object its rows belong to."""

    table: sa.Table
    owner: str

    @property
    def owner_column(self) -> sa.Column[Any]:
        return self.table.c[self.owner]

    def load(self, conn: sa.Connection, owner_ids: Sequence[int]) -> dict[int, dict[str, str]]:
        """{owner id: parameters} for the owners (owners without parameters map to {})."""
        out: dict[int, dict[str, str]] = {oid: {} for oid in owner_ids}
        t = self.table
        for condition in id_conditions(conn, self.owner_column, list(dict.fromkeys(owner_ids))):
            rows = conn.execute(sa.select(self.owner_column, t.c.PARAM_KEY, t.c.PARAM_VALUE).where(condition))
            for owner_id, key, value in rows:
                out[owner_id][key] = value
        # Ordered by key (the database returns them in any order): replies are the same bytes every time, and
        # those of the partition listings' row path (partition_listing), which reads them so ordered.
        return {oid: dict(sorted(params.items())) if len(params) > 1 else params for oid, params in out.items()}

    def values_of(self, conn: sa.Connection, owner_ids: Sequence[int], key: str) -> dict[int, str]:
        """{owner id: value of `key`} for the owners that have it."""
        t = self.table
        out: dict[int, str] = {}
        for batch in chunks(list(dict.fromkeys(owner_ids))):
            rows = conn.execute(
                sa.select(self.owner_column, t.c.PARAM_VALUE).where(
                    self.owner_column.in_(batch), t.c.PARAM_KEY == key
                )
            )
            out.update({owner_id: value for owner_id, value in rows})
        return out

    def insert(self, conn: sa.Connection, params_by_owner: Mapping[int, Mapping[str, str]]) -> None:
        """Add the parameters of owners that have none yet."""
        rows = [
            {self.owner: owner_id, "PARAM_KEY": _checked_key(k), "PARAM_VALUE": v}
            for owner_id, params in params_by_owner.items()
            for k, v in params.items()
        ]
        insert_rows(conn, self.table, rows)

    def replace(self, conn: sa.Connection, params_by_owner: Mapping[int, Mapping[str, str]]) -> None:
        """Make each owner's parameters exactly the given ones."""
        self.delete(conn, list(params_by_owner))
        self.insert(conn, params_by_owner)

    def delete(self, conn: sa.Connection, owner_ids: Iterable[int]) -> None:
        """Remove every parameter of the owners."""
        stmt = _delete_statement(self.table, self.owner)
        for batch in chunks(list(owner_ids)):
            conn.execute(stmt, {"owners": list(batch)})

    def set_values(self, conn: sa.Connection, key: str, value_by_owner: Mapping[int, str]) -> None:
        """Set parameter `key` of each owner (insert or overwrite), in a few statements."""
        rows = [
            {self.owner: owner_id, "PARAM_KEY": _checked_key(key), "PARAM_VALUE": value}
            for owner_id, value in value_by_owner.items()
        ]
        upsert(conn, self.table, rows, key=(self.owner, "PARAM_KEY"))

    def update(self, conn: sa.Connection, changes_by_owner: Mapping[int, Mapping[str, str | None]]) -> None:
        """Set (value) or remove (None) individual parameters of each owner, leaving the others alone."""
        rows = [
            {self.owner: owner_id, "PARAM_KEY": _checked_key(k), "PARAM_VALUE": v}
            for owner_id, changes in changes_by_owner.items()
            for k, v in changes.items()
            if v is not None
        ]
        upsert(conn, self.table, rows, key=(self.owner, "PARAM_KEY"))
        removals = [
            {"p_owner": owner_id, "p_key": k}
            for owner_id, changes in changes_by_owner.items()
            for k, v in changes.items()
            if v is None
        ]
        if removals:
            conn.execute(
                sa.delete(self.table).where(
                    self.owner_column == sa.bindparam("p_owner"),
                    self.table.c.PARAM_KEY == sa.bindparam("p_key"),
                ),
                removals,
            )


@functools.cache
def _delete_statement(table: sa.Table, owner: str) -> sa.Delete:
    """ParameterTable.delete's statement (the owners an expanding list), built once per table: an ANALYZE's
    write replaces partitions' parameters."""
    return sa.delete(table).where(table.c[owner].in_(sa.bindparam("owners", expanding=True)))


def _checked_key(key: str) -> str:
    if not isinstance(key, str) or not key:
        raise InvalidObject(f"parameter key {key!r} must be a non-empty string")
    if len(key) > schema.PARAM_KEY_LEN:
        raise InvalidObject(f"parameter key {key[:40]!r}... is longer than {schema.PARAM_KEY_LEN} characters")
    return key


DATABASE_PARAMETERS = ParameterTable(schema.DATABASE_PARAMS, "DB_ID")
TABLE_PARAMETERS = ParameterTable(schema.TABLE_PARAMS, "TBL_ID")
PARTITION_PARAMETERS = ParameterTable(schema.PARTITION_PARAMS, "PART_ID")
SD_PARAMETERS = ParameterTable(schema.SD_PARAMS, "SD_ID")
SERDE_PARAMETERS = ParameterTable(schema.SERDE_PARAMS, "SERDE_ID")
