"""Errors of the split-filtering indexes: each names the object it is about (index file, column, predicate)."""

from __future__ import annotations

from metastore.errors import InvalidInput, MetastoreError


class SplitIndexError(MetastoreError):
    """Base of the index package's errors."""


class IndexFileCorrupt(SplitIndexError):
    """An index file is missing, truncated, of another format or fails a checksum; `path` names it. Readers of
    the split filter catch it and keep the splits the file would have decided."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"index file {path}: {reason}")
        self.path = path
        self.reason = reason


class PredicateError(InvalidInput):
    """A predicate that cannot be used: malformed serialized form, unknown column, a literal that does not fit
    the column's type. `node` is the expression at fault (its `where` says where the user wrote it)."""

    def __init__(self, message: str, node: object | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.node = node


class UnsupportedColumn(InvalidInput):
    """A column whose type an index or a predicate cannot handle; the message names the column and the type."""


class IndexBuildError(SplitIndexError):
    """A data file could not be read while building an index; the message names the file."""
