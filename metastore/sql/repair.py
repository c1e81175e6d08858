"""MSCK [REPAIR] TABLE t [ADD|DROP|SYNC PARTITIONS]: match partition folders `k1=v1/k2=v2` under the table's
location with the metastore's partitions.

Without REPAIR it only reports. ADD (the default) adds partitions found on disk but missing in the
metastore (each at the folder found); DROP removes partitions whose folder is gone; SYNC does both.
Folder names are unescaped as Hive escapes them (`ds=2024%2F01` is ds='2024/01'); folders that do not fit
the partition keys (wrong key, wrong depth, hidden) are left alone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from metastore.catalog import Partition, StorageDescriptor
from metastore.locations import local_path
from metastore.partnames import make_part_name, unescape_path_name
from metastore.sql.errors import SqlError
from metastore.sql.output import Result
from metastore.sql.statements import MsckRepair
from metastore.sql.table_files import is_hidden, local_dir, qualified

if TYPE_CHECKING:
    from metastore.sql.session import Session

#: Partitions added per add_partitions call.
ADD_BATCH = 500


def partition_folders(root: Path, keys: list[str]) -> dict[tuple[str, ...], Path]:
    """{partition values: folder} for every `k1=v1/.../kn=vn` folder under root whose keys are the table's."""
    found: dict[tuple[str, ...], Path] = {}

    def walk(directory: Path, depth: int, values: tuple[str, ...]) -> None:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if not entry.is_dir() or is_hidden(entry.name) or "=" not in entry.name:
                continue
            key, _, raw_value = entry.name.partition("=")
            if unescape_path_name(key).lower() != keys[depth].lower() or not raw_value:
                continue
            value = unescape_path_name(raw_value)
            if depth + 1 == len(keys):
                found[(*values, value)] = Path(entry.path)
            else:
                walk(Path(entry.path), depth + 1, (*values, value))

    walk(root, 0, ())
    return found


def repair_table(ex: Session, st: MsckRepair) -> Result:
    table = ex.table(st.table)
    if not table.partition_keys:
        raise SqlError(f"{qualified(table)} is not partitioned; MSCK has nothing to repair", st.table.position)
    root = local_dir(table.sd.location, qualified(table), st.table.position)
    keys = [k.name for k in table.partition_keys]
    on_disk = partition_folders(root, keys)
    known = ex.client.list_partitions(table.db_name, table.table_name)
    known_values = {tuple(p.values) for p in known}
    rows: list[list[str]] = []
    to_add = sorted((v for v in on_disk if v not in known_values), key=lambda v: make_part_name(keys, list(v)))
    to_drop = []
    for p in known:
        path = local_path(p.sd.location)
        if path is not None and not path.is_dir():
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
                            cols=list(table.sd.cols), location=str(on_disk[values]),
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
