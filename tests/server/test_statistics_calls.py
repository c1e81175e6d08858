"""Every column statistics call of issue §5, with all eight kinds, through our generated client."""

from __future__ import annotations

import copy

import pytest

from metastore.api.hive_metastore import ttypes as tt
from metastore.stats.aggregate import aggregate_partition_stats
from metastore.stats.kll import histogram_for
from metastore.stats.model import ColumnStatsEntry, StatsKind
from metastore.stats.ndv import NdvSketch
from metastore.wire.stats import entry_from_thrift, entry_to_thrift
from server import thrift_builders as b
from server.db_inspect import partition_stats_rows, table_stats_rows

COLS = [n for n, t in b.ALL_KINDS_COLUMNS if t != "array<int>"]
TYPES = dict(b.ALL_KINDS_COLUMNS)
PART = "ds=2024-01-01/hr=1"


@pytest.fixture(scope="module")
def sketch_server(server_factory):
    """A second server on the same database that returns bitVectors and histograms."""
    return server_factory("--fetch-bitvector", "--fetch-kll")


@pytest.fixture
def sketch_client(sketch_server):
    with sketch_server.client() as c:
        yield c


def _by_name(objs):
    return {o.colName: o for o in objs}


def _partitioned(client, db, parts=(PART,)):
    b.create_db_and_table(client, db, "t", partitioned=True)
    for name in parts:
        ds, hr = (kv.split("=")[1] for kv in name.split("/"))
        client.add_partition(b.partition(db, "t", [ds, hr]))


# ---------------------------------------------------------------- exact round trips


def test_table_statistics_round_trip_every_kind(client, dbname):
    b.create_db_and_table(client, dbname)
    sent = b.all_kinds_objs()
    assert client.update_table_column_statistics(b.table_stats(dbname, "t", sent, last_analyzed=1700000123)) is True

    for o in sent:
        got = client.get_table_column_statistics(dbname, "t", o.colName)
        assert got.statsDesc.isTblLevel is True
        assert (got.statsDesc.dbName, got.statsDesc.tableName) == (dbname, "t")
        assert got.statsDesc.lastAnalyzed == 1700000123
        assert got.statsObj == b.as_served([o])
    res = client.get_table_statistics_req(tt.TableStatsRequest(dbName=dbname, tblName="t", colNames=COLS))
    assert res.tableStats == b.as_served(sent)


def test_partition_statistics_round_trip_every_kind(client, dbname):
    _partitioned(client, dbname)
    sent = b.all_kinds_objs(seed=3)
    assert client.update_partition_column_statistics(b.partition_stats(dbname, "t", PART, sent)) is True
    for o in sent:
        got = client.get_partition_column_statistics(dbname, "t", PART, o.colName)
        assert got.statsDesc.isTblLevel is False
        assert got.statsDesc.partName == PART
        assert got.statsObj == b.as_served([o])
    res = client.get_partitions_statistics_req(
        tt.PartitionsStatsRequest(dbName=dbname, tblName="t", colNames=COLS, partNames=[PART])
    )
    assert res.partStats == {PART: b.as_served(sent)}


def test_req_variants_and_set_aggr_stats_for_write_the_same(client, dbname):
    _partitioned(client, dbname, [PART, "ds=2024-01-02/hr=1"])
    tbl = b.all_kinds_objs(seed=1)
    part = b.all_kinds_objs(seed=2)
    r = client.update_table_column_statistics_req(tt.SetPartitionsStatsRequest(colStats=[b.table_stats(dbname, "t", tbl)]))
    assert r.result is True
    r = client.update_partition_column_statistics_req(
        tt.SetPartitionsStatsRequest(colStats=[b.partition_stats(dbname, "t", PART, part)])
    )
    assert r.result is True
    # set_aggr_stats_for takes table- and partition-level statistics of many partitions in one request.
    other = b.all_kinds_objs(seed=5)
    assert client.set_aggr_stats_for(
        tt.SetPartitionsStatsRequest(
            colStats=[b.partition_stats(dbname, "t", "ds=2024-01-02/hr=1", other)], needMerge=False
        )
    ) is True
    assert client.get_table_statistics_req(tt.TableStatsRequest(dbName=dbname, tblName="t", colNames=COLS)).tableStats == b.as_served(tbl)
    res = client.get_partitions_statistics_req(
        tt.PartitionsStatsRequest(dbName=dbname, tblName="t", colNames=COLS, partNames=[PART, "ds=2024-01-02/hr=1"])
    )
    assert res.partStats == {PART: b.as_served(part), "ds=2024-01-02/hr=1": b.as_served(other)}


def test_a_second_write_replaces_without_merge(client, server, dbname):
    b.create_db_and_table(client, dbname)
    client.update_table_column_statistics(b.table_stats(dbname, "t", [b.obj("l", "bigint", b.data_long(1, 5, 2, 3))]))
    client.update_table_column_statistics(b.table_stats(dbname, "t", [b.obj("l", "bigint", b.data_long(7, 9, 1, 2))]))
    got = client.get_table_column_statistics(dbname, "t", "l").statsObj[0].statsData.longStats
    assert (got.lowValue, got.highValue, got.numNulls, got.numDVs) == (7, 9, 1, 2)
    assert table_stats_rows(server.db_url, dbname, "t") == [("l", "hive")]


def test_column_names_are_case_insensitive(client, dbname):
    b.create_db_and_table(client, dbname)
    client.update_table_column_statistics(b.table_stats(dbname, "t", [b.obj("L", "BIGINT", b.data_long(1, 5, 2, 3))]))
    got = client.get_table_column_statistics(dbname, "T", "l")
    assert got.statsObj[0].colName == "l"
    assert got.statsObj[0].colType == "bigint"


@pytest.fixture(scope="module")
def hive4_server(server_factory):
    """A server on the same database serving timestamp statistics as Hive 4 does (timestampStats)."""
    return server_factory(env={"METASTORE_STATS_TIMESTAMP_AS_LONG": "false"})


def test_timestamp_statistics_as_long_for_old_clients_and_as_timestamp_for_hive4(client, hive4_server, dbname):
    b.create_db_and_table(client, dbname)
    # A Hive 2.3/3 client has no timestampStats member: it writes epoch seconds as longStats.
    client.update_table_column_statistics(b.table_stats(dbname, "t", [b.obj("ts", "timestamp", b.data_long(10, 20, 0, 5))]))
    got = client.get_table_column_statistics(dbname, "t", "ts").statsObj[0].statsData
    assert (got.timestampStats, got.longStats.lowValue, got.longStats.highValue) == (None, 10, 20)
    assert client.getMetaConf("hive.metastore.stats.legacy.timestamp.as.long") == "true"
    with hive4_server.client() as hive4:
        got = hive4.get_table_column_statistics(dbname, "t", "ts").statsObj[0].statsData
        assert got.longStats is None
        assert (got.timestampStats.lowValue.secondsSinceEpoch, got.timestampStats.highValue.secondsSinceEpoch) == (10, 20)
        # A Hive 4 client writes timestampStats; an old client still reads them as seconds.
        hive4.update_table_column_statistics(
            b.table_stats(dbname, "t", [b.obj("ts", "timestamp", b.data_timestamp(-5, 7, 1, 2))])
        )
        assert hive4.get_table_statistics_req(
            tt.TableStatsRequest(dbName=dbname, tblName="t", colNames=["ts"])
        ).tableStats == [b.obj("ts", "timestamp", b.data_timestamp(-5, 7, 1, 2))]
    got = client.get_table_column_statistics(dbname, "t", "ts").statsObj[0].statsData.longStats
    assert (got.lowValue, got.highValue, got.numNulls, got.numDVs) == (-5, 7, 1, 2)


def test_decimal_values_keep_unscaled_bytes_and_scale(client, dbname):
    # a decimal(38,18) column, so that values of Hive's maximum precision fit it (statistics must fit the column)
    b.create_db_and_table(client, dbname, cols=[("dec", "decimal(38,18)")])
    cases = [
        ("0", "0.0000"), ("-1", "1"), ("-0.0001", "99999999999999999999.9999"), ("-128", "127"), ("-129", "255"),
        # 38 digits (Hive's maximum precision): more than Python's default decimal context keeps.
        ("-12345678901234567890.123456789012345678", "99999999999999999999.999999999999999999"),
    ]
    for low, high in cases:
        sent = b.obj("dec", "decimal(38,18)", b.data_decimal(low, high, 0, 1))
        client.update_table_column_statistics(b.table_stats(dbname, "t", [sent]))
        got = client.get_table_column_statistics(dbname, "t", "dec").statsObj[0]
        assert got == sent, (low, high)


# ---------------------------------------------------------------- sketches: returned only when configured


def test_bitvectors_and_histograms_only_with_fetch_flags(client, sketch_client, dbname):
    _partitioned(client, dbname)
    bv = b.hll_bytes(range(100))
    hist = histogram_for(StatsKind.LONG, list(range(100)))
    sent = [
        b.obj("l", "bigint", b.data_long(0, 99, 0, 100, bv=bv, hist=hist)),
        b.obj("s", "string", b.data_string(5, 2.5, 0, 100, bv=bv)),
    ]
    client.update_table_column_statistics(b.table_stats(dbname, "t", sent))
    client.update_partition_column_statistics(b.partition_stats(dbname, "t", PART, sent))

    plain = client.get_table_column_statistics(dbname, "t", "l").statsObj[0].statsData.longStats
    assert (plain.bitVectors, plain.histogram, plain.numDVs) == (None, None, 100)
    full = sketch_client.get_table_column_statistics(dbname, "t", "l").statsObj[0].statsData.longStats
    assert (full.bitVectors, full.histogram) == (bv, hist)

    req = tt.TableStatsRequest(dbName=dbname, tblName="t", colNames=["l", "s"])
    assert all(
        (o.statsData.longStats or o.statsData.stringStats).bitVectors is None
        for o in client.get_table_statistics_req(req).tableStats
    )
    assert sketch_client.get_table_statistics_req(req).tableStats == sent

    preq = tt.PartitionsStatsRequest(dbName=dbname, tblName="t", colNames=["l", "s"], partNames=[PART])
    assert sketch_client.get_partitions_statistics_req(preq).partStats == {PART: sent}
    assert client.get_partitions_statistics_req(preq).partStats[PART][0].statsData.longStats.bitVectors is None
    assert sketch_client.get_partition_column_statistics(dbname, "t", PART, "s").statsObj == [sent[1]]

    agg_plain = client.get_aggr_stats_for(preq)
    agg_full = sketch_client.get_aggr_stats_for(preq)
    assert agg_plain.colStats[0].statsData.longStats.bitVectors is None
    assert NdvSketch.from_bytes(agg_full.colStats[0].statsData.longStats.bitVectors).estimate() == 100


# ---------------------------------------------------------------- merge on write (needMerge)


def test_set_aggr_stats_for_with_need_merge(client, sketch_client, dbname):
    _partitioned(client, dbname, [PART, "ds=2024-01-02/hr=1"])
    first_bv, second_bv = b.hll_bytes(range(0, 1000)), b.hll_bytes(range(500, 1500))
    first = [
        b.obj("l", "bigint", b.data_long(0, 999, 3, 1000, bv=first_bv)),
        b.obj("b", "boolean", b.data_boolean(5, 6, 1)),
        b.obj("s", "string", b.data_string(10, 4.0, 2, 50)),
        b.obj("dec", "decimal(20,4)", b.data_decimal("1.5", "2.5", 0, 3)),
    ]
    second = [
        b.obj("l", "bigint", b.data_long(500, 1499, 4, 1000, bv=second_bv)),
        b.obj("b", "boolean", b.data_boolean(1, 2, 3)),
        b.obj("s", "string", b.data_string(7, 6.5, 1, 70)),
        b.obj("dec", "decimal(20,4)", b.data_decimal("-3", "2", 1, 4)),
    ]
    for objs in (first, second):
        client.set_aggr_stats_for(
            tt.SetPartitionsStatsRequest(
                colStats=[b.partition_stats(dbname, "t", PART, objs), b.table_stats(dbname, "t", objs)],
                needMerge=True,
            )
        )
    expected_ndv = NdvSketch.from_bytes(first_bv).merged(NdvSketch.from_bytes(second_bv)).estimate()
    assert 1400 < expected_ndv < 1600

    for got in (
        _by_name(sketch_client.get_table_statistics_req(
            tt.TableStatsRequest(dbName=dbname, tblName="t", colNames=["l", "b", "s", "dec"])).tableStats),
        _by_name(sketch_client.get_partitions_statistics_req(
            tt.PartitionsStatsRequest(dbName=dbname, tblName="t", colNames=["l", "b", "s", "dec"], partNames=[PART])
        ).partStats[PART]),
    ):
        lg = got["l"].statsData.longStats
        assert (lg.lowValue, lg.highValue, lg.numNulls, lg.numDVs) == (0, 1499, 7, expected_ndv)
        assert NdvSketch.from_bytes(lg.bitVectors).estimate() == expected_ndv
        bo = got["b"].statsData.booleanStats
        assert (bo.numTrues, bo.numFalses, bo.numNulls) == (6, 8, 4)
        st = got["s"].statsData.stringStats
        assert (st.maxColLen, st.avgColLen, st.numNulls, st.numDVs) == (10, 6.5, 3, 70)
        de = got["dec"].statsData.decimalStats
        assert (de.lowValue, de.highValue, de.numNulls, de.numDVs) == (b.dec("-3"), b.dec("2.5"), 1, 4)

    # The other partition was never written.
    with pytest.raises(tt.NoSuchObjectException):
        client.get_partition_column_statistics(dbname, "t", "ds=2024-01-02/hr=1", "l")


def test_need_merge_without_stored_statistics_writes_them(client, dbname):
    _partitioned(client, dbname)
    objs = [b.obj("i", "int", b.data_long(1, 2, 0, 2))]
    client.set_aggr_stats_for(tt.SetPartitionsStatsRequest(colStats=[b.partition_stats(dbname, "t", PART, objs)], needMerge=True))
    assert client.get_partition_column_statistics(dbname, "t", PART, "i").statsObj == objs


# ---------------------------------------------------------------- batched reads return what exists


def test_batched_reads_return_only_what_exists(client, dbname):
    _partitioned(client, dbname, [PART, "ds=2024-01-02/hr=1", "ds=2024-01-03/hr=1"])
    client.update_table_column_statistics(b.table_stats(dbname, "t", [b.obj("l", "bigint", b.data_long(1, 2, 0, 2))]))
    client.update_partition_column_statistics(
        b.partition_stats(dbname, "t", PART, [b.obj("l", "bigint", b.data_long(1, 2, 0, 2)), b.obj("i", "int", b.data_long(1, 2, 0, 2))])
    )
    client.update_partition_column_statistics(
        b.partition_stats(dbname, "t", "ds=2024-01-02/hr=1", [b.obj("i", "int", b.data_long(3, 4, 0, 2))])
    )
    res = client.get_table_statistics_req(tt.TableStatsRequest(dbName=dbname, tblName="t", colNames=["l", "i", "nosuch"]))
    assert [o.colName for o in res.tableStats] == ["l"]
    assert client.get_table_statistics_req(tt.TableStatsRequest(dbName=dbname, tblName="t", colNames=[])).tableStats == []

    res = client.get_partitions_statistics_req(
        tt.PartitionsStatsRequest(
            dbName=dbname, tblName="t", colNames=["l", "i", "s"],
            partNames=[PART, "ds=2024-01-02/hr=1", "ds=2024-01-03/hr=1", "ds=1999-01-01/hr=1"],
        )
    )
    assert {k: [o.colName for o in v] for k, v in res.partStats.items()} == {PART: ["l", "i"], "ds=2024-01-02/hr=1": ["i"]}
    with pytest.raises(tt.NoSuchObjectException):
        client.get_table_statistics_req(tt.TableStatsRequest(dbName=dbname, tblName="nope", colNames=["l"]))
    with pytest.raises(tt.NoSuchObjectException):
        client.get_partitions_statistics_req(
            tt.PartitionsStatsRequest(dbName=dbname, tblName="nope", colNames=["l"], partNames=[PART])
        )


# ---------------------------------------------------------------- get_aggr_stats_for


def _aggr(client, db, parts, cols):
    return client.get_aggr_stats_for(tt.PartitionsStatsRequest(dbName=db, tblName="t", colNames=cols, partNames=parts))


def test_aggr_parts_found_counts_partitions_with_every_column(client, dbname):
    names = [f"ds=2024-01-0{d}/hr=1" for d in (1, 2, 3)]
    _partitioned(client, dbname, names)
    for n in names:
        client.update_partition_column_statistics(b.partition_stats(dbname, "t", n, [b.obj("l", "bigint", b.data_long(1, 2, 0, 2))]))
    client.update_partition_column_statistics(b.partition_stats(dbname, "t", names[0], [b.obj("i", "int", b.data_long(1, 2, 0, 2))]))
    assert _aggr(client, dbname, names, ["l"]).partsFound == 3
    assert _aggr(client, dbname, names, ["l", "i"]).partsFound == 1
    assert _aggr(client, dbname, names, ["i"]).partsFound == 1
    assert _aggr(client, dbname, names + ["ds=1999-01-01/hr=1"], ["l"]).partsFound == 3
    empty = _aggr(client, dbname, [], ["l"])
    assert (empty.colStats, empty.partsFound) == ([], 0)
    empty = _aggr(client, dbname, names, [])
    assert (empty.colStats, empty.partsFound) == ([], 0)
    nothing = _aggr(client, dbname, names, ["s"])
    assert (nothing.colStats, nothing.partsFound) == ([], 0)
    with pytest.raises(tt.NoSuchObjectException):
        client.get_aggr_stats_for(tt.PartitionsStatsRequest(dbName=dbname, tblName="nope", colNames=["l"], partNames=names))


def test_aggr_all_found_without_sketches(client, dbname):
    names = [f"ds=2024-01-0{d}/hr=1" for d in (1, 2, 3)]
    _partitioned(client, dbname, names)
    per_part = [
        [b.obj("l", "bigint", b.data_long(-5, 10, 1, 7)), b.obj("b", "boolean", b.data_boolean(1, 2, 3)),
         b.obj("s", "string", b.data_string(10, 3.5, 1, 4)), b.obj("d", "double", b.data_double(0.5, 1.5, 0, 3)),
         b.obj("dec", "decimal(20,4)", b.data_decimal("1.25", "9", 0, 2)), b.obj("dt", "date", b.data_date(10, 20, 0, 5)),
         b.obj("bin", "binary", b.data_binary(8, 2.0, 1)), b.obj("ts", "timestamp", b.data_timestamp(100, 200, 2, 9))],
        [b.obj("l", "bigint", b.data_long(0, 30, 2, 12)), b.obj("b", "boolean", b.data_boolean(4, 0, 0)),
         b.obj("s", "string", b.data_string(3, 2.0, 0, 9)), b.obj("d", "double", b.data_double(-2.0, 1.0, 4, 1)),
         b.obj("dec", "decimal(20,4)", b.data_decimal("-1", "3", 1, 6)), b.obj("dt", "date", b.data_date(5, 15, 1, 5)),
         b.obj("bin", "binary", b.data_binary(20, 1.0, 0)), b.obj("ts", "timestamp", b.data_timestamp(50, 150, 0, 3))],
        [b.obj("l", "bigint", b.data_long(3, 4, 0, 2)), b.obj("b", "boolean", b.data_boolean(0, 0, 9)),
         b.obj("s", "string", b.data_string(30, 1.0, 5, 2)), b.obj("d", "double", b.data_double(None, None, 7, 0)),
         b.obj("dec", "decimal(20,4)", b.data_decimal(None, "12.5", 0, 1)), b.obj("dt", "date", b.data_date(1, 2, 0, 2)),
         b.obj("bin", "binary", b.data_binary(4, 3.0, 2)), b.obj("ts", "timestamp", b.data_timestamp(10, 20, 1, 8))],
    ]
    for n, objs in zip(names, per_part, strict=True):
        client.update_partition_column_statistics(b.partition_stats(dbname, "t", n, objs))
    cols = ["l", "b", "s", "d", "dec", "dt", "bin", "ts"]
    res = _aggr(client, dbname, names, cols)
    assert res.partsFound == 3
    got = _by_name(res.colStats)
    assert [o.colName for o in res.colStats] == cols
    lg = got["l"].statsData.longStats
    assert (lg.lowValue, lg.highValue, lg.numNulls, lg.numDVs) == (-5, 30, 3, 12)
    bo = got["b"].statsData.booleanStats
    assert (bo.numTrues, bo.numFalses, bo.numNulls) == (5, 2, 12)
    st = got["s"].statsData.stringStats
    assert (st.maxColLen, st.avgColLen, st.numNulls, st.numDVs) == (30, 3.5, 6, 9)
    do = got["d"].statsData.doubleStats
    assert (do.lowValue, do.highValue, do.numNulls, do.numDVs) == (-2.0, 1.5, 11, 3)
    de = got["dec"].statsData.decimalStats
    assert (de.lowValue, de.highValue, de.numNulls, de.numDVs) == (b.dec("-1"), b.dec("12.5"), 1, 6)
    dt = got["dt"].statsData.dateStats
    assert (dt.lowValue.daysSinceEpoch, dt.highValue.daysSinceEpoch, dt.numNulls, dt.numDVs) == (1, 20, 1, 5)
    bi = got["bin"].statsData.binaryStats
    assert (bi.maxColLen, bi.avgColLen, bi.numNulls) == (20, 3.0, 3)
    ts = got["ts"].statsData.longStats  # timestamps served as seconds (stats_timestamp_as_long)
    assert (ts.lowValue, ts.highValue, ts.numNulls, ts.numDVs) == (10, 200, 3, 9)


def test_aggr_ndv_from_merged_bitvectors_only_when_every_partition_has_one(client, dbname):
    names = [f"ds=2024-01-0{d}/hr=1" for d in (1, 2, 3)]
    _partitioned(client, dbname, names)
    ranges = [range(0, 400), range(300, 700), range(650, 1000)]
    sketches = [b.hll_bytes(r) for r in ranges]
    for n, r, bv in zip(names, ranges, sketches, strict=True):
        client.update_partition_column_statistics(
            b.partition_stats(dbname, "t", n, [
                b.obj("l", "bigint", b.data_long(r.start, r.stop - 1, 0, len(r), bv=bv)),
                b.obj("i", "int", b.data_long(r.start, r.stop - 1, 0, len(r), bv=bv if n != names[1] else None)),
            ])
        )
    union = NdvSketch.from_bytes(sketches[0]).merged(NdvSketch.from_bytes(sketches[1])).merged(NdvSketch.from_bytes(sketches[2]))
    got = _by_name(_aggr(client, dbname, names, ["l", "i"]).colStats)
    assert got["l"].statsData.longStats.numDVs == union.estimate()
    assert 950 < union.estimate() < 1050
    # One partition without a bitVector: Hive falls back to the largest partition NDV (ndv.tuner 0).
    assert got["i"].statsData.longStats.numDVs == 400


def test_aggr_with_missing_partitions_extrapolates_like_the_python_rules(client, dbname):
    names = [f"ds=2024-01-0{d}/hr=1" for d in range(1, 7)]
    _partitioned(client, dbname, names)
    written = {
        0: b.obj("l", "bigint", b.data_long(0, 10, 1, 5)),
        2: b.obj("l", "bigint", b.data_long(20, 30, 2, 8)),
        3: b.obj("l", "bigint", b.data_long(35, 50, 0, 9)),
    }
    for i, o in written.items():
        client.update_partition_column_statistics(b.partition_stats(dbname, "t", names[i], [o]))
    res = _aggr(client, dbname, names, ["l"])
    assert res.partsFound == 3
    expected = aggregate_partition_stats(
        "bigint", [(i, entry_from_thrift(o).stats) for i, o in written.items()], num_partitions=len(names)
    )
    want = entry_to_thrift(ColumnStatsEntry("l", "bigint", expected))
    assert res.colStats == [want]
    lg = res.colStats[0].statsData.longStats
    assert lg.highValue > 50  # extrapolated beyond the partitions seen
    assert lg.numNulls == 3 * 6 // 3


# ---------------------------------------------------------------- deletes


def test_delete_table_statistics(client, server, dbname):
    b.create_db_and_table(client, dbname)
    client.update_table_column_statistics(b.table_stats(dbname, "t", b.all_kinds_objs()))
    assert client.delete_table_column_statistics(dbname, "t", "l", None) is True
    assert {c for c, _ in table_stats_rows(server.db_url, dbname, "t")} == set(COLS) - {"l"}
    with pytest.raises(tt.NoSuchObjectException):
        client.get_table_column_statistics(dbname, "t", "l")
    with pytest.raises(tt.NoSuchObjectException, match="'l'"):
        client.delete_table_column_statistics(dbname, "t", "l", None)
    # A null column deletes every column's statistics.
    assert client.delete_table_column_statistics(dbname, "t", None, None) is True
    assert table_stats_rows(server.db_url, dbname, "t") == []
    with pytest.raises(tt.NoSuchObjectException):
        client.delete_table_column_statistics(dbname, "nope", None, None)


def test_delete_partition_statistics(client, server, dbname):
    names = [PART, "ds=2024-01-02/hr=1"]
    _partitioned(client, dbname, names)
    for n in names:
        client.update_partition_column_statistics(b.partition_stats(dbname, "t", n, b.all_kinds_objs()))
    assert client.delete_partition_column_statistics(dbname, "t", PART, "s", None) is True
    rows = partition_stats_rows(server.db_url, dbname, "t")
    assert {c for p, c, _ in rows if p == PART} == set(COLS) - {"s"}
    assert {c for p, c, _ in rows if p != PART} == set(COLS)
    assert client.delete_partition_column_statistics(dbname, "t", PART, None, None) is True
    assert {p for p, _, _ in partition_stats_rows(server.db_url, dbname, "t")} == {names[1]}
    with pytest.raises(tt.NoSuchObjectException):
        client.delete_partition_column_statistics(dbname, "t", "ds=1999-01-01/hr=1", None, None)


def test_delete_column_statistics_req(client, server, dbname):
    names = [PART, "ds=2024-01-02/hr=1", "ds=2024-01-03/hr=1"]
    _partitioned(client, dbname, names)
    client.update_table_column_statistics(b.table_stats(dbname, "t", b.all_kinds_objs()))
    for n in names:
        client.update_partition_column_statistics(b.partition_stats(dbname, "t", n, b.all_kinds_objs()))

    assert client.delete_column_statistics_req(
        tt.DeleteColumnStatisticsRequest(db_name=dbname, tbl_name="t", col_names=["l", "i"], tableLevel=True)
    )
    assert {c for c, _ in table_stats_rows(server.db_url, dbname, "t")} == set(COLS) - {"l", "i"}
    assert len(partition_stats_rows(server.db_url, dbname, "t")) == 3 * len(COLS)

    assert client.delete_column_statistics_req(
        tt.DeleteColumnStatisticsRequest(db_name=dbname, tbl_name="t", part_names=[PART], col_names=["b"])
    )
    rows = partition_stats_rows(server.db_url, dbname, "t")
    assert len(rows) == 3 * len(COLS) - 1 and (PART, "b", "hive") not in rows

    # No partition names: every partition; no column names: every column.
    assert client.delete_column_statistics_req(tt.DeleteColumnStatisticsRequest(db_name=dbname, tbl_name="t", col_names=["d"]))
    assert all(c != "d" for _, c, _ in partition_stats_rows(server.db_url, dbname, "t"))
    assert client.delete_column_statistics_req(tt.DeleteColumnStatisticsRequest(db_name=dbname, tbl_name="t"))
    assert partition_stats_rows(server.db_url, dbname, "t") == []
    assert table_stats_rows(server.db_url, dbname, "t") != []
    assert client.delete_column_statistics_req(tt.DeleteColumnStatisticsRequest(db_name=dbname, tbl_name="t", tableLevel=True))
    assert table_stats_rows(server.db_url, dbname, "t") == []


def test_engines_are_kept_apart(client, dbname):
    b.create_db_and_table(client, dbname)
    hive = b.table_stats(dbname, "t", [b.obj("l", "bigint", b.data_long(1, 2, 0, 2))])
    spark = copy.deepcopy(hive)
    spark.engine = "spark"
    spark.statsObj = [b.obj("l", "bigint", b.data_long(5, 6, 0, 2))]
    client.update_table_column_statistics(hive)
    client.update_table_column_statistics(spark)
    assert client.get_table_column_statistics(dbname, "t", "l").statsObj == hive.statsObj
    res = client.get_table_statistics_req(tt.TableStatsRequest(dbName=dbname, tblName="t", colNames=["l"], engine="spark"))
    assert res.tableStats == spark.statsObj
    client.delete_table_column_statistics(dbname, "t", "l", "spark")
    assert client.get_table_column_statistics(dbname, "t", "l").statsObj == hive.statsObj


def test_hive_2_3_test_column_statistics_sequence_with_a_fitting_kind(client, dbname):
    """Hive 2.3's TestHiveMetaStore.testColumnStatistics, call for call as its Java client makes them, with
    longStats where it writes doubleStats for the int column 'income' (which we refuse: an intentional
    difference). Its first write fails on ours, so the harness never reaches the rest; this runs the rest."""
    cols = [("name", "string"), ("income", "int")]
    income = b.obj("income", "int", b.data_long(50000, 1200000, 3, 22))
    name = b.obj("name", "string", b.data_string(102, 50.30, 3, 22))
    client.create_database(b.database(dbname))
    client.create_table(b.table(dbname, "tbl", cols))
    client.update_table_column_statistics(b.table_stats(dbname, "tbl", [income, name]))
    got = client.get_table_statistics_req(tt.TableStatsRequest(dbName=dbname, tblName="tbl", colNames=["income"]))
    assert [(o.colName, o.statsData.longStats) for o in got.tableStats] == [("income", income.statsData.longStats)]
    assert client.delete_table_column_statistics(dbname, "tbl", None, None) is True
    req = tt.TableStatsRequest(dbName=dbname, tblName="tbl", colNames=["name"])
    assert client.get_table_statistics_req(req).tableStats == []
    client.update_table_column_statistics(b.table_stats(dbname, "tbl", [income, name]))
    client.drop_table(dbname, "tbl", True)

    client.create_table(b.table(dbname, "tbl", cols, [("ds", "string"), ("hr", "string")]))
    for ds, hr in [("2008-07-01 14:13:12", "14"), ("2008-07-01 14:13:12", "15"), ("2008-07-02 14:13:12", "15")]:
        client.add_partition(b.partition(dbname, "tbl", [ds, hr], cols))
    part = client.get_partition_names(dbname, "tbl", -1)[0]
    client.update_partition_column_statistics(b.partition_stats(dbname, "tbl", part, [income, name]))

    def partition_stats(col: str) -> dict[str, list[tt.ColumnStatisticsObj]]:
        return client.get_partitions_statistics_req(
            tt.PartitionsStatsRequest(dbName=dbname, tblName="tbl", colNames=[col], partNames=[part])
        ).partStats

    assert [o.statsData.stringStats for o in partition_stats("name")[part]] == [name.statsData.stringStats]
    assert client.delete_partition_column_statistics(dbname, "tbl", part, "name", None) is True
    assert [o.colName for o in partition_stats("income")[part]] == ["income"]
    assert partition_stats("name") == {}
