r"""Regular expressions that clients send (name patterns, LIKE in partition and table filters), compiled safely.

Hive evaluates these with Java's regular expressions; we use Python's `re`, which agrees on the usual syntax.
`re` is a Python program: besides `re.error` for bad syntax, a pattern can make it raise RecursionError (groups
nested a few hundred deep), OverflowError (a repetition count beyond its limit) or, in principle, another error
of its own. Every one of them is the pattern's fault, so every one becomes `BadRegex` with a one-line reason,
and each caller turns that into the exception its call declares; none may reach a client as an internal error.

Where the two disagree on syntax Java accepts, the pattern is translated first (:func:`java_to_python`), so it
matches as Hive matches and Python's `re` never warns: Java's character classes nest (`[[a-z]]`, a union),
intersect (`[a-z&&[^aeiou]]`) and take a doubled `-`, `&`, `|` or `~` as literals, where Python's `re` reads
`[[` and the doubled characters literally today but emits a FutureWarning ("Possible nested set", "Possible
set intersection"...) for each new pattern, meaning to read them as set operations one day. Java's `\Q...\E`
quoting becomes escaped text. A negated class with nested classes or an intersection is the complement of the
whole class, as in Java 9 and later (Java 8, which Hive 2.3 runs on, negated only part of such a class).
"""

from __future__ import annotations

import re


class BadRegex(Exception):
    """A client's regular expression that Python's `re` cannot compile; `reason` says why, in one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def java_to_python(pattern: str) -> str:
    """A Java regular expression as Python's `re` reads it the same way (see the module's docstring). Other
    syntax is passed through unchanged, for `re` to read or refuse; BadRegex for a class that is never closed."""
    if "[" not in pattern and "\\Q" not in pattern:
        return pattern
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("\\Q", i):
            quoted, i = _quoted(pattern, i)
            out.append(re.escape(quoted))
        elif c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
        elif c == "[":
            fragment, i = _java_class(pattern, i)
            out.append(fragment)
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _quoted(pattern: str, start: int) -> tuple[str, int]:
    """The text of the \\Q quote at `start` (to its \\E, or to the end as in Java) and the index after it."""
    end = pattern.find("\\E", start + 2)
    return (pattern[start + 2 :], len(pattern)) if end < 0 else (pattern[start + 2 : end], end + 2)


def _java_class(pattern: str, start: int) -> tuple[str, int]:
    """The class opening at `start` as a Python fragment matching one character, and the index after it."""
    i, n = start + 1, len(pattern)
    negated = i < n and pattern[i] == "^"
    if negated:
        i += 1
    operands: list[str] = []  # the operands of && before the current union (each matches one character)
    items: list[str] = []  # the current union's own items, as a Python set's body
    nested: list[str] = []  # the current union's nested classes
    plain = True  # no nested class and no &&: the class is a Python set as it stands
    while True:
        if i >= n:
            raise BadRegex(f"the character class opened at position {start} is not closed")
        c = pattern[i]
        if c == "]" and (items or nested or operands):  # first in its class, `]` is a literal (as in Java)
            i += 1
            break
        if pattern.startswith("\\Q", i):
            quoted, i = _quoted(pattern, i)
            items.extend(re.escape(q) for q in quoted)
        elif c == "\\":
            items.append(pattern[i : i + 2])
            i += 2
        elif c == "[":
            fragment, i = _java_class(pattern, i)
            nested.append(fragment)
            plain = False
        elif pattern.startswith("&&", i):
            operands.append(_union(items, nested))
            items, nested = [], []
            plain = False
            i += 2
        else:
            # literals in Java; escaped, Python never reads them as set operations
            escape = c in "&|~^]" or (c == "-" and items[-1:] == ["-"])
            items.append("\\" + c if escape else c)
            i += 1
    if plain:
        return ("[^" if negated else "[") + "".join(items) + "]", i
    found = [o for o in (*operands, _union(items, nested)) if o]
    if not found:
        return "[]", i  # an empty class: invalid for Python's `re` too, which says so
    whole = found[0] if len(found) == 1 else "(?:" + "".join(f"(?={o})" for o in found[:-1]) + found[-1] + ")"
    return ("(?:(?!" + whole + ")[\\s\\S])" if negated else whole), i


def _union(items: list[str], nested: list[str]) -> str:
    parts = (["[" + "".join(items) + "]"] if items else []) + nested
    if not parts:
        return ""
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


def compile_regex(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`pattern` (Java syntax) compiled with `flags`; BadRegex (with the reason) for anything `re` refuses or
    fails on."""
    try:
        return re.compile(java_to_python(pattern), flags)
    except BadRegex:
        raise
    except re.error as exc:
        reason = str(exc)
    except RecursionError:
        reason = "its groups nest too deeply"
    except OverflowError as exc:
        reason = str(exc) or "a number in it is too large"
    except Exception as exc:  # noqa: BLE001 - re's own failure on a client's pattern; see the module docstring
        reason = f"{type(exc).__name__}: {exc}"
    raise BadRegex(reason)
