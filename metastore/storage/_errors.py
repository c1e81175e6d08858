"""The storage layer's one error type."""

from __future__ import annotations

from metastore.errors import MetastoreError


class StorageError(MetastoreError):
    """A location or file cannot be listed, read or written (unreachable store, missing credentials, no
    filesystem for the scheme); the message is one line naming the location."""
