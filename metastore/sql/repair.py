"""MSCK [REPAIR] TABLE t [ADD|DROP|SYNC PARTITIONS]: match partition folders `k1=v1/k2=v2` under the table's
location with the metastore's partitions.

Without REPAIR it only reports. ADD (the default) adds partitions found on disk but missing in the
metastore (each at the folder found); DROP removes partitions whose folder is gone; SYNC does both.
Folder names are unescaped as Hive escapes them (`ds=2024%2F01` is ds='2024/01'); folders that do not fit
the partition keys (wrong key, wrong depth, hidden) are left alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metastore import storage
from metastore.catalog import Partition, StorageDescriptor
from metastore.locations import qualify, same_location
from metastore.partnames import make_part_name, unescape_path_name
from metastore.sql.errors import SqlError
from metastore.sql.output import Result
from metastore.sql.statements import MsckRepair
from metastore.sql.table_files import data_location, is_hidden, qualified
from metastore.storage import StorageOptions

if TYPE_CHECKING:
    from metastore.sql.session import Session

#: Partitions added per add_partitions call.
ADD_BATCH = 500


def partition_folders(root: str, keys: list[str], options: StorageOptions | None = None) -> dict[tuple[str, ...], str]:
    """{partition values: folder location} for every `k1=v1/.../kn=vn` folder under the root location whose
    keys are the table's (a local directory, or a prefix on an object store)."""
    found: dict[tuple[str, ...], str] = {}

    def walk(directory: str, depth: int, values: tuple[str, ...]) -> None:
        for name in storage.list_dirs(directory, options):
            if is_hidden(name) or "=" not in name:
                continue
            key, _, raw_value = name.partition("=")
            if unescape_path_name(key).lower() != keys[depth].lower() or not raw_value:
                continue
            value = unescape_path_name(raw_value)
            folder = storage.child(directory, name)
            if depth + 1 == len(keys):
                found[(*values, value)] = folder
            else:
                walk(folder, depth + 1, (*values, value))

    walk(root, 0, ())
    return found


def repair_table(ex: Session, st: MsckRepair) -> Result:
    table = ex.table(st.table)
    if not table.partition_keys:
        raise SqlError(f"{qualified(table)} is not partitioned; MSCK has nothing to repair", st.table.position)
    root = data_location(table.sd.location, qualified(table), st.table.position)
    keys = [k.name for k in table.partition_keys]
    on_disk = partition_folders(root, keys, ex.options.storage)
    found_folders = {qualify(folder) for folder in on_disk.values()}
    known = ex.client.list_partitions(table.db_name, table.table_name)
    known_values = {tuple(p.values) for p in known}
    rows: list[list[str]] = []
    to_add = sorted((v for v in on_disk if v not in known_values), key=lambda v: make_part_name(keys, list(v)))
    to_drop = []
    for p in known if st.drop else ():
        location = p.sd.location
        if not location:
            continue
        # a folder the walk found exists; others (outside the table's tree, or named otherwise) are asked for
        folder = on_disk.get(tuple(p.values))
        if folder is not None and same_location(folder, location):
            continue
        if qualify(location) in found_folders:
            continue
        if not storage.is_dir(location, ex.options.storage):
            to_drop.append(p)
    name = table.table_name
    if st.add:
        status = "added" if st.repair else "not in metastore"
        for start in range(0, len(to_add), ADD_BATCH):
            chunk = to_add[start : start + ADD_BATCH]
            if st.repair:
                parts = [
                    Partition(
                        db_name=table.db_name, table_name=table.table_name, values=list(values),
                        sd=StorageDescriptor(
                            cols=list(table.sd.cols), location=on_disk[values],
                            input_format=table.sd.input_format, output_format=table.sd.output_format,
                            serde_info=table.sd.serde_info, compressed=table.sd.compressed,
                            num_buckets=table.sd.num_buckets, parameters=dict(table.sd.parameters),
                        ),
                    )
                    for values in chunk
                ]
                ex.client.add_partitions(table.db_name, table.table_name, parts, if_not_exists=True)
            rows.extend([f"{name}:{make_part_name(keys, list(v))}", status] for v in chunk)
    if st.drop:
        status = "dropped" if st.repair else "missing from filesystem"
        names = [make_part_name(keys, p.values) for p in to_drop]
        if st.repair and names:
            ex.client.drop_partitions(table.db_name, table.table_name, names, delete_data=False, if_exists=True)
        rows.extend([f"{name}:{n}", status] for n in names)
    if st.repair and rows:
        ex.changed()
    messages = []
    if st.add:
        messages.append(f"{len(to_add)} partition(s) {'added' if st.repair else 'not in the metastore'}")
    if st.drop:
        messages.append(f"{len(to_drop)} partition(s) {'dropped' if st.repair else 'missing from the filesystem'}")
    return Result(["partition", "status"], rows, message=", ".join(messages))
