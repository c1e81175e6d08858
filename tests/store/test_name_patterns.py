"""Hive's name patterns and the client regular expressions behind them and behind LIKE: on any pattern, the
answer is Python's re evaluated as Hive's rules say, or InvalidInput; nothing else ever escapes."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa
from hypothesis import example, given, settings
from hypothesis import strategies as st

from metastore.catalog import FieldSchema
from metastore.errors import InvalidInput
from metastore.store.hive_regex import BadRegex, compile_regex
from metastore.store.name_patterns import hive_name_matcher
from metastore.store.partition_filter import compile_filter

# Regex syntax, Hive's two pattern specials (* and |), letters a name may hold, and characters it may not.
_PATTERN_ALPHABET = st.sampled_from(list("ab_1.*+?|()[]{}^$\\-,:=!<>P0 ") + ["(?", "(?:", "{2}", "{1,", "\\d", "\\w"])
_NAME = st.text(st.sampled_from(list("abAB_1.-(")), max_size=8)


def _oracle(pattern: str, name: str) -> bool | None:
    """Hive 2.3's rule written out with Python's re: trim, lower-case, split on | (Java's split drops trailing
    empty parts), * becomes .*, each alternative matched case-insensitively against the whole name. None when
    re cannot compile an alternative, for whatever reason."""
    parts = pattern.strip().lower().split("|")
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    compiled = []
    for part in parts:
        try:
            compiled.append(re.compile(part.replace("*", ".*"), re.IGNORECASE))
        except (re.error, RecursionError, OverflowError):
            return None
    return any(c.fullmatch(name) is not None for c in compiled)


@settings(max_examples=600, deadline=None)
@given(pattern=st.lists(_PATTERN_ALPHABET, max_size=14).map("".join), names=st.lists(_NAME, min_size=1, max_size=6))
@example(pattern="*", names=["", "abc"])
@example(pattern="p.*", names=["p", "p1"])
@example(pattern=" A|b| ", names=["a", "b", " "])
@example(pattern="a|", names=["a", ""])
@example(pattern="|a", names=["a", ""])
@example(pattern="(a|b)", names=["a"])
@example(pattern="", names=["", "a"])
def test_the_matcher_is_pythons_re_under_hives_rules(pattern: str, names: list[str]) -> None:
    expected = {name: _oracle(pattern, name) for name in names}
    if any(v is None for v in expected.values()):
        with pytest.raises(InvalidInput, match="is not a valid regular expression"):
            hive_name_matcher(pattern)
        return
    matches = hive_name_matcher(pattern)
    assert {name: matches(name) for name in names} == expected


# Shapes that make re raise something other than re.error, among syntax it accepts.
_NASTY = st.one_of(
    st.integers(1, 3000).map(lambda n: "(" * n + "a" + ")" * n),
    st.integers(1, 3000).map(lambda n: "(?:" * n + "a" + ")" * n),
    st.integers(1, 3000).map(lambda n: "[" * n),
    st.integers(0, 2**70).map(lambda n: f"a{{{n}}}"),
    st.tuples(st.integers(0, 2**70), st.integers(0, 2**70)).map(lambda t: f"a{{{t[0]},{t[1]}}}"),
)


@settings(max_examples=80, deadline=None)
@given(pattern=_NASTY)
@example(pattern="(" * 1999 + "a" + ")" * 1999)
@example(pattern="a{99999999999}")
def test_only_invalid_input_escapes_on_deep_or_huge_patterns(pattern: str) -> None:
    try:
        matches = hive_name_matcher(pattern)
    except InvalidInput as exc:  # too long, or not a valid regular expression: one short line either way
        assert "\n" not in str(exc) and len(str(exc)) < 400, str(exc)
    else:
        assert [matches(n) for n in ("", "a", "aa")] == [_oracle(pattern, n) for n in ("", "a", "aa")]
    keys = [FieldSchema("p", "string")]
    for dialect in ("sqlite", "postgresql"):
        try:
            compile_filter(f'p like "{pattern}"', keys, lambda i: sa.column(f"k{i}"), dialect, lambda i: ["a"])
        except InvalidInput as exc:
            assert "not a valid regular expression" in str(exc)


def test_bad_regex_names_the_reason() -> None:
    with pytest.raises(BadRegex, match="nest too deeply"):
        compile_regex("(" * 5000 + ")" * 5000)
    with pytest.raises(BadRegex, match="repetition number is too large"):
        compile_regex("a{99999999999}")
    with pytest.raises(BadRegex, match="missing \\), unterminated subpattern"):
        compile_regex("(a")
    assert compile_regex("a.b", re.DOTALL).fullmatch("a\nb")
