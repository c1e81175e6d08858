"""Random schemas and values for the writer tests, and how each reader presents the values back.

Values are Python objects in what OrcWriter accepts; ``expected(type, value)`` gives the value every reader
should return after the writer's normalisation (char padding, varchar cut, float32 rounding, decimal scale), in a
canonical form (``canonical``) that all readers' outputs are mapped to before comparing.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import ROUND_HALF_UP, Context, Decimal

import numpy as np

from metastore.orcio._types import Category, TypeDescription

INT_RANGES = {
    Category.BYTE: (-(1 << 7), (1 << 7) - 1),
    Category.SHORT: (-(1 << 15), (1 << 15) - 1),
    Category.INT: (-(1 << 31), (1 << 31) - 1),
    Category.LONG: (-(1 << 63), (1 << 63) - 1),
}
PRIMITIVES = [
    "boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "string", "char(5)", "varchar(4)",
    "binary", "decimal(10,2)", "decimal(38,6)", "decimal(18,0)", "date", "timestamp",
    "timestamp with local time zone",
]
WIDE = Context(prec=200)
EPOCH = dt.datetime(1970, 1, 1)
UTC = dt.UTC


def random_type(rng: random.Random, depth: int = 0, allow_union: bool = True) -> str:
    """A random ORC type string; compound types get rarer with depth."""
    roll = rng.random()
    if depth < 2 and roll < 0.25:
        kind = rng.choice(["array", "map", "struct"] + (["uniontype"] if allow_union else []))
        if kind == "array":
            return f"array<{random_type(rng, depth + 1, allow_union)}>"
        if kind == "map":
            key = rng.choice(["string", "int", "bigint", "date"])
            return f"map<{key},{random_type(rng, depth + 1, allow_union)}>"
        if kind == "struct":
            fields = [f"f{i}:{random_type(rng, depth + 1, allow_union)}" for i in range(rng.randint(1, 3))]
            return f"struct<{','.join(fields)}>"
        # primitive alternatives only: readers without union tags return bare values we cannot type
        alts = [rng.choice(PRIMITIVES) for _ in range(rng.randint(1, 3))]
        return f"uniontype<{','.join(alts)}>"
    return rng.choice(PRIMITIVES)


def random_schema(rng: random.Random, allow_union: bool = True, max_fields: int = 6) -> TypeDescription:
    """A struct root with a few random fields."""
    fields = [f"c{i}:{random_type(rng, 0, allow_union)}" for i in range(rng.randint(1, max_fields))]
    return TypeDescription.parse(f"struct<{','.join(fields)}>")


def _random_text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.1:
        return ""
    if roll < 0.2:
        return "".join(rng.choice("aé中😀 \t") for _ in range(rng.randint(1, 8)))
    if roll < 0.5:
        return f"v{rng.randrange(20)}"
    return "".join(rng.choice("abcdefghij") for _ in range(rng.randint(1, 12)))


def random_value(rng: random.Random, t: TypeDescription, null_rate: float, wide_times: bool) -> object:
    """One random value of type ``t`` (None with probability ``null_rate``), extremes included."""
    if rng.random() < null_rate:
        return None
    c = t.category
    if c == Category.BOOLEAN:
        return rng.random() < 0.5
    if c in INT_RANGES:
        lo, hi = INT_RANGES[c]
        return rng.choice([lo, hi, 0, -1, rng.randint(lo, hi), rng.randint(-100, 100), rng.randint(-100, 100)])
    if c in (Category.FLOAT, Category.DOUBLE):
        return rng.choice(
            [math.nan, math.inf, -math.inf, -0.0, 0.0, 1e300 if c == Category.DOUBLE else 3e38,
             rng.uniform(-1e6, 1e6), rng.random(), float(rng.randint(-5, 5))]
        )
    if c in (Category.STRING, Category.CHAR, Category.VARCHAR):
        return _random_text(rng)
    if c == Category.BINARY:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(6)))
    if c == Category.DECIMAL:
        p, s = t.precision or 38, t.scale or 0
        digits = rng.choice([1, 3, p])
        unscaled = rng.randrange(-(10**digits) + 1, 10**digits)
        if rng.random() < 0.1:
            unscaled = rng.choice([10**p - 1, -(10**p) + 1, 0])
        return Decimal(unscaled).scaleb(-s, WIDE)
    if c == Category.DATE:
        if wide_times and rng.random() < 0.2:
            return rng.choice([dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1582, 10, 4), dt.date(1582, 10, 15)])
        return dt.date(1900, 1, 1) + dt.timedelta(days=rng.randrange(0, 100000))
    if c in (Category.TIMESTAMP, Category.TIMESTAMP_INSTANT):
        if wide_times and rng.random() < 0.2:
            base = rng.choice([dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 58), dt.datetime(1500, 6, 1)])
        else:
            base = dt.datetime(1680, 1, 1) + dt.timedelta(seconds=rng.randrange(0, 580 * 365 * 86400))
        value = base + dt.timedelta(microseconds=rng.choice([0, 1, 999, 1000, 123456, 999999, rng.randrange(10**6)]))
        if -1 < (value - EPOCH).total_seconds() < 0:
            value -= dt.timedelta(seconds=2)  # ORC cannot store (-1 s, 0) with a fraction (Java and C++ alike)
        if c == Category.TIMESTAMP_INSTANT and rng.random() < 0.5:
            return value.replace(tzinfo=UTC)
        return value
    if c == Category.LIST:
        return [random_value(rng, t.children[0], null_rate, wide_times) for _ in range(rng.choice([0, 1, 2, 3, 5]))]
    if c == Category.MAP:
        out = {}
        for _ in range(rng.choice([0, 1, 2, 4])):
            key = random_value(rng, t.children[0], 0.0, wide_times)
            out[key] = random_value(rng, t.children[1], null_rate, wide_times)
        return out
    if c == Category.STRUCT:
        return {name: random_value(rng, child, null_rate, wide_times) for name, child in t.fields()}
    if c == Category.UNION:
        tag = rng.randrange(len(t.children))
        return (tag, random_value(rng, t.children[tag], null_rate, wide_times))
    raise AssertionError(t)


def random_columns(rng: random.Random, schema: TypeDescription, rows: int, wide_times: bool = False) -> dict:
    """Columns (lists) for ``rows`` rows of a struct schema, with a per-column null rate."""
    out = {}
    for name, child in schema.fields():
        null_rate = rng.choice([0.0, 0.0, 0.1, 0.5, 1.0])
        out[name] = [random_value(rng, child, null_rate, wide_times) for _ in range(rows)]
    return out


# ------------------------------------------------------------------------------------------------ expectations


def _fit_chars(text: str, length: int, pad: bool) -> str:
    cut = text[:length]
    return cut.ljust(length) if pad else cut


def expected(t: TypeDescription, value: object) -> object:
    """What a reader should give back for ``value`` written to a column of type ``t``, canonicalised."""
    if value is None:
        return None
    c = t.category
    if c == Category.FLOAT:
        return _float_key(float(np.float32(value)))
    if c == Category.DOUBLE:
        return _float_key(float(value))
    if c == Category.CHAR:
        return _fit_chars(value, t.max_length or 1, True)
    if c == Category.VARCHAR:
        return _fit_chars(value, t.max_length or 1, False)
    if c == Category.DECIMAL:
        return Decimal(value).quantize(Decimal(1).scaleb(-(t.scale or 0)), rounding=ROUND_HALF_UP, context=WIDE)
    if c in (Category.TIMESTAMP, Category.TIMESTAMP_INSTANT):
        assert isinstance(value, dt.datetime)
        return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    if c == Category.BINARY:
        return bytes(value)
    if c == Category.LIST:
        return [expected(t.children[0], v) for v in value]
    if c == Category.MAP:
        return [(expected(t.children[0], k), expected(t.children[1], v)) for k, v in value.items()]
    if c == Category.STRUCT:
        return tuple(expected(child, value.get(name)) for name, child in t.fields())
    if c == Category.UNION:
        tag, inner = value
        return (tag, expected(t.children[tag], inner))
    return value


def _float_key(v: float) -> object:
    return "NaN" if v != v else v


def canonical(t: TypeDescription, value: object, union_tags: bool = True) -> object:
    """A reader's value in the same canonical form as :func:`expected` (``union_tags`` False for readers that
    return only the union's value)."""
    if value is None:
        return None
    c = t.category
    if c in (Category.FLOAT, Category.DOUBLE):
        return _float_key(float(value))
    if c == Category.DECIMAL:
        return Decimal(value).quantize(Decimal(1).scaleb(-(t.scale or 0)), context=WIDE)
    if c in (Category.TIMESTAMP, Category.TIMESTAMP_INSTANT):
        if hasattr(value, "to_pydatetime"):
            value = value.to_pydatetime()
        return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    if c == Category.BINARY:
        return bytes(value)
    if c == Category.LIST:
        return [canonical(t.children[0], v, union_tags) for v in value]
    if c == Category.MAP:
        pairs = value.items() if isinstance(value, dict) else value
        return [(canonical(t.children[0], k, union_tags), canonical(t.children[1], v, union_tags)) for k, v in pairs]
    if c == Category.STRUCT:
        if isinstance(value, dict):
            return tuple(canonical(child, value.get(name), union_tags) for name, child in t.fields())
        return tuple(canonical(child, v, union_tags) for (_, child), v in zip(t.fields(), value, strict=True))
    if c == Category.UNION:
        if union_tags:
            tag, inner = value
            return (tag, canonical(t.children[tag], inner, union_tags))
        return _loose(value)
    return value


def _loose(value: object) -> object:
    """Canonical form of a value whose type is unknown (a union's value from a reader without tags)."""
    if isinstance(value, float):
        return _float_key(value)
    if isinstance(value, dt.datetime):
        return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, dict):
        return [(_loose(k), _loose(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_loose(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_loose(v) for v in value)
    return value


def untag(t: TypeDescription, value: object) -> object:
    """An expected value with union tags dropped (for readers that return only the union's value).

    The inner value is compared loosely: readers without tags cannot say which alternative it was.
    """
    if value is None:
        return None
    c = t.category
    if c == Category.LIST:
        return [untag(t.children[0], v) for v in value]
    if c == Category.MAP:
        return [(untag(t.children[0], k), untag(t.children[1], v)) for k, v in value]
    if c == Category.STRUCT:
        return tuple(untag(child, v) for (_, child), v in zip(t.fields(), value, strict=True))
    if c == Category.UNION:
        tag, inner = value
        return untag(t.children[tag], inner)
    return value


def has_wide_timestamps(t: TypeDescription, value: object) -> bool:
    """True when the value holds a timestamp pyarrow's nanosecond type cannot hold (outside 1677..2262)."""
    if value is None:
        return False
    c = t.category
    if c in (Category.TIMESTAMP, Category.TIMESTAMP_INSTANT):
        v = value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
        return not dt.datetime(1678, 1, 1) <= v <= dt.datetime(2261, 12, 31)
    if c == Category.LIST:
        return any(has_wide_timestamps(t.children[0], v) for v in value)
    if c == Category.MAP:
        return any(has_wide_timestamps(t.children[0], k) or has_wide_timestamps(t.children[1], v) for k, v in value.items())
    if c == Category.STRUCT:
        return any(has_wide_timestamps(child, value.get(name)) for name, child in t.fields())
    if c == Category.UNION:
        tag, inner = value
        return has_wide_timestamps(t.children[tag], inner)
    return False
