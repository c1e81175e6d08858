"""Java's arithmetic where Hive's estimates depend on it: the casts, rounding and divisions of the JVM, so the
HyperLogLog estimates (:mod:`metastore.stats.hll`) and the aggregated statistics
(:mod:`metastore.stats.aggregate`) come out as Hive computes them, to the last unit."""

from __future__ import annotations

import math

__all__ = ["java_div", "java_fdiv", "java_long", "java_round"]

_LONG_MAX = (1 << 63) - 1
_LONG_MIN = -(1 << 63)


def java_long(x: float) -> int:
    """Java's ``(long) double``: truncate toward zero, NaN to 0, saturate at the long range."""
    if math.isnan(x):
        return 0
    if x >= 9.223372036854775807e18:
        return _LONG_MAX
    if x <= -9.223372036854775808e18:
        return _LONG_MIN
    return int(x)


def java_round(x: float) -> int:
    """Java's ``Math.round(double)``: the closest long, ties toward positive infinity."""
    if math.isnan(x):
        return 0
    f = math.floor(x)
    return java_long(f + 1 if x - f >= 0.5 else f)


def java_div(a: int, b: int) -> int:
    """Java's long division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def java_fdiv(a: float, b: float) -> float:
    """Java's double division, including x/0.0 = ±Infinity and 0/0 = NaN."""
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b
