"""Binding a predicate to column types: literals become keys (columns.py), NOT is pushed to the leaves, and
SQL's three-valued logic is settled once, here.

The bound form has no NOT: every comparison leaf selects *non-null* values whose key lies in a set (a range,
or a finite set, or its complement), ``NullTest`` selects by nullness, and ``AllOf``/``AnyOf``/``Truth``
combine. A row is selected when the bound form is true for it; because the form is monotone, treating
"unknown" as false at the leaves gives exactly SQL's answer (a row is selected iff the WHERE clause is TRUE).

Literals convert exactly per column type: ``int_col > 2.5`` is ``int_col >= 3``, ``tinyint_col < 1000`` is
``tinyint_col IS NOT NULL``, ``decimal(5,2)_col = 1.005`` is never true, ``date_col < TIMESTAMP '2024-01-01
10:00'`` includes 2024-01-01. Floating point columns order like Spark: NaN = NaN, NaN above +infinity,
-0.0 = 0.0. Comparing with NULL is never true (nor is its negation).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import (
    MAX_EMAX,
    MAX_PREC,
    MIN_EMIN,
    ROUND_CEILING,
    ROUND_FLOOR,
    Context,
    Decimal,
    InvalidOperation,
)

import numpy as np

from metastore.index.columns import (
    ColumnType,
    Domain,
    Family,
    Key,
    Keys,
    char_key,
    date_key,
    float_key,
    timestamp_key,
    wide_decimal_key,
)
from metastore.index.errors import PredicateError
from metastore.index.predicate import (
    FLIPPED,
    MAX_DEPTH,
    NEGATED,
    And,
    Between,
    Compare,
    Const,
    Expr,
    In,
    IsNull,
    Not,
    Or,
    Value,
    ValueKind,
)

# ---------------------------------------------------------------------------------------------- bound nodes


class Bound:
    """Base of bound predicate nodes."""


@dataclass(frozen=True)
class KeyRange(Bound):
    """Non-null values with ``low <(=) key <(=) high``; a None bound is open (both None: IS NOT NULL)."""

    column: str
    low: Key | None = None
    low_inclusive: bool = True
    high: Key | None = None
    high_inclusive: bool = True

    @property
    def is_point(self) -> bool:
        """True for ``key = low`` (an equality)."""
        return self.low is not None and self.low == self.high and self.low_inclusive and self.high_inclusive


@dataclass(frozen=True)
class KeySet(Bound):
    """Non-null values whose key is in ``keys`` (negated: is not in them). Keys are sorted and distinct."""

    column: str
    keys: tuple[Key, ...]
    negated: bool = False


@dataclass(frozen=True)
class NullTest(Bound):
    """``column IS NULL`` (is_null) or ``IS NOT NULL``."""

    column: str
    is_null: bool


@dataclass(frozen=True)
class AllOf(Bound):
    args: tuple[Bound, ...]


@dataclass(frozen=True)
class AnyOf(Bound):
    args: tuple[Bound, ...]


@dataclass(frozen=True)
class Truth(Bound):
    """A constant: always true, or never (false or unknown) for every row."""

    value: bool


TRUE = Truth(True)
FALSE = Truth(False)

#: a leaf of the bound form
Leaf = KeyRange | KeySet | NullTest


def leaves(node: Bound) -> list[Leaf]:
    """The leaves of a bound predicate, in order."""
    out: list[Leaf] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, AllOf | AnyOf):
            stack.extend(reversed(n.args))
        elif isinstance(n, KeyRange | KeySet | NullTest):
            out.append(n)
    return out


# ---------------------------------------------------------------------------------------------- literals


@dataclass(frozen=True)
class _Point:
    """Where a literal falls among a column's keys: exactly on ``key``, or strictly between ``floor`` and
    ``ceil`` (None beyond the type's range). ``null`` for a NULL literal."""

    key: Key | None = None
    floor: Key | None = None
    ceil: Key | None = None
    null: bool = False


_TIMESTAMP = re.compile(
    r"\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*\Z"
)
_DATE = re.compile(r"\s*(\d{4})-(\d{1,2})-(\d{1,2})\s*\Z")
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
#: scaling a literal to a column's scale never rounds (the default context keeps 28 digits)
_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)


def _error(message: str, node: object) -> PredicateError:
    return PredicateError(message, node)


def _parse_timestamp(text: str, node: object) -> tuple[int, int]:
    """(seconds since the epoch of the wall-clock time read as UTC, nanos)."""
    m = _TIMESTAMP.match(text)
    if not m:
        raise _error(f"{text!r} is not a timestamp (YYYY-MM-DD HH:MM:SS[.fffffffff])", node)
    y, mo, d, h, mi, s, frac = m.groups()
    try:
        day = dt.date(int(y), int(mo), int(d))
        clock = dt.time(int(h or 0), int(mi or 0), int(s or 0))
    except ValueError as exc:
        raise _error(f"{text!r} is not a valid timestamp: {exc}", node) from None
    days = day.toordinal() - _EPOCH_ORDINAL
    seconds = days * 86400 + clock.hour * 3600 + clock.minute * 60 + clock.second
    nanos = int((frac or "").ljust(9, "0") or 0)
    return seconds, nanos


def _parse_date(text: str, node: object) -> dt.date:
    m = _DATE.match(text)
    if not m:
        raise _error(f"{text!r} is not a date (YYYY-MM-DD)", node)
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError as exc:
        raise _error(f"{text!r} is not a valid date: {exc}", node) from None


def _number(value: Value, ctype: ColumnType, column: str, node: object) -> Decimal:
    """The exact number of a numeric literal (or of a string literal holding one, as Hive casts it)."""
    text = value.text or ""
    if value.kind in (ValueKind.INTEGER, ValueKind.DECIMAL):
        return Decimal(text)
    if value.kind in (ValueKind.DOUBLE, ValueKind.STRING):
        try:
            number = float(text) if value.kind is ValueKind.DOUBLE else float(Decimal(text.strip()))
        except (ValueError, InvalidOperation):
            raise _error(f"column '{column}' is {ctype.hive}; '{_short(text)}' is not a number", node) from None
        if math.isnan(number):
            raise _error(f"column '{column}' is {ctype.hive}; it cannot be compared with NaN", node)
        if math.isinf(number):
            return Decimal("Infinity") if number > 0 else Decimal("-Infinity")
        return Decimal(text.strip()) if value.kind is ValueKind.STRING else Decimal(number)
    raise _error(f"column '{column}' is {ctype.hive}; it cannot be compared with {value}", node)


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def _integral_point(d: Decimal, low: int, high: int, encode: Callable[[int], Key]) -> _Point:
    """Place an exact number among the integers low..high (encoded as keys)."""
    if d.is_infinite():
        return _Point(floor=None, ceil=encode(low)) if d < 0 else _Point(floor=encode(high), ceil=None)
    try:
        fl = int(d.to_integral_value(rounding=ROUND_FLOOR))
        ce = int(d.to_integral_value(rounding=ROUND_CEILING))
    except InvalidOperation:  # an exponent too large for the context: far outside every range
        return _Point(floor=None, ceil=encode(low)) if d < 0 else _Point(floor=encode(high), ceil=None)
    if fl == ce and low <= fl <= high:
        return _Point(key=encode(fl))
    floor = None if fl < low else encode(min(fl, high))
    ceil = None if ce > high else encode(max(ce, low))
    return _Point(floor=floor, ceil=ceil)


def literal_point(value: Value, ctype: ColumnType, column: str, node: object = None) -> _Point:
    """Where a literal falls among the keys of a column of type ``ctype``; PredicateError when the literal
    cannot be compared with the column (naming both)."""
    node = node if node is not None else value
    if value.kind is ValueKind.NULL:
        return _Point(null=True)
    family = ctype.family
    text = value.text or ""
    if family is Family.INTEGER:
        assert ctype.low is not None and ctype.high is not None
        return _integral_point(_number(value, ctype, column, node), ctype.low, ctype.high, int)
    if family is Family.BOOLEAN:
        if value.kind is ValueKind.BOOLEAN or (value.kind is ValueKind.STRING and text.lower() in ("true", "false")):
            return _Point(key=int(text.lower() == "true"))
        raise _error(f"column '{column}' is boolean; compare it with TRUE or FALSE, not {value}", node)
    if family is Family.FLOAT:
        if value.kind in (ValueKind.INTEGER, ValueKind.DECIMAL, ValueKind.DOUBLE):
            return _Point(key=float_key(float(text)))
        if value.kind is ValueKind.STRING:
            try:
                return _Point(key=float_key(float(text.strip())))
            except ValueError:
                pass
        raise _error(f"column '{column}' is {ctype.hive}; it cannot be compared with {value}", node)
    if family is Family.DECIMAL:
        d = _number(value, ctype, column, node)
        limit = 10**ctype.precision - 1
        scaled = d if d.is_infinite() else d.scaleb(ctype.scale, _EXACT)
        encode: Callable[[int], Key] = int if ctype.domain is Domain.INT64 else wide_decimal_key
        return _integral_point(scaled, -limit, limit, encode)
    if family is Family.DATE:
        if value.kind in (ValueKind.DATE, ValueKind.STRING) and _DATE.match(text):
            return _Point(key=date_key(_parse_date(text, node)))
        if value.kind in (ValueKind.TIMESTAMP, ValueKind.STRING):
            seconds, nanos = _parse_timestamp(text, node)
            days, rest = divmod(seconds, 86400)
            if rest == 0 and nanos == 0:
                return _Point(key=days)
            return _Point(floor=days, ceil=days + 1)
        raise _error(f"column '{column}' is date; compare it with DATE 'YYYY-MM-DD', not {value}", node)
    if family is Family.TIMESTAMP:
        if value.kind in (ValueKind.DATE, ValueKind.TIMESTAMP, ValueKind.STRING):
            seconds, nanos = _parse_timestamp(text, node)
            return _Point(key=timestamp_key(seconds, nanos))
        raise _error(f"column '{column}' is timestamp; compare it with TIMESTAMP '...', not {value}", node)
    if family in (Family.STRING, Family.CHAR):
        if value.kind is not ValueKind.STRING:
            raise _error(f"column '{column}' is {ctype.hive}; compare it with a string literal, not {value}", node)
        return _Point(key=char_key(text) if family is Family.CHAR else text.encode("utf-8", "surrogateescape"))
    raise _error(f"column '{column}' is {ctype.hive}, which predicates cannot compare", node)


def literal_key(value: Value, ctype: ColumnType, column: str) -> Key | None:
    """The exact key of a literal (None for NULL); PredicateError when it is not exactly a value of the type
    (partition values are converted with this)."""
    point = literal_point(value, ctype, column)
    if point.null:
        return None
    if point.key is None:
        raise PredicateError(f"{value} is not a value of column '{column}' ({ctype.hive})", value)
    return point.key


# ---------------------------------------------------------------------------------------------- binding


def _compare_leaf(column: str, op: str, point: _Point) -> Bound:
    """The leaf for ``column op literal`` over non-null values (op already negated when under NOT)."""
    if point.null:
        return FALSE  # unknown for every row, negated or not
    if point.key is not None:
        k = point.key
        if op == "=":
            return KeyRange(column, k, True, k, True)
        if op == "!=":
            return KeySet(column, (k,), negated=True)
        if op == "<":
            return KeyRange(column, high=k, high_inclusive=False)
        if op == "<=":
            return KeyRange(column, high=k, high_inclusive=True)
        if op == ">":
            return KeyRange(column, low=k, low_inclusive=False)
        return KeyRange(column, low=k, low_inclusive=True)
    # strictly between two keys: equality never holds, ranges round to the neighbouring keys
    if op == "=":
        return FALSE
    if op == "!=":
        return KeyRange(column)
    if op in ("<", "<="):
        return FALSE if point.floor is None else KeyRange(column, high=point.floor, high_inclusive=True)
    return FALSE if point.ceil is None else KeyRange(column, low=point.ceil, low_inclusive=True)


def bind(expr: Expr, columns: Mapping[str, ColumnType]) -> Bound:
    """The bound, NOT-free form of ``expr`` over columns of the given types (names lower case); PredicateError
    naming the column for an unknown column or a literal that does not fit its type."""
    return simplify(_bind(expr, columns, False, 0))


def _column(columns: Mapping[str, ColumnType], name: str, node: Expr) -> ColumnType:
    ctype = columns.get(name)
    if ctype is None:
        known = ", ".join(sorted(columns)) or "none"
        raise _error(f"column '{name}' does not exist (columns: {_short(known)})", node)
    return ctype


def _bind(expr: Expr, columns: Mapping[str, ColumnType], negated: bool, depth: int) -> Bound:
    if depth > MAX_DEPTH * 4:
        raise _error(f"predicate nested deeper than {MAX_DEPTH} levels", expr)
    if isinstance(expr, Not):
        return _bind(expr.arg, columns, not negated, depth + 1)
    if isinstance(expr, And | Or):
        args = tuple(_bind(a, columns, negated, depth + 1) for a in expr.args)
        conjunction = isinstance(expr, And) != negated
        return AllOf(args) if conjunction else AnyOf(args)
    if isinstance(expr, Const):
        return Truth(expr.value != negated)
    if isinstance(expr, IsNull):
        _column(columns, expr.column, expr)
        return NullTest(expr.column, not negated)
    if isinstance(expr, Compare):
        ctype = _column(columns, expr.column, expr)
        op = NEGATED[expr.op] if negated else expr.op
        return _compare_leaf(expr.column, op, literal_point(expr.value, ctype, expr.column, expr.value.where or expr))
    if isinstance(expr, Between):
        both = And((Compare(expr.column, ">=", expr.low, expr.where), Compare(expr.column, "<=", expr.high, expr.where)))
        return _bind(both, columns, negated, depth + 1)
    if isinstance(expr, In):
        ctype = _column(columns, expr.column, expr)
        keys: set[Key] = set()
        has_null = False
        for v in expr.values:
            point = literal_point(v, ctype, expr.column, v.where or expr)
            if point.null:
                has_null = True
            elif point.key is not None:
                keys.add(point.key)
        if negated:
            # NOT IN with a NULL in the list is never true (x <> NULL is unknown)
            return FALSE if has_null else KeySet(expr.column, tuple(sorted(keys)), negated=True)
        return KeySet(expr.column, tuple(sorted(keys)))  # type: ignore[type-var]  # keys of one column share one type (int or bytes, by its domain), so they sort
    raise TypeError(f"not a predicate node: {expr!r}")


def simplify(node: Bound) -> Bound:
    """Flatten nested AllOf/AnyOf, fold constants, drop empty ranges and sets."""
    if isinstance(node, AllOf | AnyOf):
        conjunction = isinstance(node, AllOf)
        out: list[Bound] = []
        for a in node.args:
            s = simplify(a)
            if isinstance(s, Truth):
                if s.value != conjunction:  # FALSE in AllOf, TRUE in AnyOf decides
                    return s
                continue
            if isinstance(s, AllOf if conjunction else AnyOf):
                out.extend(s.args)
            else:
                out.append(s)
        if conjunction:
            out = _intersect_same_column(out)
            if any(isinstance(a, Truth) and not a.value for a in out):
                return FALSE
        if not out:
            return Truth(conjunction)
        if len(out) == 1:
            return out[0]
        return AllOf(tuple(out)) if conjunction else AnyOf(tuple(out))
    if isinstance(node, KeyRange):
        lo, hi = node.low, node.high
        empty = lo is not None and hi is not None and (
            lo > hi or (lo == hi and not (node.low_inclusive and node.high_inclusive))  # type: ignore[operator]  # keys of one column share one type (int or bytes, by its domain)
        )
        return FALSE if empty else node
    if isinstance(node, KeySet):
        if not node.keys:
            return KeyRange(node.column) if node.negated else FALSE
        return node
    return node


def _tighter_low(a: KeyRange, b: KeyRange) -> tuple[Key | None, bool]:
    if a.low is None:
        return b.low, b.low_inclusive
    if b.low is None or a.low > b.low:  # type: ignore[operator]  # keys of one column share one ordered type
        return a.low, a.low_inclusive
    if b.low > a.low:  # type: ignore[operator]  # keys of one column share one type (int or bytes, by its domain)
        return b.low, b.low_inclusive
    return a.low, a.low_inclusive and b.low_inclusive


def _tighter_high(a: KeyRange, b: KeyRange) -> tuple[Key | None, bool]:
    if a.high is None:
        return b.high, b.high_inclusive
    if b.high is None or a.high < b.high:  # type: ignore[operator]  # keys of one column share one type (int or bytes, by its domain)
        return a.high, a.high_inclusive
    if b.high < a.high:  # type: ignore[operator]  # keys of one column share one type (int or bytes, by its domain)
        return b.high, b.high_inclusive
    return a.high, a.high_inclusive and b.high_inclusive


def _in_range(key: Key, r: KeyRange) -> bool:
    if r.low is not None and (key < r.low or (key == r.low and not r.low_inclusive)):  # type: ignore[operator]  # keys of one column share one type (int or bytes, by its domain)
        return False
    return not (r.high is not None and (key > r.high or (key == r.high and not r.high_inclusive)))  # type: ignore[operator]  # keys of one column share one type (int or bytes, by its domain)


def _intersect_same_column(args: list[Bound]) -> list[Bound]:
    """Conjuncts over one column folded into one leaf (ranges intersected, IN lists filtered by the range), so
    that an index answers the conjunction for a stripe exactly: ``c >= 1 AND c <= 0`` holds for no row even where a
    stripe holds values on both sides."""
    ranges: dict[str, KeyRange] = {}
    sets: dict[str, set[Key]] = {}
    rest: list[Bound] = []
    for a in args:
        if isinstance(a, KeyRange):
            prev = ranges.get(a.column)
            if prev is None:
                ranges[a.column] = a
            else:
                low, low_inc = _tighter_low(prev, a)
                high, high_inc = _tighter_high(prev, a)
                ranges[a.column] = KeyRange(a.column, low, low_inc, high, high_inc)
        elif isinstance(a, KeySet) and not a.negated:
            keys = set(a.keys)
            sets[a.column] = sets[a.column] & keys if a.column in sets else keys
        else:
            rest.append(a)
    merged: list[Bound] = []
    for column, keys in sets.items():
        r = ranges.pop(column, None)
        if r is not None:
            keys = {k for k in keys if _in_range(k, r)}
        merged.append(simplify(KeySet(column, tuple(sorted(keys)))))  # type: ignore[type-var]  # keys of one column share one type (int or bytes, by its domain), so they sort
    merged.extend(simplify(r) for r in ranges.values())
    return merged + rest


def flipped(op: str) -> str:
    """The comparison with its operands swapped (``5 < c`` is ``c > 5``)."""
    return FLIPPED[op]


# ---------------------------------------------------------------------------------------------- rows


def _range_mask(values: np.ndarray, leaf: KeyRange) -> np.ndarray:
    n = len(values)
    mask = np.ones(n, dtype=bool)
    if leaf.low is not None:
        mask &= np.asarray(values >= leaf.low if leaf.low_inclusive else values > leaf.low, dtype=bool)
    if leaf.high is not None:
        mask &= np.asarray(values <= leaf.high if leaf.high_inclusive else values < leaf.high, dtype=bool)
    return mask


def _set_mask(values: np.ndarray, leaf: KeySet) -> np.ndarray:
    if values.dtype == object:
        wanted = set(leaf.keys)
        mask = np.fromiter((v in wanted for v in values), dtype=bool, count=len(values))
    else:
        mask = np.isin(values, np.asarray(leaf.keys, dtype=np.int64))
    return ~mask if leaf.negated else mask


def evaluate(node: Bound, keys: Mapping[str, Keys], count: int) -> np.ndarray:
    """The rows (bool mask of ``count``) a bound predicate selects, given each column's keys."""
    if isinstance(node, Truth):
        return np.full(count, node.value, dtype=bool)
    if isinstance(node, AllOf | AnyOf):
        masks = [evaluate(a, keys, count) for a in node.args]
        return np.logical_and.reduce(masks) if isinstance(node, AllOf) else np.logical_or.reduce(masks)
    assert isinstance(node, KeyRange | KeySet | NullTest)
    column = keys[node.column]
    present = column.present
    if isinstance(node, NullTest):
        if present is None:
            return np.full(count, not node.is_null, dtype=bool)
        return ~present if node.is_null else present.copy()
    mask = _range_mask(column.values, node) if isinstance(node, KeyRange) else _set_mask(column.values, node)
    return mask if present is None else mask & present


def matches_one(node: Bound, row: Mapping[str, Key | None]) -> bool:
    """Whether one row (column -> key, None for NULL) is selected; for partition values."""
    if isinstance(node, Truth):
        return node.value
    if isinstance(node, AllOf):
        return all(matches_one(a, row) for a in node.args)
    if isinstance(node, AnyOf):
        return any(matches_one(a, row) for a in node.args)
    assert isinstance(node, KeyRange | KeySet | NullTest)
    key = row.get(node.column)
    if isinstance(node, NullTest):
        return (key is None) == node.is_null
    if key is None:
        return False
    if isinstance(node, KeySet):
        return (key in node.keys) != node.negated
    if node.low is not None and (key < node.low or (key == node.low and not node.low_inclusive)):  # type: ignore[operator]  # keys of one column share one type (int or bytes, by its domain)
        return False
    return not (node.high is not None and (key > node.high or (key == node.high and not node.high_inclusive)))  # type: ignore[operator]  # keys of one column share one type (int or bytes, by its domain)


def restrict(node: Bound, wanted: Sequence[str]) -> Bound:
    """The predicate with every leaf on a column outside ``wanted`` replaced by TRUE (a weaker predicate: it
    selects at least what ``node`` selects). Used to judge a predicate by the columns an index covers."""
    if isinstance(node, AllOf | AnyOf):
        args = tuple(restrict(a, wanted) for a in node.args)
        return simplify(AllOf(args) if isinstance(node, AllOf) else AnyOf(args))
    if isinstance(node, KeyRange | KeySet | NullTest) and node.column not in wanted:
        return TRUE
    return node
