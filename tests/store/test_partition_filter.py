"""Hive partition filters: parsing (good, bad, fuzzed) and their meaning on both databases."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metastore.catalog import FieldSchema
from metastore.errors import InvalidInput, NoSuchObject
from metastore.store import Store
from metastore.store.partition_filter import And, Between, Compare, In, Not, Or, compile_filter, parse_filter
from store.builders import partition

KEYS = [FieldSchema("ds", "string"), FieldSchema("hr", "int")]


def test_parse_tree() -> None:
    tree = parse_filter("ds = '2024-01-01' and (hr > 5 or not hr in (1, 2)) OR hr NOT BETWEEN -3 AND 4")
    assert isinstance(tree, Or)
    left, right = tree.operands
    assert isinstance(left, And) and isinstance(right, Between) and right.negated
    assert right.low.value == -3
    cmp, inner = left.operands
    assert isinstance(cmp, Compare) and (cmp.key.name, cmp.op, cmp.value.value) == ("ds", "=", "2024-01-01")
    assert isinstance(inner, Or) and isinstance(inner.operands[1], Not)
    assert isinstance(inner.operands[1].operand, In)


@pytest.mark.parametrize(
    "text",
    [
        "ds='x'",
        'ds == "x"',
        "ds <=> 'x'",
        "'x' = ds",
        "5 < hr",
        "`ds` = 'x'",
        "(hr) IN (1, 2)",
        "(hr) NOT IN (1)",
        "hr not in (1,2,3)",
        "ds like '2024%'",
        "ds not like '2024%'",
        "ds = 'a' 'b'",
        "ds = 'it\\'s'",
        "ds = DATE '2024-01-01'",
        "ds = 2024-01-01",
        "ds = 2024-01-01 10:00:00",
        "ds = TIMESTAMP '2024-01-01 10:00:00'",
        "NOT NOT ds = 'x'",
        "((ds = 'x'))",
        "hr between 1 and 5 and ds >= 'a'",
        "HR <> 5 AnD ds != 'x'",
    ],
)
def test_good_filters_parse(text: str) -> None:
    compile_filter(text, KEYS, lambda i: sa.column(f"k{i}"), "sqlite")


def test_errors_carry_the_words_hive_clients_look_for() -> None:
    # Hive 2.3's TestHiveMetaStore.testPartitionFilter matches these phrases in the messages.
    with pytest.raises(InvalidInput, match="^Error parsing partition filter; .*expected a value"):
        compile_filter("ds >= ", KEYS, lambda i: sa.column(f"k{i}"), "sqlite")
    with pytest.raises(InvalidInput, match="<c1> is not a partitioning key for the table"):
        compile_filter('c1 >= "p12"', KEYS, lambda i: sa.column(f"k{i}"), "sqlite")
    with pytest.raises(InvalidInput, match="Filtering is supported only on partition keys of type string"):
        compile_filter('hr >= "p12"', KEYS, lambda i: sa.column(f"k{i}"), "sqlite")


def test_filter_on_a_missing_table_says_table_not_found(filtered: Store) -> None:
    with filtered.read() as uow, pytest.raises(NoSuchObject, match="^invDB.invTable table not found$"):
        uow.partitions.list_by_filter("invDB", "invTable", "ds = 'x'")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("ds = ", "expected a value.*position 5"),
        ("ds = 'x' and", "expected a condition.*end of the filter"),
        ("ds = 'x", "not closed.*position 5"),
        ("(ds = 'x'", "expected '\\)'"),
        ("ds = 'x')", "expected AND, OR or the end.*position 8"),
        ("ds 'x'", "expected a comparison operator after key 'ds'"),
        ("ds = 'x' ds = 'y'", "position 9"),
        ("nokey = 1", "<nokey> is not a partitioning key for the table.*ds, hr"),
        ("hr = 'abc'", "is an integer; 'abc' is not an integer"),
        ("hr = 2024-01-01", "not an integer"),
        ("hr = 99999999999999999999", "out of range"),
        ("ds = 'x' ; drop table", "unexpected character ';'"),
        ("ds like 'a\\\\\\\\('", "not a valid regular expression"),
        ("ds like 1", "LIKE needs a quoted regular expression"),
        ("ds = DATE '2024-13-01'", "not a valid date"),
        ("ds NOT = 'x'", "expected BETWEEN, IN or LIKE after NOT"),
        ("hr between 1 5", "expected AND in BETWEEN"),
        ("hr in ()", "expected a value"),
        ("`` = 1", "quoted name is empty"),
        ("ds = 'a\x00b'", "NUL"),
        ("(" * 200 + "ds = 'x'" + ")" * 200, "nests deeper"),
        ("ds = é", "unexpected character 'é'"),
    ],
)
def test_bad_filters_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        compile_filter(text, KEYS, lambda i: sa.column(f"k{i}"), "postgresql", lambda i: ["a"])


_ALPHABET = st.sampled_from(list("dshr=<>!()'\"`,-_ 0123456789aAnNoOtTbBiIlLkKeE%\\\n\x00é;*"))
_TOKENS = st.sampled_from(
    [
        "ds",
        "hr",
        "x",
        "=",
        "<>",
        "<=",
        ">",
        "AND",
        "OR",
        "NOT",
        "IN",
        "BETWEEN",
        "LIKE",
        "(",
        ")",
        ",",
        "'a'",
        '"b"',
        "5",
        "-7",
        "DATE",
        "'2024-01-01'",
        "2024-01-01",
        "`hr`",
        "'",
        "`",
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        st.text(max_size=40), st.text(_ALPHABET, max_size=40), st.lists(_TOKENS, max_size=12).map(" ".join)
    )
)
def test_fuzz_only_invalid_input(text: str) -> None:
    for dialect in ("sqlite", "postgresql"):
        try:
            compile_filter(text, KEYS, lambda i: sa.column(f"k{i}"), dialect, lambda i: ["a", "b"])
        except InvalidInput:
            pass


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.lists(_TOKENS, min_size=1, max_size=10).map(" ".join))
def test_fuzz_through_the_database_only_invalid_input(filtered: Store, text: str) -> None:
    # Whatever parses must also run: no database error for any accepted filter.
    with filtered.read() as uow:
        try:
            uow.partitions.list_names_by_filter("sales", "orders", text)
        except InvalidInput:
            pass


@pytest.fixture
def filtered(store: Store) -> Store:
    from metastore.catalog import Database
    from store.builders import sales_table

    values = [
        ["2024-01-01", "0"],
        ["2024-01-01", "5"],
        ["2024-01-01", "10"],
        ["2024-01-02", "5"],
        ["2024-01-02", "-3"],
        ["2024-01-10", "07"],
        ["b", "5"],
        ["B", "5"],
        ["a%b", "1"],
        ["a_b", "1"],
        ["__HIVE_DEFAULT_PARTITION__", "__HIVE_DEFAULT_PARTITION__"],
        ["ä", "1"],
    ]
    with store.transaction() as uow:
        uow.databases.create(Database(name="sales"))
        uow.tables.create(sales_table())
        uow.partitions.add([partition(v) for v in values])
    return store


def _names(store: Store, text: str) -> list[str]:
    with store.read() as uow:
        names = uow.partitions.list_names_by_filter("sales", "orders", text)
        assert uow.partitions.count_by_filter("sales", "orders", text) == len(names)
        assert [p.values for p in uow.partitions.list_by_filter("sales", "orders", text)] == [
            uow.partitions.get_by_name("sales", "orders", n).values for n in names
        ]
        return names


def _vals(store: Store, text: str) -> set[tuple[str, str]]:
    from metastore.partnames import values_from_part_name

    return {tuple(values_from_part_name(n, ["ds", "hr"])) for n in _names(store, text)}


def test_semantics(filtered: Store) -> None:
    s = filtered
    assert _vals(s, "ds = '2024-01-01' and hr > 4") == {("2024-01-01", "5"), ("2024-01-01", "10")}
    # Integral keys compare as numbers ('10' > '5', '07' = 7); non-numbers match no comparison.
    assert _vals(s, "hr >= 7") == {("2024-01-01", "10"), ("2024-01-10", "07")}
    assert _vals(s, "hr = 7") == {("2024-01-10", "07")}
    assert _vals(s, "hr < 0") == {("2024-01-02", "-3")}
    assert len(_vals(s, "hr != 5")) == 7
    assert _vals(s, "hr between -5 and 0") == {("2024-01-01", "0"), ("2024-01-02", "-3")}
    assert _vals(s, "hr in (0, '10')") == {("2024-01-01", "0"), ("2024-01-01", "10")}
    # String keys compare as strings, byte-wise on both databases ('B' < 'a' < 'b' < 'ä').
    assert _vals(s, "ds > '2024-01-02'") == {
        ("2024-01-10", "07"),
        ("b", "5"),
        ("B", "5"),
        ("a%b", "1"),
        ("a_b", "1"),
        ("__HIVE_DEFAULT_PARTITION__", "__HIVE_DEFAULT_PARTITION__"),
        ("ä", "1"),
    }
    assert _vals(s, "ds < 'a' and ds > '2024-12'") == {
        ("B", "5"),
        ("__HIVE_DEFAULT_PARTITION__", "__HIVE_DEFAULT_PARTITION__"),
    }
    assert _vals(s, "ds >= 'b'") == {("b", "5"), ("ä", "1")}
    assert _vals(s, "ds = 2024-01-02") == {("2024-01-02", "5"), ("2024-01-02", "-3")}
    assert _vals(s, "'2024-01-02' = ds and 5 = hr") == {("2024-01-02", "5")}
    # LIKE: a regular expression the whole value must match, case-sensitive (Hive 2.3's String.matches).
    assert _vals(s, "ds like '2024-01-1.*'") == {("2024-01-10", "07")}
    assert _vals(s, "ds like '2024-01-1%'") == set()  # % and _ are no wildcards
    assert _vals(s, "ds like 'b'") == {("b", "5")}
    assert _vals(s, "ds like '2024'") == set()  # a part of the value is not enough
    assert _vals(s, "ds like 'a%b'") == {("a%b", "1")}
    assert _vals(s, "ds like 'a_b'") == {("a_b", "1")}
    assert _vals(s, "ds like 'a.b'") == {("a%b", "1"), ("a_b", "1")}
    assert _vals(s, "ds like '[bB]|a\\%b'") == {("b", "5"), ("B", "5"), ("a%b", "1")}
    assert len(_vals(s, "ds not like '2024.*'")) == 6
    assert _vals(s, "hr like '0.*'") == {("2024-01-01", "0"), ("2024-01-10", "07")}
    assert _vals(s, "not (ds like '2.*' or ds like '.')") == {
        ("a%b", "1"),
        ("a_b", "1"),
        ("__HIVE_DEFAULT_PARTITION__", "__HIVE_DEFAULT_PARTITION__"),
    }
    assert _names(s, "ds = 'none'") == []
    with filtered.read() as uow:
        assert uow.partitions.list_names_by_filter("sales", "orders", "hr > -100", max_parts=2) == [
            "ds=2024-01-01/hr=0",
            "ds=2024-01-01/hr=10",
        ]


def test_filter_on_unpartitioned_table_is_invalid_input(filtered: Store) -> None:
    from store.builders import sales_table

    with filtered.transaction() as uow:
        uow.tables.create(sales_table("flat", keys=()))
        with pytest.raises(InvalidInput, match="not partitioned"):
            uow.partitions.list_by_filter("sales", "flat", "x = 1")
