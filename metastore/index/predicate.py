"""Predicates: one small expression tree shared by the shell's SELECT, the split filter and its Thrift call.

Nodes compare a column with typed literals: ``Compare`` (=, !=, <, <=, >, >=), ``Between``, ``In``, ``IsNull``,
combined with ``And``, ``Or`` and ``Not`` (NOT BETWEEN, NOT IN and IS NOT NULL are ``Not`` of the positive
form). Literals (``Value``) carry a kind and their exact text, so each column type converts them exactly
(bind.py does that, with SQL's three-valued logic).

The serialized form (what ``metastore_filter_splits`` takes, documented in the README) is JSON:

    {"op": "and", "args": [E, ...]}                  {"op": "or", "args": [E, ...]}
    {"op": "not", "arg": E}                          {"op": "true"}   {"op": "false"}
    {"op": "=", "column": "c", "value": V}           (also "!=", "<", "<=", ">", ">=")
    {"op": "between", "column": "c", "low": V, "high": V}
    {"op": "in", "column": "c", "values": [V, ...]}
    {"op": "is_null", "column": "c"}

with literals ``V`` = ``{"type": T, "value": "text"}`` for T in integer, decimal (exact decimal text), double,
string, date (YYYY-MM-DD), timestamp (YYYY-MM-DD HH:MM:SS[.fffffffff]), boolean ("true"/"false"), and
``{"type": "null"}``. Values are always JSON strings, so no number loses digits on the way.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from metastore.index.errors import PredicateError

#: Limits of a serialized predicate: it comes from the network.
MAX_PREDICATE_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 100
MAX_NODES = 200_000
MAX_LITERAL_CHARS = 1 << 20

COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
#: a comparison with its operands swapped (5 < c is c > 5)
FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
#: the comparison that is true exactly when this one is false (for non-null operands)
NEGATED = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


class ValueKind(enum.Enum):
    """The kind of a literal, as written."""

    NULL = "null"
    BOOLEAN = "boolean"
    INTEGER = "integer"
    DECIMAL = "decimal"
    DOUBLE = "double"
    STRING = "string"
    DATE = "date"
    TIMESTAMP = "timestamp"


_INTEGER_TEXT = re.compile(r"[+-]?\d+\Z")
_DECIMAL_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
_DOUBLE_TEXT = re.compile(r"[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|inf|infinity|nan)\Z", re.IGNORECASE)
_DATE_TEXT = re.compile(r"\d{4}-\d{1,2}-\d{1,2}\Z")
_TIMESTAMP_TEXT = re.compile(r"\d{4}-\d{1,2}-\d{1,2}([ T]\d{1,2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?\Z")


@dataclass(frozen=True)
class Value:
    """A literal: its kind and exact text (None for NULL)."""

    kind: ValueKind
    text: str | None = None
    #: where the literal was written (the shell puts its line:column here); never compared or serialized
    where: object = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        _check_value(self)

    def __str__(self) -> str:
        if self.kind is ValueKind.NULL:
            return "NULL"
        if self.kind in (ValueKind.STRING,):
            return "'" + (self.text or "").replace("'", "\\'") + "'"
        if self.kind in (ValueKind.DATE, ValueKind.TIMESTAMP):
            return f"{self.kind.value.upper()} '{self.text}'"
        return str(self.text)

    @property
    def decimal(self) -> Decimal:
        """The exact numeric value of an integer, decimal or double literal."""
        assert self.text is not None
        if self.kind is ValueKind.DOUBLE:
            return Decimal(float(self.text))
        return Decimal(self.text)


def _check_value(value: Value) -> None:
    kind, text = value.kind, value.text
    if kind is ValueKind.NULL:
        if text is not None:
            raise PredicateError("a null literal has no value", value)
        return
    if not isinstance(text, str):
        raise PredicateError(f"a {kind.value} literal needs its value as text", value)
    if len(text) > MAX_LITERAL_CHARS:
        raise PredicateError(f"a {kind.value} literal of {len(text)} characters is too long", value)
    patterns = {
        ValueKind.INTEGER: _INTEGER_TEXT, ValueKind.DECIMAL: _DECIMAL_TEXT, ValueKind.DOUBLE: _DOUBLE_TEXT,
        ValueKind.DATE: _DATE_TEXT, ValueKind.TIMESTAMP: _TIMESTAMP_TEXT,
    }
    pattern = patterns.get(kind)
    if pattern is not None and not pattern.match(text.strip()):
        raise PredicateError(f"{_short(text)!r} is not a valid {kind.value} literal", value)
    if kind in (ValueKind.INTEGER, ValueKind.DECIMAL) and len(text) > 400:
        # Decimal() and int() of thousands of digits are slow and no column holds such numbers
        raise PredicateError(f"a {kind.value} literal of {len(text)} digits is too long", value)
    if kind is ValueKind.DECIMAL:
        try:
            exponent = Decimal(text).as_tuple().exponent
        except InvalidOperation:
            raise PredicateError(f"{_short(text)!r} is not a valid decimal literal", value) from None
        if isinstance(exponent, int) and abs(exponent) > 1000:
            raise PredicateError(f"decimal literal {_short(text)!r} has an exponent out of range", value)
    if kind is ValueKind.BOOLEAN and text not in ("true", "false"):
        raise PredicateError(f"a boolean literal is true or false, got {_short(text)!r}", value)


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


class Expr:
    """Base of predicate nodes."""

    where: object

    def columns(self) -> set[str]:
        """The (lower-case) column names the expression reads."""
        return {c for node in walk(self) if (c := getattr(node, "column", None)) is not None}


@dataclass(frozen=True)
class Compare(Expr):
    """``column op value``."""

    column: str
    op: str
    value: Value
    where: object = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.op not in COMPARISONS:
            raise PredicateError(f"unknown comparison {self.op!r} (known: {', '.join(COMPARISONS)})", self)
        object.__setattr__(self, "column", _column_name(self.column, self))


@dataclass(frozen=True)
class Between(Expr):
    """``column BETWEEN low AND high`` (both bounds included)."""

    column: str
    low: Value
    high: Value
    where: object = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "column", _column_name(self.column, self))


@dataclass(frozen=True)
class In(Expr):
    """``column IN (values...)``."""

    column: str
    values: tuple[Value, ...]
    where: object = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "column", _column_name(self.column, self))
        if not self.values:
            raise PredicateError("IN needs at least one value", self)


@dataclass(frozen=True)
class IsNull(Expr):
    """``column IS NULL``."""

    column: str
    where: object = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "column", _column_name(self.column, self))


@dataclass(frozen=True)
class And(Expr):
    args: tuple[Expr, ...]
    where: object = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.args:
            raise PredicateError("AND needs at least one operand", self)


@dataclass(frozen=True)
class Or(Expr):
    args: tuple[Expr, ...]
    where: object = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.args:
            raise PredicateError("OR needs at least one operand", self)


@dataclass(frozen=True)
class Not(Expr):
    arg: Expr
    where: object = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Const(Expr):
    """TRUE or FALSE."""

    value: bool
    where: object = field(default=None, compare=False, repr=False)


def _column_name(name: object, node: object) -> str:
    if not isinstance(name, str) or not name or len(name) > 767:
        raise PredicateError("a column name must be a non-empty string of at most 767 characters", node)
    return name.lower()


def walk(expr: Expr) -> Iterator[Expr]:
    """Every node of the tree, parents first (iteratively: trees may be deep)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, And | Or):
            stack.extend(reversed(node.args))
        elif isinstance(node, Not):
            stack.append(node.arg)


def to_sql(expr: Expr) -> str:
    """The predicate in the shell's SQL syntax (for EXPLAIN and messages)."""
    if isinstance(expr, Compare):
        return f"{expr.column} {expr.op} {expr.value}"
    if isinstance(expr, Between):
        return f"{expr.column} BETWEEN {expr.low} AND {expr.high}"
    if isinstance(expr, In):
        return f"{expr.column} IN ({', '.join(str(v) for v in expr.values)})"
    if isinstance(expr, IsNull):
        return f"{expr.column} IS NULL"
    if isinstance(expr, And | Or):
        word = " AND " if isinstance(expr, And) else " OR "
        return "(" + word.join(to_sql(a) for a in expr.args) + ")"
    if isinstance(expr, Not):
        return f"NOT {to_sql(expr.arg)}"
    if isinstance(expr, Const):
        return "TRUE" if expr.value else "FALSE"
    raise TypeError(f"not a predicate node: {expr!r}")


# ---------------------------------------------------------------------------------------------- JSON form


def to_json(expr: Expr) -> str:
    """The documented serialized form (compact JSON)."""
    return json.dumps(_to_obj(expr, 0), separators=(",", ":"), ensure_ascii=False)


def _value_obj(value: Value) -> dict[str, str]:
    if value.kind is ValueKind.NULL:
        return {"type": "null"}
    assert value.text is not None
    return {"type": value.kind.value, "value": value.text}


def _to_obj(expr: Expr, depth: int) -> dict[str, Any]:
    if depth > MAX_DEPTH:
        raise PredicateError(f"predicate nested deeper than {MAX_DEPTH} levels", expr)
    if isinstance(expr, Compare):
        return {"op": expr.op, "column": expr.column, "value": _value_obj(expr.value)}
    if isinstance(expr, Between):
        return {"op": "between", "column": expr.column, "low": _value_obj(expr.low), "high": _value_obj(expr.high)}
    if isinstance(expr, In):
        return {"op": "in", "column": expr.column, "values": [_value_obj(v) for v in expr.values]}
    if isinstance(expr, IsNull):
        return {"op": "is_null", "column": expr.column}
    if isinstance(expr, And | Or):
        return {"op": "and" if isinstance(expr, And) else "or", "args": [_to_obj(a, depth + 1) for a in expr.args]}
    if isinstance(expr, Not):
        return {"op": "not", "arg": _to_obj(expr.arg, depth + 1)}
    if isinstance(expr, Const):
        return {"op": "true" if expr.value else "false"}
    raise TypeError(f"not a predicate node: {expr!r}")


def from_json(text: str | bytes) -> Expr:
    """A predicate from its serialized form; PredicateError with a one-line reason for anything malformed."""
    if len(text) > MAX_PREDICATE_BYTES:
        raise PredicateError(f"predicate of {len(text)} bytes is larger than the {MAX_PREDICATE_BYTES} allowed")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PredicateError(f"predicate is not UTF-8: {exc.reason} at byte {exc.start}") from None
    # json.loads raises RecursionError (caught below) on absurd nesting; _from_obj then bounds the depth.
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise PredicateError(f"predicate is not valid JSON: {exc}") from None
    counter = [0]
    return _from_obj(obj, 0, counter)


def _field(obj: dict[str, Any], name: str, what: str) -> Any:
    if name not in obj:
        raise PredicateError(f"{what} needs the field {name!r}")
    return obj[name]


def _value_from(obj: Any) -> Value:
    if not isinstance(obj, dict):
        raise PredicateError(f"a literal must be an object like {{\"type\": \"integer\", \"value\": \"1\"}}, got {_kind(obj)}")
    type_name = obj.get("type")
    try:
        kind = ValueKind(type_name)
    except ValueError:
        known = ", ".join(k.value for k in ValueKind)
        raise PredicateError(f"unknown literal type {type_name!r} (known: {known})") from None
    unknown = set(obj) - {"type", "value"}
    if unknown:
        raise PredicateError(f"unknown field(s) in a literal: {', '.join(sorted(map(str, unknown)))}")
    if kind is ValueKind.NULL:
        if "value" in obj and obj["value"] is not None:
            raise PredicateError("a null literal has no value")
        return Value(kind)
    text = obj.get("value")
    if not isinstance(text, str):
        raise PredicateError(f"a {kind.value} literal's value must be a JSON string, got {_kind(text)}")
    return Value(kind, text)


def _kind(obj: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(obj), "a number"
    )


_FIELDS = {
    "and": {"op", "args"}, "or": {"op", "args"}, "not": {"op", "arg"}, "true": {"op"}, "false": {"op"},
    "between": {"op", "column", "low", "high"}, "in": {"op", "column", "values"}, "is_null": {"op", "column"},
    **{op: {"op", "column", "value"} for op in COMPARISONS},
}


def _from_obj(obj: Any, depth: int, counter: list[int]) -> Expr:
    if depth > MAX_DEPTH:
        raise PredicateError(f"predicate nested deeper than {MAX_DEPTH} levels")
    counter[0] += 1
    if counter[0] > MAX_NODES:
        raise PredicateError(f"predicate has more than {MAX_NODES} nodes")
    if not isinstance(obj, dict):
        raise PredicateError(f"a predicate node must be a JSON object, got {_kind(obj)}")
    op = obj.get("op")
    if not isinstance(op, str) or op not in _FIELDS:
        raise PredicateError(f"unknown predicate operator {op!r} (known: {', '.join(_FIELDS)})")
    unknown = set(obj) - _FIELDS[op]
    if unknown:
        raise PredicateError(f"unknown field(s) in a {op!r} node: {', '.join(sorted(map(str, unknown)))}")
    what = f"a {op!r} node"
    if op in ("and", "or"):
        args = _field(obj, "args", what)
        if not isinstance(args, list) or not args:
            raise PredicateError(f"{what}'s args must be a non-empty list")
        children = tuple(_from_obj(a, depth + 1, counter) for a in args)
        return And(children) if op == "and" else Or(children)
    if op == "not":
        return Not(_from_obj(_field(obj, "arg", what), depth + 1, counter))
    if op in ("true", "false"):
        return Const(op == "true")
    column = _field(obj, "column", what)
    if not isinstance(column, str):
        raise PredicateError(f"{what}'s column must be a string, got {_kind(column)}")
    if op == "between":
        return Between(column, _value_from(_field(obj, "low", what)), _value_from(_field(obj, "high", what)))
    if op == "in":
        values = _field(obj, "values", what)
        if not isinstance(values, list) or not values:
            raise PredicateError(f"{what}'s values must be a non-empty list")
        counter[0] += len(values)
        if counter[0] > MAX_NODES:
            raise PredicateError(f"predicate has more than {MAX_NODES} nodes")
        return In(column, tuple(_value_from(v) for v in values))
    if op == "is_null":
        return IsNull(column)
    return Compare(column, op, _value_from(_field(obj, "value", what)))
