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
from itertools import zip_longest
from typing import Any

import sqlalchemy as sa

from metastore.store.chunking import id_conditions

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
    statement for all kinds (several on SQLite past chunking.IN_LIST_LIMIT ids of a kind)."""
    out: list[list[ChildRow]] = [[] for _ in kinds]
    branches: list[list[sa.Select[Any]]] = []
    for k, kind in enumerate(kinds):
        ids = list(dict.fromkeys(kind.ids))
        branches.append([_branch(k, kind, condition) for condition in id_conditions(conn, kind.owner, ids)])
    for group in zip_longest(*branches):
        selects = [b for b in group if b is not None]
        if not selects:
            continue
        statement: Any = selects[0] if len(selects) == 1 else sa.union_all(*selects)
        statement = statement.order_by(sa.literal_column("k"), sa.literal_column("o"), sa.literal_column("i"))
        for row in conn.execute(statement):
            out[row[0]].append(tuple(row[1:6]))
    return out


def _branch(k: int, kind: ChildKind, condition: Any) -> sa.Select[Any]:
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
