"""Allocating surrogate ids for many rows at once, so multi-row INSERTs know the ids they create."""

from __future__ import annotations

import sqlalchemy as sa


def allocate_ids(conn: sa.Connection, table: sa.Table, id_column: str, count: int) -> list[int]:
    """`count` fresh ids for `table`, in one statement. PostgreSQL draws them from the column's sequence;
    SQLite continues after the current maximum, which is safe because write transactions hold SQLite's
    write lock from BEGIN IMMEDIATE (a competing writer would make the INSERT fail, never duplicate ids)."""
    if count <= 0:
        return []
    column = table.c[id_column]
    if conn.dialect.name == "postgresql":
        sequence = sa.func.pg_get_serial_sequence(sa.literal(f'"{table.name}"'), sa.literal(id_column))
        series = sa.func.generate_series(1, count).table_valued("n")
        return list(conn.execute(sa.select(sa.func.nextval(sequence)).select_from(series)).scalars())
    start = conn.execute(sa.select(sa.func.coalesce(sa.func.max(column), 0))).scalar_one()
    return list(range(start + 1, start + 1 + count))
