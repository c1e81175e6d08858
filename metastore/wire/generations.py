"""Which Hive generation a client speaks, and the catalog fields of the answers it gets.

Hive 3 introduced catalogs: a Hive 3+ metastore names the catalog ('hive') in every database, table, partition,
function and statistics description it answers. HMS 2.3.10 leaves those fields unset, although Hive 2.3.10's
generated classes declare several of them (backported from Hive 3: Partition.catName is field 9,
Database.catalogName 8, ColumnStatisticsDesc.catName 6) and compare them in equals(). Outside clients depend on
either answer:
- Hive 2.3's own TestHiveMetaStore adds a Partition it built, reads it back and asserts the two are equal; a
  catalog name in the answer fails it (the reference HMS 2.3.10 passes).
- pymetastore, generated from a Hive 3+ IDL, asserts in HMS.get_partitions that Partition.catName is a string,
  and its tests that it is 'hive' (the reference HMS 2.3.10 fails them).

No call says which the client expects, but what a client sends says which IDL it was generated from. Hive 3 added
Table.ownerType with a default (USER): every client generated from a Hive 3+ IDL sends it with each Table it
writes, Java and Python alike, and no client generated from a Hive 2 IDL (2.3.10's included) can. So, per
connection (`ClientGeneration`):
- a Table the client sends decides: without ownerType the client is Hive 2, with it Hive 3+;
- before that, a set_ugi call marks the client as Hive 2 provisionally: Hive's Java HiveMetaStoreClient calls it
  first on every connection without SASL unless hive.metastore.execute.setugi is off (Spark's client does), and
  none of the Python clients we know of calls it;
- a Hive 2 client's answers leave every catalog field unset, as HMS 2.3.10 answers; every other client's carry
  them, as Hive 3+ answers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from thrift.Thrift import TType

from metastore.api.hive_metastore import ttypes as tt

CATALOG_FIELDS = frozenset({"catName", "catalogName"})

# Acts on a decoded Thrift value in place.
Visit = Callable[[Any], None]


@dataclass
class ClientGeneration:
    """What one connection's client has shown of its IDL; used by that connection's thread only."""

    hive2: bool | None = None  # None: nothing shown yet (answered as a Hive 3+ client)

    def saw_set_ugi(self) -> None:
        """set_ugi: Hive's Java client, provisionally Hive 2 (a Table it sends later decides)."""
        if self.hive2 is None:
            self.hive2 = True

    def saw_table(self, table: tt.Table) -> None:
        """A Table from the client: its ownerType says whether its IDL is Hive 3+."""
        self.hive2 = table.ownerType is None


def _spec_fields(cls: type) -> list[tuple[Any, ...]]:
    # thrift_spec is assigned after each generated class, where mypy does not see it.
    return [f for f in getattr(cls, "thrift_spec", None) or () if f]


def _visitor(ttype: int, type_args: Any, for_struct: Callable[[type], Visit | None]) -> Visit | None:
    """A visitor of a value of this Thrift type that runs `for_struct(cls)`'s visitor on every struct of a class
    that has one, however deep; None when no such struct can be inside."""
    if ttype == TType.STRUCT:
        return for_struct(type_args[0])
    if ttype in (TType.LIST, TType.SET):
        element = _visitor(type_args[0], type_args[1], for_struct)
        if element is None:
            return None

        def visit_elements(values: Any) -> None:
            for v in values:
                if v is not None:
                    element(v)

        return visit_elements
    if ttype == TType.MAP:
        key = _visitor(type_args[0], type_args[1], for_struct)
        value = _visitor(type_args[2], type_args[3], for_struct)
        if key is None and value is None:
            return None

        def visit_items(items: Any) -> None:
            for k, v in items.items():
                if key is not None and k is not None:
                    key(k)
                if value is not None and v is not None:
                    value(v)

        return visit_items
    return None


_IN_PROGRESS: set[type] = set()


@functools.cache
def _catalog_clearer(cls: type) -> Visit | None:
    """Sets every catalog field of a struct of class `cls`, and of the structs inside it, to None."""
    if cls in _IN_PROGRESS:  # a struct that holds its own kind: look the visitor up when it runs
        return lambda obj: (_catalog_clearer(cls) or (lambda _o: None))(obj)
    _IN_PROGRESS.add(cls)
    try:
        own = tuple(f[2] for f in _spec_fields(cls) if f[1] == TType.STRING and f[2] in CATALOG_FIELDS)
        nested = tuple(
            (f[2], visit) for f in _spec_fields(cls) if (visit := _visitor(f[1], f[3], _catalog_clearer)) is not None
        )
    finally:
        _IN_PROGRESS.discard(cls)
    if not own and not nested:
        return None

    def clear(obj: Any) -> None:
        for name in own:
            setattr(obj, name, None)
        for name, visit in nested:
            value = getattr(obj, name)
            if value is not None:
                visit(value)

    return clear


def catalog_clearer(result_cls: type | None) -> Visit | None:
    """For a method's result struct class, a visitor that unsets every catalog field of its return value (in
    place); None when the value cannot hold one."""
    if result_cls is None:
        return None
    success = next((f for f in _spec_fields(result_cls) if f[0] == 0), None)
    return None if success is None else _visitor(success[1], success[3], _catalog_clearer)


def table_paths(args_cls: type) -> tuple[tuple[str, ...], ...]:
    """Where a method's arguments carry a Table: attribute paths, directly or inside a request struct."""
    paths: list[tuple[str, ...]] = []
    for f in _spec_fields(args_cls):
        if f[1] != TType.STRUCT:
            continue
        cls = f[3][0]
        if cls is tt.Table:
            paths.append((f[2],))
            continue
        paths.extend((f[2], g[2]) for g in _spec_fields(cls) if g[1] == TType.STRUCT and g[3][0] is tt.Table)
    return tuple(paths)


def tables_at(args: object, paths: tuple[tuple[str, ...], ...]) -> list[tt.Table]:
    """The Tables found at `paths` (from table_paths) in a decoded argument struct."""
    found = []
    for path in paths:
        value: Any = args
        for name in path:
            value = getattr(value, name, None)
            if value is None:
                break
        if isinstance(value, tt.Table):
            found.append(value)
    return found
