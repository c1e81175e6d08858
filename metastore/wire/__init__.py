"""Thrift at the edge: conversions between Hive's Thrift structs and the domain model, and replies as bytes.

Both the server and the remote client import this package; nothing inside the domain (`metastore.stats`,
`metastore.catalog`, `metastore.service`, `metastore.store`) speaks Thrift.

- `catalog`: databases, tables, partitions and storage descriptors.
- `stats`: column statistics (ColumnStatisticsObj) and Hive's Decimal, one codec per statistics kind.
- `encoded`: structs encoded once and written to the wire as bytes (`EncodedResult`).
"""
