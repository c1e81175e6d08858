"""Interop scenario through hmsclient (gglanzani/hmsclient, Thrift generated from Hive 2.3.3).

Runs inside hmsclient's own virtualenv. Its generated types declare `bitVectors` as a Thrift `string`, so under
Python 3 any bitVectors a server returns are decoded as UTF-8: real HLL/FM sketch bytes make the read fail with
UnicodeDecodeError. The scenario therefore writes no bitVectors, and the server must not volunteer any.
"""

from __future__ import annotations

from typing import Any

from hmsclient import hmsclient
from hmsclient.genthrift.hive_metastore import ttypes as T
from scenario_common import (
    PARTITION_NAMES,
    TABLE_COLUMNS,
    Names,
    Recorder,
    Scenario,
    emit,
    open_socket,
    parse_args,
)
from thrift.protocol import TBinaryProtocol
from thrift.transport import TTransport


def main() -> None:
    args = parse_args()
    names = Names(args.prefix)
    if args.tls_ca:
        # hmsclient opens a plain TSocket itself; a TLS transport goes in through its iprot argument.
        client = hmsclient.HMSClient(iprot=TBinaryProtocol.TBinaryProtocol(
            TTransport.TBufferedTransport(open_socket(args))))
    else:
        client = hmsclient.HMSClient(host=args.host, port=args.port)
    client.open()

    def reconnect() -> None:
        client.close()
        transport = TTransport.TBufferedTransport(open_socket(args))
        proto = TBinaryProtocol.TBinaryProtocol(transport)
        client._iprot = client._oprot = proto
        transport.open()

    rec = Recorder("hmsclient", reconnect=reconnect)
    sc = Scenario(rec, client, T, names)

    def add_one_by_one(table: Any, _parts: list[Any]) -> int:
        # hmsclient's own helper: copies the table's storage descriptor, location <table>/ds=<value>.
        for name in PARTITION_NAMES:
            client.add_partition(table, [name.split("=", 1)[1]])
        return len(PARTITION_NAMES)

    sc.databases()
    table = sc.table()
    sc.partitions(table, add=add_one_by_one)
    rec.step(
        "hmsclient.check_for_named_partition",
        lambda: client.check_for_named_partition(names.db, names.table, PARTITION_NAMES[0]),
    )
    rec.step(
        "hmsclient.check_for_named_partition_missing",
        lambda: client.check_for_named_partition(names.db, names.table, "ds=1999-01-01"),
    )
    rec.step(
        "hmsclient.parse_schema", lambda: list(client.parse_schema(client.get_schema(names.db, names.table)))
    )
    sc.missing_stats()
    sc.write_stats()
    sc.read_stats()
    sc.merge_stats()
    sc.errors()
    sc.deletes()
    sc.cleanup()
    client.close()
    emit(rec.output(columns=[c for c, _ in TABLE_COLUMNS], idl="Hive 2.3.3"))


if __name__ == "__main__":
    main()
