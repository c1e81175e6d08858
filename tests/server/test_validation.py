"""Statistics validation (issue §5): clear errors naming the column and the rule, nothing of a rejected request
written, and NoSuchObjectException (not "unknown result") for statistics that do not exist."""

from __future__ import annotations

import pytest

from metastore.api.hive_metastore import ttypes as tt
from server import thrift_builders as b
from server.db_inspect import partition_stats_rows, table_stats_rows

PART = "ds=2024-01-01/hr=1"
PART2 = "ds=2024-01-02/hr=1"


@pytest.fixture
def db(client, dbname):
    """A database with table t (every kind, partitioned, two partitions) and u (unpartitioned, numRows known)."""
    b.create_db_and_table(client, dbname, "t", partitioned=True)
    client.add_partitions([b.partition(dbname, "t", ["2024-01-01", "1"]), b.partition(dbname, "t", ["2024-01-02", "1"])])
    client.create_table(
        b.table(dbname, "u", [("flag", "boolean"), ("n", "int")], numRows="10",
                COLUMN_STATS_ACCURATE='{"BASIC_STATS":"true"}')
    )
    return dbname


GOOD = [b.obj("l", "bigint", b.data_long(1, 2, 0, 2)), b.obj("s", "string", b.data_string(3, 1.5, 0, 2))]


def _bad_long(**fields):
    data = tt.LongColumnStatsData(lowValue=1, highValue=2, numNulls=0, numDVs=2)
    for k, v in fields.items():
        setattr(data, k, v)
    return b.obj("l", "bigint", tt.ColumnStatisticsData(longStats=data))


def _decimal_obj(low: tt.Decimal | None, high: tt.Decimal | None):
    data = tt.DecimalColumnStatsData(lowValue=low, highValue=high, numNulls=0, numDVs=1)
    return b.obj("dec", "decimal(20,4)", tt.ColumnStatisticsData(decimalStats=data))


# 5,000 nines: built from bytes, as int(str) refuses numbers of more than 4,300 digits
_HUGE = 10**5000 - 1
_HUGE_DECIMAL = tt.Decimal(unscaled=_HUGE.to_bytes(_HUGE.bit_length() // 8 + 1, "big", signed=True), scale=0)

# Each case: a bad statistics object and words the error must contain (column and rule).
BAD_ENTRIES = {
    "unknown column": (b.obj("nosuch", "bigint", b.data_long(1, 2, 0, 2)), ["nosuch", "does not exist"]),
    "partition key": (b.obj("ds", "string", b.data_string(3, 1.0, 0, 2)), ["ds", "does not exist"]),
    "kind vs type": (b.obj("s", "string", b.data_long(1, 2, 0, 2)), ["'s'", "string", "longStats"]),
    "long for double": (b.obj("d", "double", b.data_long(1, 2, 0, 2)), ["'d'", "double", "longStats"]),
    "complex type": (b.obj("arr", "array<int>", b.data_long(1, 2, 0, 2)), ["arr", "no column statistics"]),
    "negative nulls": (_bad_long(numNulls=-1), ["'l'", "numNulls", "negative"]),
    "negative ndv": (_bad_long(numDVs=-3), ["'l'", "numDVs", "negative"]),
    "negative trues": (b.obj("b", "boolean", b.data_boolean(-1, 2, 0)), ["'b'", "numTrues", "negative"]),
    "negative max len": (b.obj("s", "string", b.data_string(-1, 0.0, 0, 1)), ["'s'", "maxColLen", "negative"]),
    "long low > high": (_bad_long(lowValue=5, highValue=4), ["'l'", "lowValue 5", "highValue 4"]),
    "double low > high": (b.obj("d", "double", b.data_double(2.5, -1.0, 0, 1)), ["'d'", "lowValue", "greater"]),
    "decimal low > high": (b.obj("dec", "decimal(20,4)", b.data_decimal("1.01", "1.001", 0, 1)), ["'dec'", "lowValue", "greater"]),
    "date low > high": (b.obj("dt", "date", b.data_date(10, 9, 0, 1)), ["'dt'", "lowValue", "greater"]),
    "timestamp low > high": (b.obj("ts", "timestamp", b.data_timestamp(10, 9, 0, 1)), ["'ts'", "lowValue", "greater"]),
    "avg > max len": (b.obj("s", "string", b.data_string(3, 3.5, 0, 1)), ["'s'", "avgColLen", "maxColLen"]),
    "binary avg > max": (b.obj("bin", "binary", b.data_binary(1, 2.0, 0)), ["'bin'", "avgColLen", "maxColLen"]),
    "NaN double": (b.obj("d", "double", b.data_double(float("nan"), 1.0, 0, 1)), ["'d'", "NaN"]),
    "bad bitVector": (b.obj("l", "bigint", b.data_long(1, 2, 0, 2, bv=b"garbage!")), ["'l'", "bitVector"]),
    "truncated HLL": (b.obj("l", "bigint", b.data_long(1, 2, 0, 2, bv=b.hll_bytes(range(500))[:-7])), ["'l'", "bitVector"]),
    "bad histogram": (b.obj("l", "bigint", b.data_long(1, 2, 0, 2, hist=b"\x05\x01\x0f\x00junk")), ["'l'", "histogram"]),
    "missing numNulls": (_bad_long(numNulls=None), ["'l'", "numNulls"]),
    "empty union": (b.obj("l", "bigint", tt.ColumnStatisticsData()), ["'l'", "statsData"]),
    # decimal statistics must be values of the column's decimal(20,4) type (issue 16 §6)
    "5000-digit decimal": (
        _decimal_obj(b.dec("1"), _HUGE_DECIMAL),
        ["'dec'", "highValue 9999", "(5000 digits) has 5000 digits before the decimal point",
         "decimal(20,4) holds at most 34"],
    ),
    "decimal integer digits": (
        b.obj("dec", "decimal(20,4)", b.data_decimal("-" + "1" * 35, "1", 0, 2)),
        ["'dec'", "lowValue -1111", "has 35 digits before the decimal point", "decimal(20,4) holds at most 34"],
    ),
    "decimal scale above the column's": (
        b.obj("dec", "decimal(20,4)", b.data_decimal("1.23456", "2", 0, 2)),
        ["'dec'", "lowValue 1.23456 has 5 digits after the decimal point", "decimal(20,4) allows 4"],
    ),
    "decimal negative scale": (
        _decimal_obj(tt.Decimal(unscaled=b"\x01", scale=-2), b.dec("200")),
        ["'dec'", "lowValue has a negative scale -2"],
    ),
    "decimal empty unscaled": (
        _decimal_obj(b.dec("1"), tt.Decimal(unscaled=b"", scale=0)),
        ["'dec'", "highValue has an empty unscaled value"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_ENTRIES))
def test_bad_table_statistics_are_refused_and_nothing_is_written(client, server, db, case):
    bad, words = BAD_ENTRIES[case]
    with pytest.raises(tt.InvalidInputException) as info:
        client.update_table_column_statistics(b.table_stats(db, "t", [GOOD[0], bad, GOOD[1]]))
    for w in words:
        assert w in info.value.message, (w, info.value.message)
    assert table_stats_rows(server.db_url, db, "t") == []


@pytest.mark.parametrize(
    "case",
    ["unknown column", "kind vs type", "negative nulls", "long low > high", "bad bitVector", "5000-digit decimal",
     "decimal scale above the column's"],
)
def test_bad_partition_statistics_in_a_batch_write_nothing(client, server, db, case):
    bad, words = BAD_ENTRIES[case]
    mixed = tt.SetPartitionsStatsRequest(
        colStats=[
            b.partition_stats(db, "t", PART, GOOD),
            b.table_stats(db, "t", GOOD),
            b.partition_stats(db, "t", PART2, [GOOD[1], bad]),
        ],
        needMerge=False,
    )
    partitions_only = tt.SetPartitionsStatsRequest(colStats=[mixed.colStats[0], mixed.colStats[2]])
    for call, req in ((client.set_aggr_stats_for, mixed), (client.update_partition_column_statistics_req, partitions_only)):
        with pytest.raises(tt.InvalidInputException) as info:
            call(req)
        assert PART2 in info.value.message and all(w in info.value.message for w in words)
        assert partition_stats_rows(server.db_url, db, "t") == []
        assert table_stats_rows(server.db_url, db, "t") == []


def test_decimals_that_fit_the_column_are_stored_at_its_scale(client, server, db):
    """Extra trailing zeros beyond the column's scale are fine (Hive's HiveDecimal drops them); the largest
    value of decimal(20,4) fits; what is read back has the column's scale."""
    stats = b.data_decimal("-9999999999999999.9999", "1.5000000000", 0, 2)
    client.update_table_column_statistics(b.table_stats(db, "t", [b.obj("dec", "decimal(20,4)", stats)]))
    (got,) = client.get_table_statistics_req(tt.TableStatsRequest(dbName=db, tblName="t", colNames=["dec"])).tableStats
    low, high = got.statsData.decimalStats.lowValue, got.statsData.decimalStats.highValue
    assert (int.from_bytes(low.unscaled, "big", signed=True), low.scale) == (-99999999999999999999, 4)
    assert (int.from_bytes(high.unscaled, "big", signed=True), high.scale) == (15000, 4)
    assert table_stats_rows(server.db_url, db, "t") == [("dec", "hive")]


def test_need_merge_request_with_a_bad_entry_changes_nothing(client, server, db):
    client.update_partition_column_statistics(b.partition_stats(db, "t", PART, GOOD))
    before = client.get_partitions_statistics_req(
        tt.PartitionsStatsRequest(dbName=db, tblName="t", colNames=["l", "s"], partNames=[PART])
    )
    req = tt.SetPartitionsStatsRequest(
        colStats=[b.partition_stats(db, "t", PART, GOOD), b.partition_stats(db, "t", PART2, [BAD_ENTRIES["kind vs type"][0]])],
        needMerge=True,
    )
    with pytest.raises(tt.InvalidInputException):
        client.set_aggr_stats_for(req)
    after = client.get_partitions_statistics_req(
        tt.PartitionsStatsRequest(dbName=db, tblName="t", colNames=["l", "s"], partNames=[PART])
    )
    assert after == before
    assert {p for p, _, _ in partition_stats_rows(server.db_url, db, "t")} == {PART}


def test_unknown_objects_are_no_such_object(client, server, db):
    with pytest.raises(tt.NoSuchObjectException, match="nodb"):
        client.update_table_column_statistics(b.table_stats("nodb_x", "t", GOOD))
    with pytest.raises(tt.NoSuchObjectException, match="nope"):
        client.update_table_column_statistics(b.table_stats(db, "nope", GOOD))
    with pytest.raises(tt.NoSuchObjectException, match="1999"):
        client.update_partition_column_statistics(b.partition_stats(db, "t", "ds=1999-01-01/hr=1", GOOD))
    # A missing partition among existing ones: nothing is written.
    with pytest.raises(tt.NoSuchObjectException, match="1999"):
        client.set_aggr_stats_for(
            tt.SetPartitionsStatsRequest(
                colStats=[b.partition_stats(db, "t", PART, GOOD), b.partition_stats(db, "t", "ds=1999-01-01/hr=1", GOOD)]
            )
        )
    # A partition name that does not fit the keys is no partition of the table.
    with pytest.raises(tt.NoSuchObjectException):
        client.update_partition_column_statistics(b.partition_stats(db, "t", "month=1", GOOD))
    with pytest.raises((tt.NoSuchObjectException, tt.InvalidInputException), match="not partitioned"):
        client.update_partition_column_statistics(b.partition_stats(db, "u", "x=1", [b.obj("n", "int", b.data_long(1, 2, 0, 2))]))
    assert partition_stats_rows(server.db_url, db, "t") == []


def test_descriptor_mismatches_are_invalid_input(client, db):
    tbl_level_for_partition = b.table_stats(db, "t", GOOD)
    with pytest.raises(tt.InvalidInputException, match="isTblLevel"):
        client.update_partition_column_statistics(tbl_level_for_partition)
    part_level_for_table = b.partition_stats(db, "t", PART, GOOD)
    with pytest.raises(tt.InvalidInputException, match="isTblLevel"):
        client.update_table_column_statistics(part_level_for_table)
    no_name = b.partition_stats(db, "t", PART, GOOD)
    no_name.statsDesc.partName = None
    with pytest.raises(tt.InvalidInputException, match="partName"):
        client.update_partition_column_statistics(no_name)


def test_counts_above_known_row_count_are_refused(client, server, db):
    with pytest.raises(tt.InvalidInputException, match="'flag'.*exceeds the 10 rows"):
        client.update_table_column_statistics(b.table_stats(db, "u", [b.obj("flag", "boolean", b.data_boolean(8, 5, 0))]))
    with pytest.raises(tt.InvalidInputException, match="'n'.*numNulls 11 exceeds"):
        client.update_table_column_statistics(b.table_stats(db, "u", [b.obj("n", "int", b.data_long(1, 2, 11, 2))]))
    client.update_table_column_statistics(b.table_stats(db, "u", [b.obj("flag", "boolean", b.data_boolean(4, 5, 1))]))
    assert table_stats_rows(server.db_url, db, "u") == [("flag", "hive")]


# ---------------------------------------------------------------- reads of statistics that do not exist


def test_reading_missing_statistics_is_no_such_object(client, db):
    with pytest.raises(tt.NoSuchObjectException, match="'l'"):
        client.get_table_column_statistics(db, "t", "l")
    with pytest.raises(tt.NoSuchObjectException, match="nosuch"):
        client.get_table_column_statistics(db, "t", "nosuch")
    with pytest.raises(tt.NoSuchObjectException, match="nope"):
        client.get_table_column_statistics(db, "nope", "l")
    with pytest.raises(tt.NoSuchObjectException, match="'l'"):
        client.get_partition_column_statistics(db, "t", PART, "l")
    with pytest.raises(tt.NoSuchObjectException, match="1999"):
        client.get_partition_column_statistics(db, "t", "ds=1999-01-01/hr=1", "l")
    with pytest.raises(tt.NoSuchObjectException, match="nope"):
        client.get_partition_column_statistics(db, "nope", PART, "l")
    # The client is still usable afterwards (errors are replies, not broken connections).
    assert client.get_all_tables(db) == ["t", "u"]
