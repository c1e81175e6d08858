"""Partition names: Hive's FileUtils.escapePathName / unescapePathName behaviour, building and parsing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metastore.errors import InvalidObject
from metastore.partnames import (
    DEFAULT_PARTITION_NAME,
    escape_path_name,
    make_part_name,
    parse_part_name,
    unescape_path_name,
    values_from_part_name,
)


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("2024-01-01", "2024-01-01"),
        ("a/b", "a%2Fb"),
        ("2024-01-01 10:00:00", "2024-01-01 10%3A00%3A00"),  # space is escaped on Windows only
        ("100%", "100%25"),
        ("a=b", "a%3Db"),
        ("x?*#'\"\\", "x%3F%2A%23%27%22%5C"),
        ("{[]}^", "%7B%5B%5D}%5E"),  # Hive escapes { but not }
        ("\x01\t\n\x1f\x7f", "%01%09%0A%1F%7F"),
        ("\x00", "%00"),
        ("é ü 日本", "é ü 日本"),  # only ASCII is ever escaped
        ("<>|~!@$&()+,;", "<>|~!@$&()+,;"),
        ("", DEFAULT_PARTITION_NAME),
        (None, DEFAULT_PARTITION_NAME),
    ],
)
def test_escape_matches_hive(raw: str | None, escaped: str) -> None:
    assert escape_path_name(raw) == escaped


@pytest.mark.parametrize(
    ("text", "unescaped"),
    [
        ("a%2Fb", "a/b"),
        ("%41", "A"),
        ("%41%4", "A%4"),  # a trailing '%' with fewer than two characters after it stays
        ("%4", "%4"),
        ("abc%", "abc%"),
        ("%zz", "%zz"),
        ("%%41", "%A"),
        ("%-1", "%-1"),  # Integer.parseInt("-1", 16) is negative: not decoded
        ("%+A", "\n"),  # ...but parseInt accepts a plus sign
        ("%-0", "\x00"),  # ...and "-0" is zero
        ("%e9", "\xe9"),  # lower-case hex works; codes above 0x7F decode to that code point
        ("plain", "plain"),
    ],
)
def test_unescape_matches_hive(text: str, unescaped: str) -> None:
    assert unescape_path_name(text) == unescaped


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1))
def test_unescape_inverts_escape(value: str) -> None:
    assert unescape_path_name(escape_path_name(value)) == value


def test_make_part_name_lowercases_keys_and_escapes() -> None:
    assert make_part_name(["DS", "Hr"], ["2024-01-01", "5"]) == "ds=2024-01-01/hr=5"
    assert make_part_name(["p"], ["a/b=c"]) == "p=a%2Fb%3Dc"
    with pytest.raises(InvalidObject, match="1 value"):
        make_part_name(["a", "b"], ["x"])


def test_parse_part_name() -> None:
    assert parse_part_name("ds=2024-01-01/hr=5") == [("ds", "2024-01-01"), ("hr", "5")]
    assert parse_part_name("p=a%2Fb%3Dc") == [("p", "a/b=c")]
    # Like Hive's ([^/]+)=([^/]+): the split is at the last '=' with text after it.
    assert parse_part_name("a=b=c") == [("a=b", "c")]
    assert parse_part_name("k=v=") == [("k", "v=")]
    for bad in ("", "novalue", "k=", "=v", "a=1//b=2", "a=1/"):
        with pytest.raises(InvalidObject):
            parse_part_name(bad)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1), min_size=1, max_size=4))
def test_parse_inverts_make(values: list[str]) -> None:
    keys = [f"k{i}" for i in range(len(values))]
    assert parse_part_name(make_part_name(keys, values)) == list(zip(keys, values, strict=True))


def test_values_from_part_name_orders_by_keys_and_checks_them() -> None:
    assert values_from_part_name("hr=5/ds=x", ["ds", "hr"]) == ["x", "5"]
    assert values_from_part_name("DS=x/HR=5", ["ds", "hr"]) == ["x", "5"]
    with pytest.raises(InvalidObject, match="missing hr"):
        values_from_part_name("ds=x", ["ds", "hr"])
    with pytest.raises(InvalidObject, match="unknown"):
        values_from_part_name("ds=x/hr=1/zz=2", ["ds", "hr"])
