"""Child rows of several kinds (parameters, columns, bucketing and sort columns, partition keys and values) read in
one statement: a UNION ALL of one branch per kind, each row tagged with its kind.

Reading a table or a page of partitions needs up to seven such kinds; one statement for each costs its own
statement building, cache-key and round trip (~0.2-0.3 ms each through SQLAlchemy on the embedded store), so a
table read as nine statements becomes three and a partition listing's eleven five.

Every branch selects the same shape: kind, owner id, three text values, one integer value, the position, with
typed NULLs where a kind has fewer values (PostgreSQL resolves a UNION's column types across its branches).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from metastore.store.chunking import bind_list, in_list

#: Text values a row carries at most (a column: name, type, comment).
_TEXTS = 3


@dataclass(frozen=True)
class ChildKind:
    """One kind of child row: rows of ``owner``'s table whose owner is one of ``ids``, their ``texts`` (at most
    three text columns) and ``number`` (an integer column), in ``position`` order within an owner."""

    owner: sa.Column[Any]
    ids: Sequence[Any]
    texts: tuple[sa.Column[Any], ...]
    number: sa.Column[Any] | None = None
    position: sa.Column[Any] | None = None


#: A row read: (owner id, text values padded to three, the integer value or None).
ChildRow = tuple[Any, ...]


def read_child_rows(conn: sa.Connection, kinds: Sequence[ChildKind]) -> list[list[ChildRow]]:
    """Each kind's rows, ordered by owner id and position, as ``(owner, text1, text2, text3, number)``; one
    statement for all kinds, however many ids."""
    out: list[list[ChildRow]] = [[] for _ in kinds]
    ids = [list(dict.fromkeys(kind.ids)) for kind in kinds]
    if not any(ids):
        return out
    postgresql = conn.dialect.name == "postgresql"
    statement = _statement(tuple((k.owner, k.texts, k.number, k.position) for k in kinds), postgresql)
    # the ids bound as one parameter a kind: an array on PostgreSQL, a JSON array on SQLite (json_each): the same
    # SQL text however many ids, nothing expanded (and no IN-list limit)
    params = {f"ids{k}": bind_list(owners, conn.dialect.name) for k, owners in enumerate(ids)}
    for row in conn.execute(statement, params).all():
        out[row[0]].append(tuple(row[1:6]))
    return out


#: The statement of each combination of kinds and dialect, built once: SQLAlchemy then reuses its cache key and
#: compiled SQL (building a seven-branch UNION and its cache key anew costs more than the statements it saves).
_STATEMENTS: dict[tuple[Any, bool], Any] = {}


def _statement(shapes: tuple[Any, ...], postgresql: bool) -> Any:
    key = (shapes, postgresql)
    statement = _STATEMENTS.get(key)
    if statement is None:
        selects = [_branch(k, ChildKind(owner, (), texts, number, position), postgresql)
                   for k, (owner, texts, number, position) in enumerate(shapes)]
        union: Any = selects[0] if len(selects) == 1 else sa.union_all(*selects)
        statement = _STATEMENTS[key] = union.order_by(
            sa.literal_column("k"), sa.literal_column("o"), sa.literal_column("i")
        )
    return statement


def ids_condition(column: sa.Column[Any], name: str, postgresql: bool) -> Any:
    """``column`` is one of the ids bound as parameter ``name`` (chunking.bind_list): ``= ANY(array)`` on
    PostgreSQL, ``IN (SELECT value FROM json_each(...))`` on SQLite; the same SQL text however many ids."""
    if postgresql:
        # imported here: only PostgreSQL needs it (~18 ms of start-up)
        from sqlalchemy.dialects.postgresql import ARRAY

        return column == sa.any_(sa.bindparam(name, type_=ARRAY(column.type)))
    owner = f'"{column.table.name}"."{column.name}"'
    return sa.text(in_list(owner, name, "sqlite")).bindparams(sa.bindparam(name, type_=sa.String))


def _branch(k: int, kind: ChildKind, postgresql: bool) -> sa.Select[Any]:
    condition = ids_condition(kind.owner, f"ids{k}", postgresql)
    texts = [c.label(f"t{i}") for i, c in enumerate(kind.texts)]
    texts += [sa.cast(sa.null(), sa.Text).label(f"t{i}") for i in range(len(kind.texts), _TEXTS)]
    number = (kind.number if kind.number is not None else sa.cast(sa.null(), sa.Integer)).label("n")
    position = (kind.position if kind.position is not None else sa.cast(sa.literal_column("0"), sa.Integer))
    return sa.select(
        sa.literal_column(str(k), sa.Integer).label("k"), kind.owner.label("o"), *texts, number, position.label("i")
    ).where(condition)


def parameters_of(rows: Sequence[ChildRow], owners: Sequence[Any]) -> dict[Any, dict[str, str]]:
    """{owner: parameters} from a parameter table's rows (key, value), ordered by key as
    parameters.ParameterTable.load gives them; owners without any map to {}."""
    out: dict[Any, dict[str, str]] = {o: {} for o in owners}
    for owner, key, value, *_ in rows:
        out[owner][key] = value
    return {o: dict(sorted(p.items())) if len(p) > 1 else p for o, p in out.items()}
