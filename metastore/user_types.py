"""Hive's legacy user-defined types (create_type / get_type; TYPES and TYPE_FIELDS): no Thrift, no SQL."""

from __future__ import annotations

from dataclasses import dataclass, field

from metastore.catalog import FieldSchema


@dataclass(frozen=True, kw_only=True)
class UserType:
    """A named type: a collection (type1, type2: element / key and value types) or a struct (fields)."""

    name: str
    type1: str | None = None
    type2: str | None = None
    fields: tuple[FieldSchema, ...] = field(default_factory=tuple)
