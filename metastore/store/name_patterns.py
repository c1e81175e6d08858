"""Hive's name patterns (get_databases, get_tables, get_tables_by_type, get_table_meta).

Hive 2.3's ObjectStore trims the pattern, splits it on `|` into alternatives, turns every `*` into `.*` and matches
each alternative as a case-insensitive regular expression against the whole name. So `*`, `.*`, `test_.*` and
`a|b` match as in Hive; `p.*` does not match `p` (it became `p..*`), exactly as in Hive; an empty pattern matches
nothing; None (no pattern) matches everything.

An alternative that is not a valid regular expression is InvalidInput naming it (Hive 2.3 reports a Java
PatternSyntaxException as MetaException, or on some databases silently matches nothing; a client's mistake gets
the exception meant for bad input here). Python's `re` evaluates the alternatives: it agrees with Java's regular
expressions on everything a name can contain (word characters) and the usual syntax (classes, groups, quantifiers).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from metastore.errors import InvalidInput

MAX_PATTERN_LENGTH = 4000


def _split_alternatives(pattern: str) -> list[str]:
    # Java's String.split drops trailing empty strings ("a|" gives ["a"]) but keeps leading ones.
    parts = pattern.split("|")
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


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
            compiled.append(re.compile(regex, re.IGNORECASE))
        except re.error as exc:
            raise InvalidInput(
                f"name pattern {pattern!r}: {alternative!r} is not a valid regular expression ({exc})"
            ) from None
    return lambda name: any(c.fullmatch(name) is not None for c in compiled)
