"""Long IN lists: split (databases and drivers degrade, or refuse, past about a thousand bound values), or bound
as one list parameter (an array on PostgreSQL, a JSON array read by json_each on SQLite)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa

T = TypeVar("T")

# Hive's hive.direct.sql.max.elements.in.clause default.
IN_LIST_LIMIT = 1000

# Rows per multi-row INSERT: ~20 columns each stays far below SQLite's 32766 and PostgreSQL's 65535
# bound-parameter limits.
INSERT_BATCH_ROWS = 500


def chunks(items: Sequence[T], size: int = IN_LIST_LIMIT) -> Iterator[Sequence[T]]:
    """Consecutive slices of at most `size` items."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def id_conditions(conn: Any, column: Any, ids: Sequence[Any]) -> Iterator[Any]:
    """WHERE conditions selecting the rows whose `column` is one of `ids`, together covering all of them: on
    PostgreSQL one `column = ANY(array)` with the ids bound as one array parameter (one statement however many
    ids, nothing expanded into the SQL text: a listing's page of 2,000 partitions is a statement per child
    table, not two of 1,000 literals each); elsewhere `column IN (...)` of at most IN_LIST_LIMIT ids each."""
    if not ids:
        return
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects import postgresql  # here: only PostgreSQL needs it (~18 ms of start-up)

        yield column == sa.any_(sa.bindparam(None, list(ids), type_=postgresql.ARRAY(column.type)))
        return
    for batch in chunks(ids):
        yield column.in_(batch)


def in_list(column: str, param: str, dialect: str) -> str:
    """`column IN (the list bound as :param)`: see bind_list."""
    if dialect == "postgresql":
        return f"{column} = ANY(:{param})"
    return f"{column} IN (SELECT value FROM json_each(:{param}))"


def bind_list(values: Sequence[Any], dialect: str) -> Any:
    """A list parameter for in_list."""
    return list(values) if dialect == "postgresql" else json.dumps(list(values))
