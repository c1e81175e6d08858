"""get_table_names_by_filter: Hive 2.3's filter over a database's tables, evaluated on the table objects.

The filter language is the partition filter's (metastore.store.partition_filter parses it); its keys are Hive's
constants: `hive_filter_field_owner__` (the owner), `hive_filter_field_last_access__` (lastAccessTime, an
integer: LIKE is refused) and `hive_filter_field_params__<key>` (the table parameter <key>: only =, <>, != and
LIKE, as Hive's TABLE_FILTER_OPS). LIKE is a regular expression matched against the whole value, case-sensitively,
as Hive's JDO `matches`. A table without the parameter, or without an owner, matches no condition on it (Hive's
query joins the parameter rows). A key Hive does not know is Hive's MetaException "Invalid key name in filter".

A database's tables are few enough (and the call rare enough) to load them and filter in Python; names come back
sorted (Hive's come from a HashSet, in no particular order).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from metastore.catalog import Table
from metastore.errors import InvalidInput, MetastoreError, NoSuchObject
from metastore.service.catalog import CatalogService
from metastore.store.hive_regex import BadRegex, compile_regex
from metastore.store.partition_filter import (
    And,
    Between,
    Compare,
    In,
    Key,
    Literal,
    Node,
    Not,
    Or,
    parse_filter,
)

OWNER_KEY = "hive_filter_field_owner__"
LAST_ACCESS_KEY = "hive_filter_field_last_access__"
PARAMS_PREFIX = "hive_filter_field_params__"

# Any: operands are the field's str or int and the literal of the same kind (_value); typeshed types the
# ordering operators over comparable pairs, which a str | int union is not.
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}
_PARAMS_OPS = frozenset({"=", "!=", "LIKE"})


def _field(key: Key, op: str) -> Callable[[Table], str | int | None]:
    """The table's value a condition on `key` reads; MetastoreError (Hive's MetaException) for what Hive refuses."""
    if key.name == OWNER_KEY:
        return lambda t: t.owner
    if key.name == LAST_ACCESS_KEY:
        if op == "LIKE":
            raise MetastoreError("Like is not supported for HIVE_FILTER_FIELD_LAST_ACCESS")
        return lambda t: t.last_access_time
    if key.name.startswith(PARAMS_PREFIX):
        if op not in _PARAMS_OPS:
            raise MetastoreError("Only [=, <>, !=, LIKE] are supported operators for HIVE_FILTER_FIELD_PARAMS")
        param = key.name[len(PARAMS_PREFIX):]
        return lambda t: t.parameters.get(param)
    raise MetastoreError(
        f"Invalid key name in filter: {key.name!r}.  Use constants from org.apache.hadoop.hive.metastore.api "
        f"({OWNER_KEY}, {LAST_ACCESS_KEY}, {PARAMS_PREFIX}<parameter>)"
    )


def _value(key: Key, lit: Literal) -> str | int:
    if key.name == LAST_ACCESS_KEY:
        # Hive converts a quoted number too; anything else cannot be a time in seconds.
        if lit.kind == "int" or (lit.kind == "string" and str(lit.value).strip().lstrip("+-").isdigit()):
            return int(str(lit.value).strip())
        raise InvalidInput(f"{LAST_ACCESS_KEY} compares with an integer, got {lit.value!r}")
    return str(lit.value)


def _condition(key: Key, op: str, lit: Literal) -> Callable[[Table], bool]:
    read = _field(key, op)
    if op == "LIKE":
        pattern = lit.raw if lit.raw is not None else str(lit.value)
        try:
            regex = compile_regex(pattern)
        except BadRegex as exc:
            shown = repr(pattern) if len(pattern) <= 80 else repr(pattern[:77] + "...")
            raise InvalidInput(f"LIKE pattern {shown} is not a valid regular expression ({exc.reason})") from None
        return lambda t: (v := read(t)) is not None and regex.fullmatch(str(v)) is not None
    value, compare = _value(key, lit), _OPS[op]
    return lambda t: (v := read(t)) is not None and compare(v, value)


def _compile(node: Node) -> Callable[[Table], bool]:
    if isinstance(node, Compare):
        return _condition(node.key, node.op, node.value)
    if isinstance(node, Between):
        low, high = _condition(node.key, ">=", node.low), _condition(node.key, "<=", node.high)
        if node.negated:
            return lambda t: not (low(t) and high(t))
        return lambda t: low(t) and high(t)
    if isinstance(node, In):
        options = [_condition(node.key, "=", v) for v in node.values]
        if node.negated:
            return lambda t: not any(o(t) for o in options)
        return lambda t: any(o(t) for o in options)
    if isinstance(node, Not):
        inner = _compile(node.operand)
        return lambda t: not inner(t)
    parts = [_compile(n) for n in node.operands]
    if isinstance(node, And):
        return lambda t: all(p(t) for p in parts)
    assert isinstance(node, Or)
    return lambda t: any(p(t) for p in parts)


def table_filter(text: str) -> Callable[[Table], bool]:
    """A predicate over tables for a get_table_names_by_filter filter; an empty filter keeps every table.
    InvalidInput for a malformed filter or regular expression, MetastoreError for what Hive refuses."""
    if not text.strip():
        return lambda _t: True
    return _compile(parse_filter(text, "table filter"))


def table_names_by_filter(catalog: CatalogService, db_name: str, text: str, max_tables: int) -> list[str]:
    """get_table_names_by_filter as Hive 2.3: the filter is checked first; a database that does not exist has
    no tables (Hive's query simply finds none)."""
    keep = table_filter(text)
    try:
        tables = catalog.get_tables(db_name, catalog.list_tables(db_name))
    except NoSuchObject:
        return []
    names = sorted(t.table_name for t in tables if keep(t))
    return names if max_tables < 0 else names[:max_tables]
