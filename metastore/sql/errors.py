"""Errors of the SQL shell: each carries the position (line:column, 1-based) in the text the user typed."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Position:
    """A place in the SQL text: line and column, both 1-based, and the character offset."""

    line: int
    column: int
    offset: int = 0

    def __str__(self) -> str:
        return f"{self.line}:{self.column}"


class SqlError(Exception):
    """A statement the shell cannot run; `position` points at what was wrong, when known."""

    def __init__(self, message: str, position: Position | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.position = position

    def __str__(self) -> str:
        if self.position is None:
            return self.message
        return f"line {self.position}: {self.message}"


class SqlSyntaxError(SqlError):
    """The text is not a statement of the shell's grammar (raised by the tokenizer and the parser only)."""
