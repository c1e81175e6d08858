r"""Hive's name patterns (get_databases, get_tables, get_tables_by_type, get_table_meta).

Hive 2.3's ObjectStore trims the pattern, splits it on `|` into alternatives, turns every `*` into `.*` and matches
each alternative as a case-insensitive regular expression against the whole name. So `*`, `.*`, `test_.*` and
`a|b` match as in Hive; `p.*` does not match `p` (it became `p..*`), exactly as in Hive; an empty pattern matches
nothing; None (no pattern) matches everything.

An alternative that is not a valid regular expression, for any reason Python's `re` gives (bad syntax, groups
nested too deeply, a repetition count too large: see metastore.store.hive_regex), is InvalidInput naming it.
Hive 2.3 reports a Java PatternSyntaxException as MetaException, or on some databases silently matches nothing;
here a client's mistake gets the exception meant for bad input. Python's `re` evaluates the alternatives. It
agrees with Java's regular expressions on the usual syntax (classes, groups, quantifiers, anchors); constructs
only one of them knows (Java's `\p{Alpha}`, Python's `(?P<name>...)`) are errors or literals in the other.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from metastore.errors import InvalidInput
from metastore.store.hive_regex import BadRegex, compile_regex

MAX_PATTERN_LENGTH = 4000


def _split_alternatives(pattern: str) -> list[str]:
    # Java's String.split drops trailing empty strings ("a|" gives ["a"]) but keeps leading ones.
    parts = pattern.split("|")
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


def _shown(text: str) -> str:
    # A message stays one readable line even for a pattern thousands of characters long.
    return repr(text) if len(text) <= 80 else repr(text[:77] + "...")


def hive_name_matcher(pattern: str | None) -> Callable[[str], bool]:
    """A matcher of names for a Hive name pattern (see the module's docstring); InvalidInput for a pattern that
    is too long or holds an invalid regular expression."""
    if pattern is None:
        return lambda _name: True
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise InvalidInput(f"name pattern is {len(pattern)} characters long; the limit is {MAX_PATTERN_LENGTH}")
    compiled: list[re.Pattern[str]] = []
    for alternative in _split_alternatives(pattern.strip().lower()):
        regex = alternative.replace("*", ".*")
        try:
            compiled.append(compile_regex(regex, re.IGNORECASE))
        except BadRegex as exc:
            raise InvalidInput(
                f"name pattern {_shown(pattern)}: {_shown(alternative)} is not a valid regular expression "
                f"({exc.reason})"
            ) from None
    return lambda name: any(c.fullmatch(name) is not None for c in compiled)
