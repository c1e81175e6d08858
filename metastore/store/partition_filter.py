r"""Hive's partition filter language (get_partitions_by_filter) parsed and compiled to SQL over
PARTITION_KEY_VALS.

Accepted, after Hive 4's PartitionFilter grammar plus a general NOT:
    filter    := or
    or        := and (OR and)*
    and       := not (AND not)*
    not       := NOT not | '(' or ')' | condition
    condition := key op const | const op key | key [NOT] BETWEEN const AND const
               | key [NOT] IN '(' const (',' const)* ')' | '(' key ')' [NOT] IN (...) | key [NOT] LIKE const
    op        := = | == | <=> | != | <> | < | <= | > | >=
    const     := 'string' | "string" (adjacent strings concatenate) | [-]integer | DATE 'yyyy-mm-dd'
               | TIMESTAMP '...' | yyyy-mm-dd | yyyy-mm-dd hh:mm:ss
    key       := word of letters, digits, _ | `quoted` (`` for a backquote)
Keywords are case-insensitive. Keys of integral types (tinyint, smallint, int, bigint) compare numerically
(values that are not integers, such as __HIVE_DEFAULT_PARTITION__, match no comparison); every other key
compares as text, in byte order on both databases.

LIKE is a regular expression matched against the whole value, case-sensitively, as in Hive 2.3 (whose JDO filter
calls Java's String.matches): `p1 like "p1.*"`. The pattern is the string literal's text as written (backslashes
stay, so `"ab\.c"` matches a literal dot), evaluated with Python's `re`, which agrees with Java's regular
expressions on the usual syntax; `.` matches any character, line breaks included, as the reference answers.
SQLite evaluates it through a function registered on the connection (`register_sqlite_functions`); on PostgreSQL
the values of the key that match are found in Python and the query keeps those (PostgreSQL's `~` is a different
regex dialect), so both databases answer alike.
Every error is InvalidInput naming the position.
"""

from __future__ import annotations

import datetime
import functools
import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from metastore.catalog import FieldSchema
from metastore.errors import InvalidInput
from metastore.store.hive_regex import BadRegex, compile_regex

MAX_FILTER_LENGTH = 100_000
MAX_NESTING = 100
_INT64 = (-(2**63), 2**63 - 1)
INTEGRAL_TYPES = frozenset(["tinyint", "smallint", "int", "integer", "bigint"])

# ---------------------------------------------------------------- syntax tree


@dataclass(frozen=True)
class Key:
    name: str
    pos: int


@dataclass(frozen=True)
class Literal:
    value: str | int
    kind: str  # "string", "int", "date" or "timestamp"
    pos: int
    raw: str | None = None  # a string literal's text between its quotes, escapes not applied (LIKE's regex)


@dataclass(frozen=True)
class Compare:
    key: Key
    op: str  # =, !=, <, <=, >, >=, LIKE
    value: Literal


@dataclass(frozen=True)
class Between:
    key: Key
    low: Literal
    high: Literal
    negated: bool


@dataclass(frozen=True)
class In:
    key: Key
    values: tuple[Literal, ...]
    negated: bool


@dataclass(frozen=True)
class Not:
    operand: Node


@dataclass(frozen=True)
class And:
    operands: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    operands: tuple[Node, ...]


Node = Compare | Between | In | Not | And | Or

# ---------------------------------------------------------------- tokens


@dataclass(frozen=True)
class _Token:
    kind: str  # ( ) , - OP STRING INT DATE TIMESTAMP WORD QWORD EOF
    text: str
    pos: int
    value: str = ""


_KEYWORDS = frozenset(["AND", "OR", "NOT", "BETWEEN", "IN", "LIKE", "STRUCT", "CONST"])
_OPERATORS = ("<=>", "<=", "<>", ">=", "==", "!=", "<", ">", "=")
_WORD = re.compile(r"[A-Za-z0-9_]+")
_TIMESTAMP_VALUE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")
_DATE_VALUE = re.compile(r"\d{4}-\d{2}-\d{2}")
_SPACE = " \t\r\n\f"


class _Error(Exception):
    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _SPACE:
            i += 1
        elif c in "(),":
            tokens.append(_Token(c, c, i))
            i += 1
        elif c == "-":
            tokens.append(_Token("-", c, i))
            i += 1
        elif c in "<>=!":
            for op in _OPERATORS:
                if text.startswith(op, i):
                    tokens.append(_Token("OP", op, i))
                    i += len(op)
                    break
            else:
                raise _Error(f"unexpected character {c!r}", i)
        elif c in "'\"":
            start = i
            i += 1
            out: list[str] = []
            while True:
                if i >= n:
                    raise _Error("string literal is not closed", start)
                ch = text[i]
                if ch == "\\":
                    if i + 1 >= n:
                        raise _Error("string literal is not closed", start)
                    out.append(text[i + 1])
                    i += 2
                elif ch == c:
                    i += 1
                    break
                else:
                    out.append(ch)
                    i += 1
            tokens.append(_Token("STRING", text[start:i], start, "".join(out)))
        elif c == "`":
            start = i
            i += 1
            out = []
            while True:
                if i >= n:
                    raise _Error("quoted name is not closed", start)
                if text[i] == "`":
                    if text.startswith("``", i):
                        out.append("`")
                        i += 2
                        continue
                    i += 1
                    break
                out.append(text[i])
                i += 1
            if not out:
                raise _Error("quoted name is empty", start)
            tokens.append(_Token("QWORD", text[start:i], start, "".join(out)))
        elif c.isascii() and (c.isalnum() or c == "_"):
            m = _TIMESTAMP_VALUE.match(text, i) or _DATE_VALUE.match(text, i)
            w = _WORD.match(text, i)
            assert w is not None
            if m and m.end() > w.end():
                kind = "TIMESTAMP" if " " in m.group() else "DATE"
                tokens.append(_Token(kind, m.group(), i, m.group()))
                i = m.end()
                continue
            word = w.group()
            tokens.append(_Token("INT" if word.isdigit() else "WORD", word, i, word))
            i = w.end()
        else:
            raise _Error(f"unexpected character {c!r}", i)
    tokens.append(_Token("EOF", "", n))
    return tokens


# ---------------------------------------------------------------- parser


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.i = 0
        self.depth = 0

    def peek(self, offset: int = 0) -> _Token:
        return self.tokens[min(self.i + offset, len(self.tokens) - 1)]

    def is_keyword(self, tok: _Token, word: str) -> bool:
        return tok.kind == "WORD" and tok.text.upper() == word

    def accept_keyword(self, word: str) -> bool:
        if self.is_keyword(self.peek(), word):
            self.i += 1
            return True
        return False

    def expect(self, kind: str, what: str) -> _Token:
        tok = self.peek()
        if tok.kind != kind:
            raise _Error(f"expected {what}, found {_describe(tok)}", tok.pos)
        self.i += 1
        return tok

    def parse(self) -> Node:
        node = self.parse_or()
        tok = self.peek()
        if tok.kind != "EOF":
            raise _Error(f"expected AND, OR or the end of the filter, found {_describe(tok)}", tok.pos)
        return node

    def nest(self, pos: int) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise _Error(f"filter nests deeper than {MAX_NESTING} levels", pos)

    def parse_or(self) -> Node:
        items = [self.parse_and()]
        while self.accept_keyword("OR"):
            items.append(self.parse_and())
        return items[0] if len(items) == 1 else Or(tuple(items))

    def parse_and(self) -> Node:
        items = [self.parse_not()]
        while self.accept_keyword("AND"):
            items.append(self.parse_not())
        return items[0] if len(items) == 1 else And(tuple(items))

    def parse_not(self) -> Node:
        tok = self.peek()
        if self.accept_keyword("NOT"):
            self.nest(tok.pos)
            node: Node = Not(self.parse_not())
            self.depth -= 1
            return node
        if tok.kind == "(":
            if self._parenthesized_key_in():
                self.i += 1
                key = self.parse_key()
                self.expect(")", "')'")
                return self.parse_key_condition(key)
            self.nest(tok.pos)
            self.i += 1
            node = self.parse_or()
            self.expect(")", "')'")
            self.depth -= 1
            return node
        return self.parse_condition()

    def _parenthesized_key_in(self) -> bool:
        # Hive writes IN conditions as `(key) IN (...)`.
        if self.peek(1).kind not in ("WORD", "QWORD") or self.peek(2).kind != ")":
            return False
        if self.peek(1).kind == "WORD" and self.peek(1).text.upper() in _KEYWORDS:
            return False
        after = self.peek(3)
        return self.is_keyword(after, "IN") or (
            self.is_keyword(after, "NOT") and self.is_keyword(self.peek(4), "IN")
        )

    def starts_key(self) -> bool:
        tok = self.peek()
        if tok.kind == "QWORD":
            return True
        if tok.kind != "WORD" or tok.text.upper() in _KEYWORDS:
            return False
        # DATE '...' and TIMESTAMP '...' are literals; otherwise those words name a key.
        return not (tok.text.upper() in ("DATE", "TIMESTAMP") and self.peek(1).kind == "STRING")

    def parse_key(self) -> Key:
        tok = self.peek()
        if not self.starts_key():
            raise _Error(f"expected a partition key, found {_describe(tok)}", tok.pos)
        self.i += 1
        return Key(name=tok.value, pos=tok.pos)

    def parse_condition(self) -> Node:
        if self.starts_key():
            return self.parse_key_condition(self.parse_key())
        tok = self.peek()
        if tok.kind in ("STRING", "INT", "DATE", "TIMESTAMP", "-") or (
            tok.kind == "WORD" and tok.text.upper() in ("DATE", "TIMESTAMP")
        ):
            value = self.parse_constant()
            op_tok = self.peek()
            if op_tok.kind != "OP":
                raise _Error(
                    f"expected a comparison operator after the value, found {_describe(op_tok)}", op_tok.pos
                )
            self.i += 1
            key = self.parse_key()
            return Compare(key=key, op=_FLIPPED[_normal_op(op_tok.text)], value=value)
        raise _Error(f"expected a condition on a partition key, found {_describe(tok)}", tok.pos)

    def parse_key_condition(self, key: Key) -> Node:
        negated = self.accept_keyword("NOT")
        tok = self.peek()
        if self.accept_keyword("BETWEEN"):
            low = self.parse_constant()
            if not self.accept_keyword("AND"):
                raise _Error(f"expected AND in BETWEEN, found {_describe(self.peek())}", self.peek().pos)
            high = self.parse_constant()
            return Between(key=key, low=low, high=high, negated=negated)
        if self.accept_keyword("IN"):
            self.expect("(", "'(' after IN")
            values = [self.parse_constant()]
            while self.peek().kind == ",":
                self.i += 1
                values.append(self.parse_constant())
            self.expect(")", "')' or ',' in the IN list")
            return In(key=key, values=tuple(values), negated=negated)
        if self.accept_keyword("LIKE"):
            node: Node = Compare(key=key, op="LIKE", value=self.parse_constant())
            return Not(node) if negated else node
        if negated:
            raise _Error(f"expected BETWEEN, IN or LIKE after NOT, found {_describe(tok)}", tok.pos)
        if tok.kind != "OP":
            raise _Error(
                f"expected a comparison operator after key {key.name!r}, found {_describe(tok)}", tok.pos
            )
        self.i += 1
        return Compare(key=key, op=_normal_op(tok.text), value=self.parse_constant())

    def parse_constant(self) -> Literal:
        tok = self.peek()
        if tok.kind == "STRING":
            parts, raw = [], []
            while self.peek().kind == "STRING":
                parts.append(self.peek().value)
                raw.append(self.peek().text[1:-1])
                self.i += 1
            return Literal("".join(parts), "string", tok.pos, "".join(raw))
        if tok.kind == "-":
            self.i += 1
            digits = self.expect("INT", "digits after '-'")
            return Literal(-int(digits.text), "int", tok.pos)
        if tok.kind == "INT":
            self.i += 1
            return Literal(int(tok.text), "int", tok.pos)
        if tok.kind in ("DATE", "TIMESTAMP"):
            self.i += 1
            return Literal(_checked_datetime(tok.value, tok.kind, tok.pos), tok.kind.lower(), tok.pos)
        if tok.kind == "WORD" and tok.text.upper() in ("DATE", "TIMESTAMP") and self.peek(1).kind == "STRING":
            self.i += 1
            value = self.peek()
            self.i += 1
            kind = tok.text.upper()
            return Literal(_checked_datetime(value.value, kind, value.pos), kind.lower(), tok.pos)
        raise _Error(
            f"expected a value (a quoted string, an integer or a date), found {_describe(tok)}", tok.pos
        )


_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _normal_op(op: str) -> str:
    return {"==": "=", "<=>": "=", "<>": "!="}.get(op, op)


def _checked_datetime(text: str, kind: str, pos: int) -> str:
    try:
        if kind == "DATE":
            datetime.date.fromisoformat(text.strip())
        else:
            datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise _Error(f"{text!r} is not a valid {kind.lower()}", pos) from None
    return text.strip()


def _describe(tok: _Token) -> str:
    if tok.kind == "EOF":
        return "the end of the filter"
    shown = tok.text if len(tok.text) <= 30 else tok.text[:27] + "..."
    return repr(shown)


def _fail(
    text: str, message: str, pos: int, *, syntax: bool = False, what: str = "partition filter"
) -> InvalidInput:
    shown = text if len(text) <= 200 else text[:197] + "..."
    # A syntax error starts with Hive's own words, which clients (and Hive's tests) look for; Hive's table
    # filter shares the partition filter's parser and its words.
    lead = "Error parsing partition filter; " if syntax else ""
    return InvalidInput(f"{lead}invalid {what} {shown!r}: {message} at position {pos}")


def parse_filter(text: str, what: str = "partition filter") -> Node:
    """The syntax tree of a filter (`what` names it in messages: a partition filter, or a table filter, which
    has the same language); InvalidInput (naming the position) for anything malformed."""
    if not isinstance(text, str):
        raise InvalidInput(f"{what} must be a string, got {type(text).__name__}")
    if len(text) > MAX_FILTER_LENGTH:
        raise InvalidInput(f"{what} is {len(text)} characters long; the limit is {MAX_FILTER_LENGTH}")
    if not text.strip():
        raise InvalidInput(f"{what} is empty")
    try:
        return _Parser(text).parse()
    except _Error as err:
        raise _fail(text, err.message, err.pos, syntax=True, what=what) from None


# ---------------------------------------------------------------- compiler


SQLITE_REGEXP_FUNCTION = "metastore_regexp_match"


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    # DOTALL: `.` matches a line break too, as the reference (HMS 2.3, whose database query turns `.` into
    # SQL's `_`) answers for a value holding one.
    return compile_regex(pattern, re.DOTALL)


def _sqlite_regexp_match(pattern: str | None, value: str | None) -> int:
    if pattern is None or value is None:
        return 0
    try:
        return int(_regex(pattern).fullmatch(value) is not None)
    except BadRegex:  # compile_filter validated the pattern; never raise inside SQLite
        return 0


def register_sqlite_functions(dbapi_connection: sqlite3.Connection) -> None:
    """Give an SQLite connection the function LIKE filters compile to (idempotent, cheap)."""
    dbapi_connection.create_function(SQLITE_REGEXP_FUNCTION, 2, _sqlite_regexp_match, deterministic=True)


def compile_filter(
    text: str,
    keys: Sequence[FieldSchema],
    key_value: Callable[[int], sa.ColumnElement[str]],
    dialect: str,
    key_values: Callable[[int], Sequence[str]] | None = None,
) -> sa.ColumnElement[bool]:
    """A SQL condition selecting the partitions `text` accepts. `key_value(i)` gives the PART_KEY_VAL
    column of the i-th partition key (the caller joins PARTITION_KEY_VALS once per key used). On PostgreSQL a
    LIKE needs `key_values(i)`, the distinct values the i-th key has in the table; on SQLite it needs
    `register_sqlite_functions` on the connection."""
    return _Compiler(text, keys, key_value, dialect, key_values).compile(parse_filter(text))


class _Compiler:
    def __init__(
        self,
        text: str,
        keys: Sequence[FieldSchema],
        key_value: Callable[[int], sa.ColumnElement[str]],
        dialect: str,
        key_values: Callable[[int], Sequence[str]] | None = None,
    ) -> None:
        self.text = text
        self.keys = list(keys)
        self.index = {k.name.lower(): i for i, k in enumerate(keys)}
        self.key_value = key_value
        self.dialect = dialect
        self.key_values = key_values

    def compile(self, node: Node) -> sa.ColumnElement[bool]:
        if isinstance(node, And):
            return sa.and_(*(self.compile(n) for n in node.operands))
        if isinstance(node, Or):
            return sa.or_(*(self.compile(n) for n in node.operands))
        if isinstance(node, Not):
            return sa.not_(self.compile(node.operand))
        if isinstance(node, Compare):
            return self.compare(node)
        if isinstance(node, Between):
            column, numeric = self.key(node.key)
            if numeric:
                cond = self.numeric(column).between(
                    self.int_value(node.low, node.key), self.int_value(node.high, node.key)
                )
            else:
                cond = self.ordered(column).between(self.text_value(node.low), self.text_value(node.high))
            return sa.not_(cond) if node.negated else cond
        if isinstance(node, In):
            column, numeric = self.key(node.key)
            if numeric:
                cond = self.numeric(column).in_([self.int_value(v, node.key) for v in node.values])
            else:
                cond = column.in_([self.text_value(v) for v in node.values])
            return sa.not_(cond) if node.negated else cond
        raise TypeError(f"unknown filter node {node!r}")  # pragma: no cover

    def key(self, key: Key) -> tuple[sa.ColumnElement[str], bool]:
        idx = self.index.get(key.name.lower())
        if idx is None:
            known = ", ".join(k.name for k in self.keys) or "none"
            raise _fail(
                self.text,
                f"<{key.name}> is not a partitioning key for the table (partition keys: {known})",
                key.pos,
            )
        head = self.keys[idx].type.strip().lower().split("(")[0].strip()
        return self.key_value(idx), head in INTEGRAL_TYPES

    def key_index(self, key: Key) -> int:
        self.key(key)
        return self.index[key.name.lower()]

    def like(self, node: Compare, column: sa.ColumnElement[str]) -> sa.ColumnElement[bool]:
        """LIKE: the whole value matches the regular expression (Hive 2.3's String.matches)."""
        lit = node.value
        if lit.kind != "string":
            raise _fail(self.text, "LIKE needs a quoted regular expression", lit.pos)
        self.text_value(lit)
        pattern = lit.raw if lit.raw is not None else str(lit.value)
        try:
            compiled = _regex(pattern)
        except BadRegex as exc:
            shown = repr(pattern) if len(pattern) <= 80 else repr(pattern[:77] + "...")
            raise _fail(
                self.text, f"LIKE pattern {shown} is not a valid regular expression ({exc.reason})", lit.pos
            ) from None
        if self.dialect == "sqlite":
            return sa.func.metastore_regexp_match(sa.literal(pattern), column) == 1
        if self.key_values is None:
            raise TypeError("compile_filter needs key_values to compile LIKE for this database")
        matching = sorted({v for v in self.key_values(self.key_index(node.key)) if compiled.fullmatch(v)})
        from sqlalchemy.dialects import postgresql  # here: only PostgreSQL needs it (~18 ms of start-up)

        return column == sa.any_(sa.literal(matching, postgresql.ARRAY(sa.Text)))

    def compare(self, node: Compare) -> sa.ColumnElement[bool]:
        column, numeric = self.key(node.key)
        if node.op == "LIKE":
            return self.like(node, column)
        if numeric:
            lhs: sa.ColumnElement[Any] = self.numeric(column)
            rhs: object = self.int_value(node.value, node.key)
        else:
            lhs = self.ordered(column) if node.op not in ("=", "!=") else column
            rhs = self.text_value(node.value)
        return {
            "=": lambda: lhs == rhs,
            "!=": lambda: lhs != rhs,
            "<": lambda: lhs < rhs,
            "<=": lambda: lhs <= rhs,
            ">": lambda: lhs > rhs,
            ">=": lambda: lhs >= rhs,
        }[node.op]()

    def ordered(self, column: sa.ColumnElement[str]) -> sa.ColumnElement[str]:
        # Byte order on PostgreSQL too (its default collation may be linguistic), as SQLite compares.
        return sa.collate(column, "C") if self.dialect == "postgresql" else column

    def numeric(self, column: sa.ColumnElement[str]) -> sa.ColumnElement[Any]:
        """The key value as a number, NULL where it is not an integer (so it matches no comparison)."""
        if self.dialect == "postgresql":
            is_integer: sa.ColumnElement[bool] = column.op("~")(r"^-?[0-9]+$")
        else:
            is_integer = sa.or_(
                sa.and_(column != "", column.op("NOT GLOB")("*[^0-9]*")),
                sa.and_(column.op("GLOB")("-[0-9]*"), sa.func.substr(column, 2).op("NOT GLOB")("*[^0-9]*")),
            )
        return sa.case((is_integer, sa.cast(column, sa.Numeric)), else_=sa.null())

    def int_value(self, lit: Literal, key: Key) -> sa.BindParameter[int]:
        value = lit.value
        if lit.kind == "string" and isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value):
            value = int(value)
        if not isinstance(value, int) or lit.kind in ("date", "timestamp"):
            raise _fail(
                self.text,
                f"partition key {key.name!r} is an integer; {str(lit.value)!r} is not an integer (Filtering "
                "is supported only on partition keys of type string, or on integer keys with integer values)",
                lit.pos,
            )
        if not _INT64[0] <= value <= _INT64[1]:
            raise _fail(self.text, f"integer {value} is out of range", lit.pos)
        return sa.literal(value, sa.BigInteger)

    def text_value(self, lit: Literal) -> str:
        value = str(lit.value)
        if "\x00" in value:
            raise _fail(self.text, "values cannot contain NUL characters", lit.pos)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _fail(self.text, "value is not valid Unicode", lit.pos) from None
        return value
