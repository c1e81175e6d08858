"""Hive's basic statistics in table/partition parameters: numFiles, totalSize, numRows, rawDataSize and the
BASIC_STATS flag of COLUMN_STATS_ACCURATE (`{"BASIC_STATS":"true","COLUMN_STATS":{"a":"true"}}`).

The COLUMN_STATS part is kept by the metastore when column statistics are written; here it is only dropped
when data changes (the stored column statistics then no longer describe the data, as Hive marks them). The
parameter's value is read and written by metastore.stats.accurate, as the metastore does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from metastore.stats.accurate import COLUMN_STATS_ACCURATE, all_accurate, basic_accurate, with_basic

NUM_FILES = "numFiles"
TOTAL_SIZE = "totalSize"
NUM_ROWS = "numRows"
RAW_DATA_SIZE = "rawDataSize"


def basic_stats_accurate(params: Mapping[str, str]) -> bool:
    return basic_accurate(params.get(COLUMN_STATS_ACCURATE))


def stats_accurate(params: Mapping[str, str], columns: Iterable[str]) -> bool:
    """Whether COLUMN_STATS_ACCURATE marks the basic statistics and those columns' statistics as accurate."""
    return all_accurate(params.get(COLUMN_STATS_ACCURATE), columns)


def with_basic_stats(
    params: Mapping[str, str], *, num_files: int, total_size: int, num_rows: int | None = None,
    raw_data_size: int | None = None,
) -> dict[str, str]:
    """Parameters with basic statistics set; BASIC_STATS is true only when the row count is known."""
    out = dict(params)
    out[NUM_FILES] = str(num_files)
    out[TOTAL_SIZE] = str(total_size)
    if num_rows is not None:
        out[NUM_ROWS] = str(num_rows)
        if raw_data_size is not None:
            out[RAW_DATA_SIZE] = str(raw_data_size)
        out[COLUMN_STATS_ACCURATE] = with_basic(out.get(COLUMN_STATS_ACCURATE), True)
    else:
        out.pop(NUM_ROWS, None)
        out.pop(RAW_DATA_SIZE, None)
        out[COLUMN_STATS_ACCURATE] = with_basic(out.get(COLUMN_STATS_ACCURATE), False)
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
        out[COLUMN_STATS_ACCURATE] = with_basic(None, True)
    else:
        out.pop(NUM_ROWS, None)
        out.pop(RAW_DATA_SIZE, None)
        out[COLUMN_STATS_ACCURATE] = with_basic(None, False)
    return out


def _int(text: str | None) -> int | None:
    if text is None:
        return 0
    try:
        return int(text)
    except ValueError:
        return None
