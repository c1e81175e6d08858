"""Hive's basic statistics in table/partition parameters: numFiles, totalSize, numRows, rawDataSize and the
BASIC_STATS flag of COLUMN_STATS_ACCURATE (`{"BASIC_STATS":"true","COLUMN_STATS":{"a":"true"}}`).

The COLUMN_STATS part is kept by the metastore when column statistics are written; here it is only dropped
when data changes (the stored column statistics then no longer describe the data, as Hive marks them).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

COLUMN_STATS_ACCURATE = "COLUMN_STATS_ACCURATE"
NUM_FILES = "numFiles"
TOTAL_SIZE = "totalSize"
NUM_ROWS = "numRows"
RAW_DATA_SIZE = "rawDataSize"


def _parse(raw: str | None) -> tuple[bool, dict[str, str]]:
    if not raw:
        return False, {}
    try:
        doc = json.loads(raw)
    except ValueError:
        return raw.strip().lower() == "true", {}
    if not isinstance(doc, dict):
        return False, {}
    columns = doc.get("COLUMN_STATS")
    return (
        str(doc.get("BASIC_STATS", "false")).lower() == "true",
        {str(k): str(v) for k, v in columns.items()} if isinstance(columns, dict) else {},
    )


def _render(basic: bool, columns: Mapping[str, str]) -> str:
    doc: dict[str, object] = {}
    if basic:
        doc["BASIC_STATS"] = "true"
    if columns:
        doc["COLUMN_STATS"] = {k: columns[k] for k in sorted(columns)}
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def basic_stats_accurate(params: Mapping[str, str]) -> bool:
    return _parse(params.get(COLUMN_STATS_ACCURATE))[0]


def stats_accurate(params: Mapping[str, str], columns: Iterable[str]) -> bool:
    """Whether COLUMN_STATS_ACCURATE marks the basic statistics and those columns' statistics as accurate."""
    basic, flags = _parse(params.get(COLUMN_STATS_ACCURATE))
    return basic and all(flags.get(c, "").lower() == "true" for c in columns)


def with_basic_stats(
    params: Mapping[str, str], *, num_files: int, total_size: int, num_rows: int | None = None,
    raw_data_size: int | None = None,
) -> dict[str, str]:
    """Parameters with basic statistics set; BASIC_STATS is true only when the row count is known."""
    out = dict(params)
    out[NUM_FILES] = str(num_files)
    out[TOTAL_SIZE] = str(total_size)
    _, columns = _parse(out.get(COLUMN_STATS_ACCURATE))
    if num_rows is not None:
        out[NUM_ROWS] = str(num_rows)
        if raw_data_size is not None:
            out[RAW_DATA_SIZE] = str(raw_data_size)
        out[COLUMN_STATS_ACCURATE] = _render(True, columns)
    else:
        out.pop(NUM_ROWS, None)
        out.pop(RAW_DATA_SIZE, None)
        out[COLUMN_STATS_ACCURATE] = _render(False, columns)
    return out


def after_data_change(
    params: Mapping[str, str], *, num_files: int, total_size: int, added_rows: int | None,
    added_raw_size: int | None, replaced: bool,
) -> dict[str, str]:
    """Parameters after files were added (or, replaced=True, the data replaced) by INSERT or LOAD DATA.

    Row counts stay accurate when they were before (or the data was replaced) and the added rows are known;
    column statistics are no longer accurate."""
    out = dict(params)
    basic = basic_stats_accurate(params) or replaced
    old_rows = 0 if replaced else _int(params.get(NUM_ROWS))
    old_raw = 0 if replaced else _int(params.get(RAW_DATA_SIZE))
    out[NUM_FILES] = str(num_files)
    out[TOTAL_SIZE] = str(total_size)
    if basic and added_rows is not None and old_rows is not None:
        out[NUM_ROWS] = str(old_rows + added_rows)
        if added_raw_size is not None and old_raw is not None:
            out[RAW_DATA_SIZE] = str(old_raw + added_raw_size)
        else:
            out.pop(RAW_DATA_SIZE, None)
        out[COLUMN_STATS_ACCURATE] = _render(True, {})
    else:
        out.pop(NUM_ROWS, None)
        out.pop(RAW_DATA_SIZE, None)
        out[COLUMN_STATS_ACCURATE] = _render(False, {})
    return out


def _int(text: str | None) -> int | None:
    if text is None:
        return 0
    try:
        return int(text)
    except ValueError:
        return None
