"""Regular expressions that clients send (name patterns, LIKE in partition and table filters), compiled safely.

Hive evaluates these with Java's regular expressions; we use Python's `re`, which agrees on the usual syntax.
`re` is a Python program: besides `re.error` for bad syntax, a pattern can make it raise RecursionError (groups
nested a few hundred deep), OverflowError (a repetition count beyond its limit) or, in principle, another error
of its own. Every one of them is the pattern's fault, so every one becomes `BadRegex` with a one-line reason,
and each caller turns that into the exception its call declares; none may reach a client as an internal error.
"""

from __future__ import annotations

import re


class BadRegex(Exception):
    """A client's regular expression that Python's `re` cannot compile; `reason` says why, in one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def compile_regex(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`pattern` compiled with `flags`; BadRegex (with the reason) for anything `re` refuses or fails on."""
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        reason = str(exc)
    except RecursionError:
        reason = "its groups nest too deeply"
    except OverflowError as exc:
        reason = str(exc) or "a number in it is too large"
    except Exception as exc:  # noqa: BLE001 - re's own failure on a client's pattern; see the module docstring
        reason = f"{type(exc).__name__}: {exc}"
    raise BadRegex(reason)
