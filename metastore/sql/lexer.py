"""Tokenizer of the shell's Hive SQL: words, `backquoted` identifiers, string literals with Hive's escapes,
numbers (with Hive's L/S/Y/BD/D suffixes), symbols; `--` and `/* */` comments are skipped.

Every token knows where it starts (line:column), so the parser can point at what is wrong.
"""

from __future__ import annotations

import bisect
import enum
import re
from dataclasses import dataclass

from metastore.sql.errors import Position, SqlSyntaxError


class TokenKind(enum.Enum):
    WORD = "word"  # keywords and plain identifiers; the parser decides which
    QUOTED = "quoted identifier"
    STRING = "string"
    NUMBER = "number"
    SYMBOL = "symbol"
    EOF = "end of input"


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    text: str  # the source text of the token
    value: str  # the identifier, the unescaped string, the number text (without suffix) or the symbol
    position: Position
    end: int  # offset just after the token
    suffix: str = ""  # a number's type suffix (L, S, Y, BD, D), upper-case

    def is_word(self, *words: str) -> bool:
        return self.kind is TokenKind.WORD and self.value.upper() in words

    def is_symbol(self, *symbols: str) -> bool:
        return self.kind is TokenKind.SYMBOL and self.value in symbols

    def describe(self) -> str:
        """The token as an error message names it."""
        if self.kind is TokenKind.EOF:
            return "end of input"
        text = self.text if len(self.text) <= 40 else self.text[:37] + "..."
        # A string token may hold a newline or other control characters; the message stays one line.
        text = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)
        return f"'{text}'"


SYMBOLS = frozenset("(),;.=<>:*-+!")
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_INTEGER_WORD = re.compile(r"(\d+(?:[eE]\d+)?)(BD|[LSYD])?", re.IGNORECASE | re.ASCII)
_SINGLE_ESCAPES = {
    "0": "\0", "'": "'", '"': '"', "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "\\": "\\",
    # Hive keeps the backslash before % and _ (they stay escaped for LIKE patterns, as MySQL does).
    "%": "\\%", "_": "\\_",
}
_HEX = frozenset("0123456789abcdefABCDEF")
_DIGITS = frozenset("0123456789")


class LineMap:
    """Offsets to 1-based line:column positions."""

    def __init__(self, text: str) -> None:
        self._starts = [0] + [m.end() for m in re.finditer(r"\n", text)]

    def position(self, offset: int) -> Position:
        line = bisect.bisect_right(self._starts, offset) - 1
        return Position(line + 1, offset - self._starts[line] + 1, offset)


def unescape_string(body: str, start: Position, lines: LineMap, body_offset: int) -> str:
    """The value of a string literal's body (between its quotes) after Hive's escapes."""
    out: list[str] = []
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "u":
            digits = body[i + 2 : i + 6]
            if len(digits) != 4 or not all(d in _HEX for d in digits):
                raise SqlSyntaxError(
                    "invalid unicode escape in string literal: \\u needs four hex digits",
                    lines.position(body_offset + i),
                )
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        octal = body[i + 1 : i + 4]
        if len(octal) == 3 and octal[0] in "01" and octal[1] in "01234567" and octal[2] in "01234567":
            out.append(chr(int(octal, 8)))
            i += 4
            continue
        out.append(_SINGLE_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def tokenize(text: str) -> list[Token]:
    """All tokens of `text`, ending with an EOF token; SqlSyntaxError at the first character that cannot start one."""
    lines = LineMap(text)
    tokens: list[Token] = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c == "-" and text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        if c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise SqlSyntaxError("unterminated comment: /* has no closing */", lines.position(i))
            i = end + 2
            continue
        start = i
        if c in ("'", '"'):
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                raise SqlSyntaxError(f"unterminated string literal: no closing {c}", lines.position(start))
            body = text[i + 1 : j]
            value = unescape_string(body, lines.position(start), lines, i + 1)
            tokens.append(Token(TokenKind.STRING, text[start : j + 1], value, lines.position(start), j + 1))
            i = j + 1
            continue
        if c == "`":
            parts: list[str] = []
            j = i + 1
            while True:
                k = text.find("`", j)
                if k < 0:
                    raise SqlSyntaxError("unterminated quoted identifier: no closing `", lines.position(start))
                parts.append(text[j:k])
                if text.startswith("``", k):  # a doubled backquote is one backquote inside the name
                    parts.append("`")
                    j = k + 2
                    continue
                j = k + 1
                break
            name = "".join(parts)
            if not name:
                raise SqlSyntaxError("empty quoted identifier ``", lines.position(start))
            tokens.append(Token(TokenKind.QUOTED, text[start:j], name, lines.position(start), j))
            i = j
            continue
        if c in _WORD_CHARS and not (c in _DIGITS and _continues_number(text, i)):
            j = i
            while j < n and text[j] in _WORD_CHARS:
                j += 1
            word = text[i:j]
            m = _INTEGER_WORD.fullmatch(word) if c in _DIGITS else None
            if m:
                suffix = (m.group(2) or "").upper()
                tokens.append(Token(TokenKind.NUMBER, word, m.group(1), lines.position(start), j, suffix))
            else:
                # Hive identifiers may start with a digit (`1st_col`).
                tokens.append(Token(TokenKind.WORD, word, word, lines.position(start), j))
            i = j
            continue
        if c in _DIGITS or (c == "." and i + 1 < n and text[i + 1] in _DIGITS):
            m = _NUMBER.match(text, i)
            assert m is not None
            j = m.end()
            suffix = ""
            rest = text[j : j + 2].upper()
            if rest == "BD":
                suffix, j = "BD", j + 2
            elif rest[:1] in ("L", "S", "Y", "D"):
                suffix, j = rest[:1], j + 1
            if j < n and text[j] in _WORD_CHARS:
                k = j
                while k < n and text[k] in _WORD_CHARS:
                    k += 1
                raise SqlSyntaxError(f"invalid number '{text[start:k]}'", lines.position(start))
            tokens.append(Token(TokenKind.NUMBER, text[start:j], m.group(0), lines.position(start), j, suffix))
            i = j
            continue
        if c in SYMBOLS:
            tokens.append(Token(TokenKind.SYMBOL, c, c, lines.position(start), i + 1))
            i += 1
            continue
        raise SqlSyntaxError(f"unexpected character {c!r}", lines.position(start))
    tokens.append(Token(TokenKind.EOF, "", "", lines.position(n), n))
    return tokens


def _continues_number(text: str, i: int) -> bool:
    """Whether the digits at i go on as a decimal or exponent number (`1.5`, `1e-3`), not as a word."""
    m = _NUMBER.match(text, i)
    if m is None:
        return False
    body = m.group(0)
    return "." in body or "-" in body or "+" in body


def split_statements(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the statements of a script, split at `;` outside strings, names and comments.

    Pieces holding only whitespace and comments are left out. Raises SqlSyntaxError like tokenize."""
    tokens = tokenize(text)
    out: list[tuple[int, int]] = []
    first: Token | None = None
    last_end = 0
    for tok in tokens:
        if tok.kind is TokenKind.EOF or tok.is_symbol(";"):
            if first is not None:
                out.append((first.position.offset, last_end))
            first = None
            continue
        if first is None:
            first = tok
        last_end = tok.end
    return out


def statement_is_complete(text: str) -> bool:
    """Whether `text` ends with a `;` that is not inside a string, name or comment (the shell then runs it)."""
    try:
        tokens = tokenize(text)
    except SqlSyntaxError as exc:
        # An unterminated string or comment still waits for more lines; other errors are reported on Enter.
        return not exc.message.startswith(("unterminated string", "unterminated quoted", "unterminated comment"))
    meaningful = [t for t in tokens if t.kind is not TokenKind.EOF]
    return bool(meaningful) and meaningful[-1].is_symbol(";")
