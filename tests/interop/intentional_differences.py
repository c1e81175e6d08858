"""Where our server answers differently from the reference Hive Metastore 2.3.10 on purpose, each with its reason.

The differential test (test_differential.py) compares both servers call by call; every difference it finds must be
covered by one entry here, and every whole-answer entry must still differ (a stale entry fails the test too).
`as_markdown()` renders the list for the README.

Steps and paths are fnmatch patterns. A path names a field inside a normalised answer, with list indices written
as `[]` (e.g. `colStats[].statsData.decimalStats.lowValue`); an entry without a path covers the whole answer.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IntentionalDifference:
    steps: tuple[str, ...]
    path: str | None
    reason: str


INTENTIONAL_DIFFERENCES: tuple[IntentionalDifference, ...] = (
    IntentionalDifference(
        (
            "get_table_column_statistics_none",
            "get_partition_column_statistics_none",
            "get_table_column_statistics_missing_column",
            "get_table_column_statistics_deleted",
            "get_partition_column_statistics_deleted",
        ),
        None,
        "Statistics that do not exist raise NoSuchObjectException, as the Thrift IDL documents; HMS 2.3 sends a "
        "reply with no result, which clients report as TApplicationException 'unknown result'.",
    ),
    IntentionalDifference(
        ("get_*statistics*",),
        "*lastAnalyzed",
        "lastAnalyzed is the time the client analyzed the data, so it is kept as sent; HMS 2.3 overwrites it with "
        "the server's clock.",
    ),
    IntentionalDifference(
        (
            "update_table_column_statistics_negative_nulls",
            "update_table_column_statistics_low_above_high",
            "update_table_column_statistics_kind_mismatch",
        ),
        None,
        "Statistics that contradict themselves or the column type (negative counts, low > high, doubleStats for an "
        "int column) are refused with InvalidInputException; HMS 2.3 stores them.",
    ),
    IntentionalDifference(
        ("get_table_column_statistics_after_invalid", "get_table_statistics_req_after_delete"),
        "*.statsData.longStats.*",
        "Follows from refusing invalid statistics: HMS 2.3 now holds the invalid c_int values written just before.",
    ),
    IntentionalDifference(
        ("update_table_column_statistics_missing_column",),
        None,
        "Statistics for a column the table lacks are refused with InvalidInputException naming the column "
        "(the rule the issue sets for every invalid statistic); HMS 2.3 raises MetaException.",
    ),
    IntentionalDifference(
        ("get_aggr_stats_for",),
        "colStats[].statsData.decimalStats.*Value",
        "Aggregated decimal low/high keep their exact value and scale (-3.50); HMS 2.3's direct-SQL aggregation "
        "goes through a lossy conversion and answers -3 and 300 for -3.50 and 300.25.",
    ),
    IntentionalDifference(
        (
            "update_table_column_statistics_req",
            "update_partition_column_statistics_req",
            "delete_column_statistics_req",
        ),
        None,
        "Hive 4 calls (request-object statistics writes, delete_column_statistics_req) are served; HMS 2.3 answers "
        "TApplicationException 'Invalid method name'.",
    ),
    IntentionalDifference(
        ("get_table_column_statistics_timestamp_stats",),
        None,
        "Hive 4's timestampStats (union member 8) are stored and served; HMS 2.3 cannot decode the member, "
        "accepts the write as an empty union and keeps the old statistics.",
    ),
    IntentionalDifference(
        ("*",),
        "*catName",
        "Catalog fields follow the client's Hive generation: a client that has shown none yet (here, before its "
        "first table) gets catName 'hive', as from Hive 3+ (pymetastore asserts Partition.catName is a string); "
        "HMS 2.3.10 leaves it unset, though Hive 2.3.10's Partition declares it (field 9) and compares it in "
        "equals(). A client sending Tables without ownerType (a Hive 2 IDL), or calling set_ugi first as Hive's "
        "Java client does, gets it unset as from HMS 2.3.10.",
    ),
    IntentionalDifference(
        ("*",),
        "*catalogName",
        "Database.catalogName, as catName: 'hive' (Hive 3+) until the client shows it speaks Hive 2's IDL; "
        "HMS 2.3.10 leaves it unset (Hive 2.3.10's Database declares it as field 8).",
    ),
    IntentionalDifference(
        ("get_table*",),
        "*ownerType",
        "Tables carry ownerType (Hive 3's field 18, USER unless the client says otherwise), as from Hive 3+: the "
        "server tells Hive 3+ clients by it and answers as one. HMS 2.3.10's Table has no such field, so Hive 2 "
        "clients skip it.",
    ),
    IntentionalDifference(
        ("*",),
        "*isStatsCompliant",
        "Hive 4 field describing transactional statistics; HMS 2.3 does not send it.",
    ),
    IntentionalDifference(
        ("get_table_after_alter",),
        "spark.sql.statistics.totalSize",
        "A table that shows any spark.sql.statistics.* property also shows spark.sql.statistics.totalSize (Hive's "
        "totalSize, else rawDataSize, else Spark's own 'unknown', Long.MaxValue): Spark's catalog cannot read a "
        "table whose statistics properties lack it. HMS 2.3 returns the properties as stored.",
    ),
    # Issue 14's catalog semantics (differential_catalog_semantics.py): where HMS 2.3 on Derby answers by
    # DataNucleus's limits rather than Hive's documented rules, or Hive 4's behaviour is kept.
    IntentionalDifference(
        ("semantics_get_tables_invalid_regex",),
        None,
        (
            "An invalid regular expression in a name pattern is a MetaException naming the bad alternative (the "
            "only exception get_tables declares; the server's error is InvalidInput); HMS 2.3 on Derby answers an "
            "empty list (DataNucleus turns the pattern into SQL LIKE), on other databases it can fail with "
            "PatternSyntaxException."
        ),
    ),
    IntentionalDifference(
        ("semantics_get_tables_char_class",),
        None,
        (
            "Name patterns are evaluated as the regular expressions Hive documents ([..], +, ?, groups); HMS 2.3 "
            "on Derby supports only '.', '.*' and literal text (DataNucleus's regex-to-LIKE translation)."
        ),
    ),
    IntentionalDifference(
        ("semantics_filter_like_char_class",),
        None,
        (
            "LIKE in a partition filter is a whole-value regular expression with every construct; HMS 2.3 on "
            "Derby supports only '.', '.*' and literal text (DataNucleus's regex-to-LIKE translation)."
        ),
    ),
    IntentionalDifference(
        ("semantics_filter_like_invalid_regex",),
        None,
        (
            "An invalid LIKE regular expression is a MetaException naming it and its position; HMS 2.3 on Derby "
            "answers an empty list."
        ),
    ),
    IntentionalDifference(
        ("semantics_create_table_relative_location",),
        None,
        (
            "A relative location is InvalidObjectException saying so; HMS 2.3 answers MetaException with Java's "
            "URISyntaxException text."
        ),
    ),
)


def as_markdown() -> str:
    """The list as a Markdown table (for the README)."""
    lines = ["| calls | field | why |", "|---|---|---|"]
    for d in INTENTIONAL_DIFFERENCES:
        steps = ", ".join(f"`{s}`" for s in d.steps)
        path = f"`{d.path}`" if d.path else "whole answer"
        lines.append(f"| {steps} | {path} | {d.reason} |")
    return "\n".join(lines)
