"""Domain errors of the metastore; the server maps each to its Hive Thrift exception in one place."""

from __future__ import annotations


class MetastoreError(Exception):
    """Base of every error the metastore raises on purpose; maps to Hive's MetaException."""


class NoSuchObject(MetastoreError):
    """A database, table, partition, column or statistics object does not exist."""


class AlreadyExists(MetastoreError):
    """The object to create exists already."""


class InvalidInput(MetastoreError):
    """A request is malformed or breaks a rule (negative count, low > high, kind not fitting the type)."""


class InvalidObject(MetastoreError):
    """An object definition is invalid (bad name, bad partition spec, bad type string)."""


class InvalidOperation(MetastoreError):
    """The operation is not allowed in the object's present state (drop a non-empty database without cascade)."""


class SchemaOutOfDate(MetastoreError):
    """The database schema is older than this code; `metastore db upgrade` fixes it."""


class StoreUnavailable(MetastoreError):
    """The database behind the metastore cannot be reached (down, restarting, connection lost); the message
    is for clients and names no database details."""
