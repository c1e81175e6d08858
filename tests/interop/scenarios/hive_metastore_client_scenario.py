"""Interop scenario through hive-metastore-client (quintoandar, Thrift generated from Hive 3.0).

Runs inside hive-metastore-client's own virtualenv (it pins thrift 0.13). Its generated `get_partitions` sends
`max_parts` as i32 where the Hive IDL says i16 (hand-patched upstream): a server that only reads i16 skips the
field and returns every partition, one that accepts both honours the limit.
"""

from __future__ import annotations

from typing import Any

from hive_metastore_client import HiveMetastoreClient
from hive_metastore_client.builders import (
    ColumnBuilder,
    DatabaseBuilder,
    PartitionBuilder,
    SerDeInfoBuilder,
    StorageDescriptorBuilder,
    TableBuilder,
)
from scenario_common import TABLE_COLUMNS, Names, Recorder, Scenario, emit, normalise_partitions, parse_args
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport
from thrift_files.libraries.thrift_hive_metastore_client import ttypes as T


def main() -> None:
    args = parse_args()
    names = Names(args.prefix)
    client = HiveMetastoreClient(args.host, args.port)
    client.open()

    def reconnect() -> None:
        client.close()
        transport = TTransport.TBufferedTransport(TSocket.TSocket(args.host, args.port))
        proto = TBinaryProtocol.TBinaryProtocol(transport)
        client._iprot = client._oprot = proto
        transport.open()

    rec = Recorder("hive-metastore-client", reconnect=reconnect)
    sc = Scenario(rec, client, T, names)

    def create_db_with_builder(db: Any) -> None:
        built = DatabaseBuilder(
            name=db.name,
            description=db.description,
            parameters=db.parameters,
            owner_name=db.ownerName,
            owner_type=db.ownerType,
        ).build()
        client.create_database_if_not_exists(built)

    def add_with_helper(table: Any, _parts: list[Any]) -> int:
        # The library fills each partition's storage descriptor from the table's.
        parts = [
            PartitionBuilder(values=[v], db_name=names.db, table_name=names.table).build()
            for v in ("2024-01-01", "2024-01-02", "2024-01-03")
        ]
        client.add_partitions_to_table(names.db, names.table, parts)
        return len(parts)

    sc.databases(create_db=create_db_with_builder)
    rec.step(
        "hmc.create_database_if_not_exists_again", lambda: create_db_with_builder(T.Database(name=names.db))
    )
    table = sc.table()
    sc.partitions(table, add=add_with_helper)
    rec.step("hmc.get_partition_keys", lambda: client.get_partition_keys(names.db, names.table))
    rec.step("hmc.get_partition_keys_names", lambda: client.get_partition_keys_names(names.db, names.table))
    # The i32 max_parts quirk: 2 of the 3 partitions if the server reads the field, all 3 if it skips it.
    rec.step(
        "hmc.get_partitions_max_2",
        lambda: client.get_partitions(names.db, names.table, 2),
        normalise_partitions,
    )
    # get_partition_values is a Hive 3 call.
    rec.step(
        "hmc.get_partition_values_from_table",
        lambda: client.get_partition_values_from_table(names.db, names.table),
    )

    built = "built_external"
    cols = [ColumnBuilder(name=n, type=t).build() for n, t in (("id", "bigint"), ("name", "string"))]
    serde = SerDeInfoBuilder(serialization_lib="org.apache.hadoop.hive.ql.io.orc.OrcSerde").build()
    sd = StorageDescriptorBuilder(
        columns=cols,
        location="file:/tmp/interop-external/built_external",
        input_format="org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
        output_format="org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
        serde_info=serde,
    ).build()
    ext = TableBuilder(
        table_name=built,
        db_name=names.db,
        owner="interop",
        storage_descriptor=sd,
        partition_keys=[ColumnBuilder(name="ds", type="string").build()],
    ).build()
    rec.step("hmc.create_external_table", lambda: client.create_external_table(ext))
    def external_table_type() -> list:
        t = client.get_table(names.db, built)
        return [t.tableType, t.parameters.get("EXTERNAL")]

    rec.step("hmc.get_external_table_type", external_table_type)
    ext_parts = [PartitionBuilder(values=[v], db_name=names.db, table_name=built).build() for v in ("a", "b")]
    rec.step(
        "hmc.add_partitions_if_not_exists",
        lambda: client.add_partitions_if_not_exists(names.db, built, ext_parts),
    )
    rec.step(
        "hmc.add_partitions_if_not_exists_again",
        lambda: client.add_partitions_if_not_exists(names.db, built, ext_parts),
    )
    rec.step(
        "hmc.external_partition_locations",
        lambda: sorted(p.sd.location for p in client.get_partitions(names.db, built, -1)),
    )
    rec.step("hmc.bulk_drop_partitions", lambda: client.bulk_drop_partitions(names.db, built, [["a"], ["b"]]))
    rec.step(
        "hmc.bulk_drop_partitions_missing", lambda: client.bulk_drop_partitions(names.db, built, [["a"]])
    )
    rec.step("hmc.drop_external_table", lambda: client.drop_table(names.db, built, False))

    sc.missing_stats()
    sc.write_stats()
    sc.read_stats()
    sc.merge_stats()
    sc.errors()
    sc.deletes()
    sc.cleanup()
    client.close()
    emit(rec.output(columns=[c for c, _ in TABLE_COLUMNS], idl="Hive 3.0"))


if __name__ == "__main__":
    main()
