"""The Hive-Metastore-compatible Thrift server."""
