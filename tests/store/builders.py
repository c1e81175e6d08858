"""Test objects for the store tests: a partitioned sales table and its partitions."""

from __future__ import annotations

from metastore.catalog import FieldSchema, Partition, SerDeInfo, StorageDescriptor, Table


def sales_table(
    name: str = "orders", *, keys: tuple[tuple[str, str], ...] = (("ds", "string"), ("hr", "int"))
) -> Table:
    """A table sales.<name> with four data columns and the given partition keys."""
    return Table(
        db_name="sales",
        table_name=name,
        owner="alice",
        sd=StorageDescriptor(
            cols=[
                FieldSchema("id", "bigint", "row id"),
                FieldSchema("price", "decimal(10,2)"),
                FieldSchema("name", "string"),
                FieldSchema("ok", "boolean"),
            ],
            location=f"/warehouse/sales.db/{name}",
            input_format="org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
            output_format="org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
            serde_info=SerDeInfo(serialization_lib="org.apache.hadoop.hive.ql.io.orc.OrcSerde"),
        ),
        partition_keys=[FieldSchema(k, t) for k, t in keys],
        parameters={"transient_lastDdlTime": "1700000000"},
    )


def partition(values: list[str], name: str = "orders", **kwargs) -> Partition:
    """A partition of sales.<name> located under the table directory."""
    location = "/warehouse/sales.db/" + name + "/" + "/".join(values)
    return Partition("sales", name, values, sd=StorageDescriptor(location=location), **kwargs)
