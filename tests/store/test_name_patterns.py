"""Hive's name patterns and the client regular expressions behind them and behind LIKE: on any pattern, the
answer is Python's re evaluated as Hive's rules say, or InvalidInput; nothing else ever escapes."""

from __future__ import annotations

import re
import warnings

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


def _nests_a_class(pattern: str) -> bool:
    """Whether a character class holds a `[`: Java reads a nested class (a union) there, Python a literal `[`,
    so Python's re is no oracle for such a pattern (Java's meaning is tested by example below)."""
    i, depth = 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            if depth:
                return True
            depth = 1
            i += 2 if pattern[i + 1 : i + 2] == "]" else 3 if pattern[i + 1 : i + 3] == "^]" else 1
            continue
        if c == "]" and depth:
            depth = 0
        i += 1
    return False


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
            with warnings.catch_warnings():  # Python's FutureWarning on a doubled `-` in a class: not our concern
                warnings.simplefilter("ignore", FutureWarning)
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
@example(pattern="a[b-]-[[^1]]", names=["a--x", "ab-1"])
def test_the_matcher_is_pythons_re_under_hives_rules(pattern: str, names: list[str]) -> None:
    if _nests_a_class(pattern):
        try:
            matches = hive_name_matcher(pattern)
        except InvalidInput as exc:
            assert "is not a valid regular expression" in str(exc)
        else:
            [matches(name) for name in names]
        return
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


# Java's meaning of each pattern, as java.util.regex.Pattern.matches answers on OpenJDK 17 (checked there): classes
# nest (a union), intersect with &&, take doubled -, &, |, ~ as literals, and \Q...\E quotes. Python's re reads
# some of these differently and warns (FutureWarning) about the others.
JAVA_CLASSES = [
    ("[[a-z]]", ["a", "z"], ["[", "]", "a]", "-"]),
    ("[a-z&&[^aeiou]]", ["b", "z"], ["a", "e", "1"]),
    ("[+--]", ["+", ",", "-"], ["a"]),
    ("[a||b]", ["a", "|", "b"], ["c"]),
    ("[~~x]", ["~", "x"], ["y"]),
    ("[]a]", ["]", "a"], ["b"]),
    ("[^]a]", ["b"], ["]", "a"]),
    ("[^a[b]]", ["c"], ["a", "b"]),  # Java 9+: the whole class negated (Java 8 negated only its own items)
    ("[a&b]", ["&", "a", "b"], ["c"]),
    ("\\Q[x]*\\E.*", ["[x]*", "[x]*yy"], ["x"]),
    ("[a-c[x-z]&&[b-y]]", ["b", "c", "x", "y"], ["a", "z"]),
    ("a[[bz]]c", ["abc", "azc"], ["a[c"]),
    ("[a^]", ["^", "a"], ["b"]),
    ("[^^]", ["a"], ["^"]),
    ("[\\Q]\\E]", ["]"], ["a", "\\"]),
]


@pytest.mark.parametrize(("pattern", "matching", "other"), JAVA_CLASSES, ids=[c[0] for c in JAVA_CLASSES])
def test_java_character_classes_match_as_in_java_without_warnings(
    pattern: str, matching: list[str], other: list[str]
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning here would be printed by the server for each new pattern
        compiled = compile_regex(pattern)
    assert [v for v in matching if not compiled.fullmatch(v)] == []
    assert [v for v in other if compiled.fullmatch(v)] == []


@pytest.mark.parametrize("pattern", ["[", "[]", "[[", "a[[b]", "[a&&[b", "[\\Qx"])
def test_an_unclosed_java_class_is_a_bad_regex_without_warnings(pattern: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(BadRegex, match="not closed"):
            compile_regex(pattern)


@pytest.mark.parametrize(("pattern", "reason"), [("[a--b]", "bad character range"), ("[z-a]", "bad character range")])
def test_classes_java_refuses_are_refused(pattern: str, reason: str) -> None:
    # Java: "Illegal character range" for both
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(BadRegex, match=reason):
            compile_regex(pattern)
