"""Binding predicates: conjuncts over one column fold into one leaf, so a stripe-level index answers them exactly."""

from __future__ import annotations

from metastore.index.bind import FALSE, AllOf, KeyRange, KeySet, bind
from metastore.index.columns import column_type
from metastore.index.predicate import And, Between, Compare, In, Value, ValueKind

TYPES = {"c": column_type("bigint"), "d": column_type("bigint")}


def _int(n: int) -> Value:
    return Value(ValueKind.INTEGER, str(n))


def test_empty_between_is_false() -> None:
    # A stripe holding 0 and 3 satisfies "c >= 1" and "c <= 0" separately; the conjunction holds for no row.
    assert bind(Between("c", _int(1), _int(0)), TYPES) is FALSE


def test_ranges_on_one_column_intersect() -> None:
    expr = And((Compare("c", ">", _int(1)), Compare("c", "<=", _int(9)), Compare("c", ">=", _int(3))))
    assert bind(expr, TYPES) == KeyRange("c", 3, True, 9, True)


def test_in_list_is_filtered_by_a_range_on_its_column() -> None:
    expr = And((In("c", (_int(1), _int(5), _int(9))), Compare("c", ">", _int(4)), Compare("d", "=", _int(2))))
    bound = bind(expr, TYPES)
    assert isinstance(bound, AllOf)
    assert KeySet("c", (5, 9)) in bound.args
    assert KeyRange("d", 2, True, 2, True) in bound.args


def test_disjoint_in_lists_are_false() -> None:
    assert bind(And((In("c", (_int(1),)), In("c", (_int(2),)))), TYPES) is FALSE
