"""PARTITION (k='v', ...) specifications resolved against a table's partition keys."""

from __future__ import annotations

from metastore.catalog import Table
from metastore.partnames import make_part_name
from metastore.sql.errors import SqlError
from metastore.sql.hive_types import HiveTypeError, parse_hive_type
from metastore.sql.statements import PartitionSpec
from metastore.sql.table_files import qualified
from metastore.sql.values import ConversionError, partition_value_text


def resolve_spec(table: Table, spec: PartitionSpec, *, full: bool, what: str) -> list[str | None]:
    """The spec's values in partition-key order (None where the spec leaves a key open).

    full=True requires a value for every key. Values are checked against the key types and normalised."""
    keys = table.partition_keys
    if not keys:
        raise SqlError(f"{qualified(table)} is not partitioned; {what} takes no PARTITION", spec.position)
    by_name = {k.name.lower(): i for i, k in enumerate(keys)}
    values: list[str | None] = [None] * len(keys)
    for item in spec.items:
        index = by_name.get(item.key.lower)
        if index is None:
            names = ", ".join(k.name for k in keys)
            raise SqlError(
                f"'{item.key.value}' is not a partition column of {qualified(table)} (partition columns: {names})",
                item.key.position,
            )
        if item.value is None:
            continue
        key = keys[index]
        try:
            values[index] = partition_value_text(item.value, parse_hive_type(key.type))
        except (ConversionError, HiveTypeError) as exc:
            raise SqlError(f"partition column '{key.name}': {exc}", item.value.position) from None
    if full:
        missing = [k.name for k, v in zip(keys, values, strict=True) if v is None]
        if missing:
            raise SqlError(
                f"{what} needs a value for every partition column of {qualified(table)}; missing: "
                f"{', '.join(missing)}",
                spec.position,
            )
    return values


def full_values(table: Table, spec: PartitionSpec, what: str) -> list[str]:
    """Values of a spec that must name one partition."""
    return [v for v in resolve_spec(table, spec, full=True, what=what) if v is not None]


def partial_values(values: list[str | None]) -> list[str]:
    """Values for get_partitions_ps: '' matches any value."""
    return ["" if v is None else v for v in values]


def partition_name(table: Table, values: list[str]) -> str:
    return make_part_name([k.name for k in table.partition_keys], values)


def spec_text(table: Table, values: list[str | None]) -> str:
    """A spec as the user would write it back, for messages."""
    return ", ".join(f"{k.name}='{v}'" for k, v in zip(table.partition_keys, values, strict=True) if v is not None)
