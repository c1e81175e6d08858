"""The COLUMN_STATS_ACCURATE table/partition parameter, kept as Hive's StatsSetupConst keeps it.

Value: `{"BASIC_STATS":"true","COLUMN_STATS":{"a":"true","b":"true"}}`, compact JSON, BASIC_STATS only when
true, COLUMN_STATS only when non-empty and sorted by column name (Hive serialises a TreeMap with Jackson).
Hive, Impala and Spark read it to decide whether stored statistics can be trusted.

The one reading and writing of the value: the store marks columns when their statistics are written or deleted,
the service checks BASIC_STATS before trusting numRows, and the shell (metastore.sql.basic_stats) sets
BASIC_STATS after ANALYZE, INSERT and LOAD DATA. Standard library only, so the shell's client side can use it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping

COLUMN_STATS_ACCURATE = "COLUMN_STATS_ACCURATE"


def _parse(raw: str | None) -> tuple[bool, dict[str, bool]]:
    """(basic stats accurate, {column: accurate}); unreadable values count as empty, the bare legacy
    value "true" as basic stats only, as Hive does."""
    if raw is None:
        return False, {}
    try:
        doc = json.loads(raw)
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        # Hive's parseStatsAcc: whatever Jackson cannot read as the object (including the JSON literal true)
        # counts as basic statistics accurate when it says "true".
        return raw.strip().lower() == "true", {}
    basic = str(doc.get("BASIC_STATS", "false")).lower() == "true"
    columns_doc = doc.get("COLUMN_STATS") or {}
    if not isinstance(columns_doc, dict):
        return basic, {}
    return basic, {str(k): str(v).lower() == "true" for k, v in columns_doc.items()}


def _render(basic: bool, columns: Mapping[str, bool]) -> str:
    doc: dict[str, object] = {}
    if basic:
        doc["BASIC_STATS"] = "true"
    if columns:
        doc["COLUMN_STATS"] = {k: "true" if columns[k] else "false" for k in sorted(columns)}
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def basic_accurate(raw: str | None) -> bool:
    """Whether the parameter value marks the basic statistics (numFiles, totalSize, numRows, rawDataSize) as
    accurate."""
    return _parse(raw)[0]


def all_accurate(raw: str | None, columns: Iterable[str]) -> bool:
    """Whether the parameter value marks the basic statistics and every one of `columns`' statistics as
    accurate."""
    basic, accurate = _accurate_columns(raw)
    return basic and all(c in accurate for c in columns)


@functools.lru_cache(maxsize=256)
def _accurate_columns(raw: str | None) -> tuple[bool, frozenset[str]]:
    """(basic stats accurate, the columns marked accurate) of a value, parsed once per value (the partitions of
    a table mostly hold the same one)."""
    basic, cols = _parse(raw)
    return basic, frozenset(c for c, ok in cols.items() if ok)


def with_basic(raw: str | None, basic: bool) -> str:
    """The parameter value with BASIC_STATS set to `basic` and its column flags kept (raw None: none, as after a
    data change, when the stored column statistics no longer describe the data)."""
    return _render(basic, _parse(raw)[1])


def columns_marked_accurate(raw: str | None) -> list[str]:
    """The columns whose statistics the parameter value says are accurate."""
    return [c for c, ok in _parse(raw)[1].items() if ok]


def listed_columns(raw: str | None) -> list[str]:
    """Every column the parameter value lists, accurate or not."""
    return list(_parse(raw)[1])


def with_columns_accurate(raw: str | None, columns: Iterable[str]) -> str:
    """The parameter value after statistics of `columns` were written (a column already listed keeps its flag,
    as Hive's setColumnStatsState does)."""
    return _with_columns_accurate(raw, tuple(columns))


@functools.lru_cache(maxsize=1024)
def _with_columns_accurate(raw: str | None, columns: tuple[str, ...]) -> str:
    # Memoized: every statistics write asks this, nearly always with the value it asked last time.
    basic, cols = _parse(raw)
    for c in columns:
        cols.setdefault(c, True)
    return _render(basic, cols)


def without_columns(raw: str, columns: Iterable[str]) -> str:
    """The parameter value after statistics of `columns` were deleted."""
    basic, cols = _parse(raw)
    for c in columns:
        cols.pop(c, None)
    return _render(basic, cols)


def params_with_columns_removed(params: Mapping[str, str], columns: Iterable[str]) -> dict[str, str]:
    """A copy of table/partition parameters with `columns` dropped from COLUMN_STATS_ACCURATE, if present."""
    out = dict(params)
    raw = out.get(COLUMN_STATS_ACCURATE)
    if raw is not None:
        out[COLUMN_STATS_ACCURATE] = without_columns(raw, columns)
    return out
