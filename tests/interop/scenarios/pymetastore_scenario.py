"""Interop scenario through pymetastore (criccomini/pymetastore, Thrift generated from trinodb/hive-thrift, Hive 3.x).

Runs inside pymetastore's own virtualenv. High-level steps use pymetastore's `HMS` API (which reads statistics one
column at a time with get_table_column_statistics and decodes union members 1-7 only); writes use the generated
client underneath it, since pymetastore has no write API for statistics.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from pymetastore.hive_metastore import ThriftHiveMetastore
from pymetastore.hive_metastore import ttypes as T
from pymetastore.metastore import HMS
from scenario_common import (
    LAST_ANALYZED,
    SERVER_CLOCK,
    TABLE_COLUMNS,
    Names,
    Recorder,
    Scenario,
    emit,
    normalise,
    open_socket,
    parse_args,
)
from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.transport import TTransport


def plain(value: Any) -> Any:
    """pymetastore's dataclasses, enums and HType objects as JSON."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in sorted(value.items())}
    if type(value).__module__.startswith("pymetastore.htypes"):
        return str(value)
    return normalise(value)


def drop_volatile(doc: Any) -> Any:
    """Server clocks out of pymetastore's objects (snake_case fields); lastAnalyzed kept only if it is the client's."""
    if isinstance(doc, dict):
        out = {}
        for k, v in doc.items():
            if k in ("create_time", "last_access_time", "transient_lastDdlTime"):
                continue
            if k == "lastAnalyzed" and v is not None:
                out[k] = v if v == LAST_ANALYZED else SERVER_CLOCK
            else:
                out[k] = drop_volatile(v)
        return out
    if isinstance(doc, list):
        return [drop_volatile(v) for v in doc]
    return doc


def main() -> None:
    args = parse_args()
    names = Names(args.prefix)
    state: dict[str, Any] = {}

    def connect() -> None:
        if "transport" in state:
            state["transport"].close()
        transport = TTransport.TBufferedTransport(open_socket(args))
        transport.open()
        state["transport"] = transport
        client = ThriftHiveMetastore.Client(TBinaryProtocol(transport))
        if "hms" in state:
            state["hms"].client = client
        else:
            state["hms"] = HMS(client)

    connect()
    hms: HMS = state["hms"]
    rec = Recorder("pymetastore", reconnect=connect)
    # Scenario steps go through hms.client, which connect() replaces in place after a broken reply.
    proxy = ClientProxy(hms)
    sc = Scenario(rec, proxy, T, names)

    sc.databases()
    rec.step(
        "pymetastore.list_databases",
        lambda: sorted(d for d in hms.list_databases() if d in {"default", names.db}),
    )
    rec.step(
        "pymetastore.get_database", lambda: hms.get_database(names.db), lambda r: drop_volatile(plain(r))
    )
    table = sc.table()
    sc.partitions(table)
    rec.step("pymetastore.list_tables", lambda: sorted(hms.list_tables(names.db)))
    htable = rec.step(
        "pymetastore.get_table",
        lambda: hms.get_table(names.db, names.table),
        lambda r: drop_volatile(plain(r)),
    )
    rec.step("pymetastore.list_columns", lambda: hms.list_columns(names.db, names.table))
    rec.step("pymetastore.list_partitions", lambda: sorted(hms.list_partitions(names.db, names.table)))
    rec.step(
        "pymetastore.get_partitions",
        lambda: sorted(hms.get_partitions(names.db, names.table), key=lambda p: p.values),
        lambda r: drop_volatile(plain(r)),
    )
    rec.step(
        "pymetastore.get_partition",
        lambda: hms.get_partition(names.db, names.table, "ds=2024-01-02"),
        lambda r: drop_volatile(plain(r)),
    )
    sc.missing_stats()
    sc.write_stats()
    sc.read_stats()
    if htable is not None:
        # pymetastore asks for one column at a time; all of them in one call here.
        rec.step(
            "pymetastore.get_table_stats",
            lambda: hms.get_table_stats(htable),
            lambda r: drop_volatile(plain(r)),
        )
        one = [c for c in htable.columns if c.name == "c_decimal"]
        rec.step(
            "pymetastore.get_table_stats_decimal",
            lambda: hms.get_table_stats(htable, one),
            lambda r: drop_volatile(plain(r)),
        )
    sc.merge_stats()
    sc.errors()
    sc.deletes()
    if htable is not None:
        # One column without statistics makes the whole per-column read fail.
        rec.step(
            "pymetastore.get_table_stats_after_delete",
            lambda: hms.get_table_stats(htable),
            lambda r: drop_volatile(plain(r)),
        )
    sc.cleanup()
    state["transport"].close()
    emit(rec.output(columns=[c for c, _ in TABLE_COLUMNS], idl="trinodb/hive-thrift (Hive 3.x)"))


class ClientProxy:
    """Forwards to the HMS object's current generated client (swapped after a reconnect)."""

    def __init__(self, hms: HMS) -> None:
        self._hms = hms

    def __getattr__(self, name: str) -> Any:
        return getattr(self._hms.client, name)


if __name__ == "__main__":
    main()
