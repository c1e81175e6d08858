"""Splitting long IN lists: databases and drivers degrade (or refuse) past about a thousand bound values."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

# Hive's hive.direct.sql.max.elements.in.clause default.
IN_LIST_LIMIT = 1000

# Rows per multi-row INSERT: ~20 columns each stays far below SQLite's 32766 and PostgreSQL's 65535
# bound-parameter limits.
INSERT_BATCH_ROWS = 500


def chunks(items: Sequence[T], size: int = IN_LIST_LIMIT) -> Iterator[Sequence[T]]:
    """Consecutive slices of at most `size` items."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
