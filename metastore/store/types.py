"""Hive's legacy user-defined types (TYPES, TYPE_FIELDS; TYPE_FIELDS.TYPE_NAME holds the type's TYPES_ID)."""

from __future__ import annotations

import sqlalchemy as sa

from metastore.catalog import FieldSchema
from metastore.store.schema import TYPE_FIELDS, TYPES
from metastore.store.upsert import insert_ignoring_duplicates, insert_rows
from metastore.user_types import UserType


class TypeRepository:
    """Create, read and drop types within one unit of work. Type names are kept as given (Hive does not
    lower-case them: `int` and `Int` are two types)."""

    def __init__(self, conn: sa.Connection) -> None:
        self._conn = conn

    def create(self, user_type: UserType) -> bool:
        """Insert the type and its fields; False, writing nothing, when a type of that name exists."""
        inserted = insert_ignoring_duplicates(
            self._conn, TYPES, {"TYPE_NAME": user_type.name, "TYPE1": user_type.type1, "TYPE2": user_type.type2},
            key=("TYPE_NAME",),
        )
        if inserted:
            type_id = self._conn.execute(sa.select(TYPES.c.TYPES_ID).where(TYPES.c.TYPE_NAME == user_type.name)).scalar()
            insert_rows(self._conn, TYPE_FIELDS, [
                {"TYPE_NAME": type_id, "FIELD_NAME": f.name, "FIELD_TYPE": f.type, "COMMENT": f.comment, "INTEGER_IDX": i}
                for i, f in enumerate(user_type.fields)
            ])
        return inserted

    def get(self, name: str) -> UserType | None:
        """The type called `name`, or None."""
        row = self._conn.execute(sa.select(TYPES).where(TYPES.c.TYPE_NAME == name)).first()
        if row is None:
            return None
        fields = self._conn.execute(
            sa.select(TYPE_FIELDS).where(TYPE_FIELDS.c.TYPE_NAME == row.TYPES_ID).order_by(TYPE_FIELDS.c.INTEGER_IDX)
        )
        return UserType(
            name=row.TYPE_NAME, type1=row.TYPE1, type2=row.TYPE2,
            fields=tuple(FieldSchema(name=f.FIELD_NAME, type=f.FIELD_TYPE, comment=f.COMMENT) for f in fields),
        )

    def drop(self, name: str) -> bool:
        """Delete the type and its fields (ON DELETE CASCADE); False when there was none."""
        return self._conn.execute(sa.delete(TYPES).where(TYPES.c.TYPE_NAME == name)).rowcount > 0
