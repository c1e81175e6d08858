"""A Hive-Metastore-compatible column statistics metastore with an embedded ORC engine."""

__version__ = "0.1.0"
