"""SHOW PARTITIONS, ALTER TABLE ... ADD PARTITION and ALTER TABLE ... DROP PARTITION."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from metastore.catalog import Partition, StorageDescriptor
from metastore.errors import AlreadyExists
from metastore.sql.errors import SqlError
from metastore.sql.output import Result
from metastore.sql.partition_specs import full_values, partial_values, partition_name, resolve_spec, spec_text
from metastore.sql.statements import AddPartitions, DropPartitions, ShowPartitions
from metastore.sql.table_files import absolute_location, qualified

if TYPE_CHECKING:
    from metastore.sql.session import Session


def show_partitions(ex: Session, st: ShowPartitions) -> Result:
    """The partition names of a table, all or those matching a partial spec, sorted."""
    table = ex.table(st.table)
    if not table.partition_keys:
        raise SqlError(f"{qualified(table)} is not a partitioned table", st.table.position)
    if st.spec is None:
        names = ex.client.list_partition_names(table.db_name, table.table_name)
    else:
        values = resolve_spec(table, st.spec, full=False, what="SHOW PARTITIONS")
        names = ex.client.list_partition_names(table.db_name, table.table_name, partial_values(values))
    return Result(["partition"], [[n] for n in sorted(names)])


def add_partitions(ex: Session, st: AddPartitions) -> Result:
    """Add the listed partitions (at the table's layout or their own LOCATION) in one call."""
    table = ex.table(st.table)
    parts = []
    seen: set[str] = set()
    for spec, location in st.partitions:
        values = full_values(table, spec, "ADD PARTITION")
        name = partition_name(table, values)
        if name in seen:
            raise SqlError(f"partition {name} is listed twice", spec.position)
        seen.add(name)
        sd = StorageDescriptor()
        if location:
            sd = replace(table.sd, location=absolute_location(location))
        parts.append(Partition(db_name=table.db_name, table_name=table.table_name, values=values, sd=sd))
    try:
        added = ex.client.add_partitions(table.db_name, table.table_name, parts, if_not_exists=st.if_not_exists)
    except AlreadyExists as exc:
        raise SqlError(str(exc), st.position) from None
    skipped = len(parts) - len(added)
    message = f"added {len(added)} partition(s)" + (f", {skipped} existed already" if skipped else "")
    return Result(message=message)


def drop_partitions(ex: Session, st: DropPartitions) -> Result:
    """Drop every partition matching any of the (partial) specs, with its data."""
    table = ex.table(st.table)
    names: list[str] = []
    for spec in st.specs:
        values = resolve_spec(table, spec, full=False, what="DROP PARTITION")
        matching = ex.client.list_partition_names(table.db_name, table.table_name, partial_values(values))
        if not matching and not st.if_exists:
            raise SqlError(f"no partition of {qualified(table)} matches ({spec_text(table, values)})", spec.position)
        names.extend(n for n in matching if n not in names)
    dropped = ex.client.drop_partitions(table.db_name, table.table_name, names, delete_data=True, if_exists=True)
    return Result(["partition"], [[partition_name(table, p.values)] for p in dropped],
                  message=f"dropped {len(dropped)} partition(s)")
