"""Names of databases, tables and columns: Hive's normalisation (lower case), validation and name patterns."""

from __future__ import annotations

import re

from metastore.catalog import FieldSchema
from metastore.errors import InvalidObject
from metastore.store import schema

# Hive's MetaStoreUtils.validateName: word characters only.
_VALID_NAME = re.compile(r"[A-Za-z0-9_]+")

_PRIMITIVE_TYPES = frozenset(
    [
        "void",
        "boolean",
        "tinyint",
        "smallint",
        "int",
        "integer",
        "bigint",
        "float",
        "double",
        "real",
        "decimal",
        "numeric",
        "string",
        "varchar",
        "char",
        "binary",
        "date",
        "timestamp",
        "timestamplocaltz",
        "interval_year_month",
        "interval_day_time",
        "array",
        "map",
        "struct",
        "uniontype",
    ]
)
_TYPE_HEAD = re.compile(r"\s*([A-Za-z_]+)")


def normalize(name: str) -> str:
    """Hive stores database, table and column names in lower case."""
    return name.strip().lower()


def validate_database_name(name: str) -> str:
    """The normalised database name; InvalidObject unless it is 1..128 word characters."""
    return _validate(name, "database", schema.NAME_LEN)


def validate_table_name(name: str) -> str:
    """The normalised table name; InvalidObject unless it is 1..256 word characters."""
    return _validate(name, "table", schema.TABLE_NAME_LEN)


def _validate(name: str, what: str, max_len: int) -> str:
    if not isinstance(name, str) or not _VALID_NAME.fullmatch(name or ""):
        raise InvalidObject(f"{name!r} is not a valid {what} name: use letters, digits and underscores")
    if len(name) > max_len:
        raise InvalidObject(
            f"{what} name {name[:40]!r}... is {len(name)} characters long; the limit is {max_len}"
        )
    return name.lower()


def validate_columns(cols: list[FieldSchema], where: str, *, what: str = "column") -> list[FieldSchema]:
    """Columns with lower-cased names; InvalidObject for an empty or duplicate name or a missing/unknown type."""
    out: list[FieldSchema] = []
    seen: set[str] = set()
    for col in cols:
        name = (col.name or "").strip().lower()
        if not name:
            raise InvalidObject(f"{where}: a {what} has an empty name")
        if len(name) > schema.COLUMN_NAME_LEN:
            raise InvalidObject(
                f"{where}: {what} name {name[:40]!r}... is longer than {schema.COLUMN_NAME_LEN}"
            )
        if name in seen:
            raise InvalidObject(f"{where}: duplicate {what} {name!r}")
        seen.add(name)
        validate_type(col.type, f"{where}: {what} {name!r}")
        out.append(FieldSchema(name=name, type=col.type.strip(), comment=col.comment))
    return out


def validate_type(type_name: str | None, where: str) -> None:
    """InvalidObject unless `type_name` starts with a Hive type name (the rest is the reader's business)."""
    if not type_name or not type_name.strip():
        raise InvalidObject(f"{where} has no type")
    m = _TYPE_HEAD.match(type_name)
    if not m or m.group(1).lower() not in _PRIMITIVE_TYPES:
        raise InvalidObject(f"{where} has type {type_name!r}, which is not a Hive type")

