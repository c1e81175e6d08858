"""What a statement returns (`Result`) and how the shell prints it: aligned table, JSON or CSV."""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

OUTPUT_FORMATS = ("table", "json", "csv")


@dataclass
class Result:
    """Rows under column names (possibly none), and a status line for the user (possibly none)."""

    columns: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    message: str | None = None
    #: The statement did part of its work and failed the rest (the message says what): batch mode exits 1.
    failed: bool = False

    @property
    def has_table(self) -> bool:
        return bool(self.columns)


def cell_text(value: Any) -> str:
    """A value as the table and CSV formats show it (NULL for None)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _json_value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _width(text: str) -> int:
    """Columns the text takes in a terminal (East Asian wide characters take two)."""
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def _pad(text: str, width: int) -> str:
    return text + " " * (width - _width(text))


def _single_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")


def format_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """An aligned table with a header, as beeline prints it."""
    header = [_single_line(c) for c in columns]
    body = [[_single_line(cell_text(v)) for v in row] for row in rows]
    widths = [_width(h) for h in header]
    for row in body:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], _width(cell))
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(_pad(c, w) for c, w in zip(cells, widths, strict=True)) + " |"

    out = [rule, line(header), rule, *(line(r) for r in body), rule]
    return "\n".join(out)


def format_json(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """One JSON array of row objects on one line."""
    return json.dumps(
        [{c: _json_value(v) for c, v in zip(columns, row, strict=True)} for row in rows], ensure_ascii=False
    )


def format_csv(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """RFC 4180 CSV with a header row; NULL is an empty field."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if v is None else cell_text(v) for v in row])
    return buf.getvalue().rstrip("\n")


def format_result(result: Result, output: str) -> str | None:
    """The printable form of a result's rows in the chosen format, or None when it has no table."""
    if not result.has_table:
        return None
    if output == "json":
        return format_json(result.columns, result.rows)
    if output == "csv":
        return format_csv(result.columns, result.rows)
    return format_table(result.columns, result.rows)
