"""Spark's statistics properties over Thrift (SQLite and PostgreSQL): composed from TAB_COL_STATS by get_table
and friends, gone with the statistics they came from; Spark-style alter_table properties reach TAB_COL_STATS."""

from __future__ import annotations

import json

import numpy as np

from metastore.api.hive_metastore import ttypes as tt
from metastore.stats.kll import histogram_for
from metastore.stats.model import StatsKind
from metastore.stats.spark_histogram import HistogramBin, SparkHistogram, decode_histogram, encode_histogram
from server import thrift_builders as b

P = "spark.sql.statistics.colStats."
COLS = [("l", "bigint"), ("s", "string"), ("dec", "decimal(10,2)"), ("ts", "timestamp"), ("b", "boolean")]


def _spark_keys(table: tt.Table) -> dict[str, str]:
    return {k: v for k, v in table.parameters.items() if k.startswith("spark.sql.statistics.")}


def _setup(client, dbname: str) -> None:
    b.create_db_and_table(client, dbname, cols=COLS)
    client.update_table_column_statistics(b.table_stats(dbname, "t", [
        b.obj("l", "bigint", b.data_long(-3, 40, 1, 5)),
        b.obj("s", "string", b.data_string(12, 3.5, 2, 9)),
        b.obj("dec", "decimal(10,2)", b.data_decimal("-1.50", "99.25", 0, 4)),
    ]))


def test_statistics_writes_show_in_every_table_read(client, dbname: str) -> None:
    _setup(client, dbname)
    for table in (
        client.get_table(dbname, "t"),
        client.get_table_req(tt.GetTableRequest(dbName=dbname, tblName="t")).table,
        client.get_table_objects_by_name(dbname, ["t"])[0],
    ):
        keys = _spark_keys(table)
        assert keys["spark.sql.statistics.totalSize"] == str(2**63 - 1)  # unknown, as Spark says it
        assert (keys[P + "l.min"], keys[P + "l.max"], keys[P + "l.distinctCount"], keys[P + "l.nullCount"]) == (
            "-3", "40", "5", "1")
        assert (keys[P + "s.avgLen"], keys[P + "s.maxLen"]) == ("4", "12")
        assert (keys[P + "dec.min"], keys[P + "dec.max"]) == ("-1.50", "99.25")
        assert not any(k.startswith(P + "ts.") for k in keys)


def test_deletes_and_column_changes_remove_the_keys(client, dbname: str) -> None:
    _setup(client, dbname)
    client.delete_table_column_statistics(dbname, "t", "l", "hive")
    assert not any(k.startswith(P + "l.") for k in _spark_keys(client.get_table(dbname, "t")))
    table = client.get_table(dbname, "t")
    table.sd.cols = [c for c in table.sd.cols if c.name != "s"]  # drop s
    for c in table.sd.cols:
        if c.name == "dec":
            c.type = "decimal(12,2)"  # retype: Hive drops its statistics
    client.alter_table(dbname, "t", table)
    keys = _spark_keys(client.get_table(dbname, "t"))
    assert not any(k.startswith((P + "s.", P + "dec.")) for k in keys)
    # the alter carried the properties it read forward: nothing was stored or resurrected
    assert client.get_table_statistics_req(tt.TableStatsRequest(dbName=dbname, tblName="t", colNames=["s", "dec"])
                                           ).tableStats == []


def test_spark_analyze_through_alter_table_reaches_tab_col_stats(client, dbname: str) -> None:
    _setup(client, dbname)
    table = client.get_table(dbname, "t")
    table.parameters.update({
        "spark.sql.statistics.numRows": "50", "spark.sql.statistics.totalSize": "4096",
        P + "l.version": "2", P + "l.distinctCount": "7", P + "l.nullCount": "0", P + "l.min": "1",
        P + "l.max": "9", P + "l.avgLen": "8", P + "l.maxLen": "8",
        P + "ts.version": "2", P + "ts.distinctCount": "3", P + "ts.nullCount": "1", P + "ts.avgLen": "8",
        P + "ts.maxLen": "8", P + "ts.min": "2020-01-01 00:00:00.000000", P + "ts.max": "2020-01-02 03:04:05.500000",
        P + "b.version": "2", P + "b.distinctCount": "1", P + "b.nullCount": "10", P + "b.avgLen": "1",
        P + "b.maxLen": "1", P + "b.min": "false", P + "b.max": "false",
    })
    client.alter_table(dbname, "t", table)
    got = {o.colName: o.statsData for o in client.get_table_statistics_req(
        tt.TableStatsRequest(dbName=dbname, tblName="t", colNames=["l", "ts", "b", "s"])).tableStats}
    assert got["l"].longStats == tt.LongColumnStatsData(lowValue=1, highValue=9, numNulls=0, numDVs=7)
    assert (got["ts"].longStats.lowValue, got["ts"].longStats.highValue) == (1577836800, 1577934246)
    assert (got["b"].booleanStats.numTrues, got["b"].booleanStats.numFalses, got["b"].booleanStats.numNulls) == (
        0, 40, 10)
    assert got["s"].stringStats.maxColLen == 12  # untouched column keeps our statistics
    after = client.get_table(dbname, "t")
    assert (after.parameters["numRows"], after.parameters["totalSize"]) == ("50", "4096")
    keys = _spark_keys(after)
    assert (keys["spark.sql.statistics.numRows"], keys[P + "l.max"], keys[P + "b.max"]) == ("50", "9", "false")


def test_garbage_properties_are_ignored_with_a_warning(client, dbname: str, server) -> None:
    _setup(client, dbname)
    table = client.get_table(dbname, "t")
    table.parameters.update({
        P + "l.version": "2", P + "l.distinctCount": "lots", P + "l.nullCount": "0",
        P + "nosuch.version": "2", "spark.sql.statistics.numRows": "12",
    })
    client.alter_table(dbname, "t", table)  # no error to the client
    got = client.get_table_statistics_req(tt.TableStatsRequest(dbName=dbname, tblName="t", colNames=["l"]))
    assert got.tableStats[0].statsData.longStats.numDVs == 5
    assert client.get_table(dbname, "t").parameters["numRows"] == "12"
    warning = [line for line in server.output.splitlines() if "distinctCount is not an integer" in line]
    assert warning and "WARNING" in warning[0] and dbname in warning[0]


def test_tables_without_statistics_have_no_spark_keys(client, dbname: str) -> None:
    b.create_db_and_table(client, dbname, cols=COLS)
    assert _spark_keys(client.get_table(dbname, "t")) == {}


def test_spark_statistics_we_cannot_hold_stay_for_spark_until_the_column_changes(client, dbname: str) -> None:
    _setup(client, dbname)
    table = client.get_table(dbname, "t")
    both = {P + "b.version": "2", P + "b.distinctCount": "2", P + "b.nullCount": "0", P + "b.avgLen": "1",
            P + "b.maxLen": "1", P + "b.min": "false", P + "b.max": "true"}
    table.parameters.update({"spark.sql.statistics.numRows": "50", **both})
    client.alter_table(dbname, "t", table)
    assert client.get_table_statistics_req(
        tt.TableStatsRequest(dbName=dbname, tblName="t", colNames=["b"])).tableStats == []
    table = client.get_table(dbname, "t")
    assert {k: v for k, v in _spark_keys(table).items() if k.startswith(P + "b.")} == both
    client.alter_table(dbname, "t", table)  # carried forward again: still there
    table = client.get_table(dbname, "t")
    assert {k: v for k, v in _spark_keys(table).items() if k.startswith(P + "b.")} == both
    table.sd.cols = [c for c in table.sd.cols if c.name != "b"] + [tt.FieldSchema(name="b", type="int")]
    client.alter_table(dbname, "t", table)  # retyped: Spark's statistics of the boolean go
    assert not any(k.startswith(P + "b.") for k in _spark_keys(client.get_table(dbname, "t")))


def test_kll_sketches_show_as_spark_histograms(client, dbname: str) -> None:
    b.create_db_and_table(client, dbname, cols=COLS)
    sketch = histogram_for(StatsKind.LONG, np.arange(0, 500))
    client.update_table_column_statistics(b.table_stats(dbname, "t", [
        b.obj("l", "bigint", b.data_long(0, 499, 0, 500, hist=sketch)),
        b.obj("s", "string", b.data_string(12, 3.5, 2, 9)),
    ]))
    keys = _spark_keys(client.get_table(dbname, "t"))
    histogram = decode_histogram(keys[P + "l.histogram"])
    assert (len(histogram.bins), histogram.height) == (100, 5.0)
    assert (histogram.bins[0].lo, histogram.bins[-1].hi) == (0.0, 499.0)
    assert P + "s.histogram" not in keys


def test_carried_forward_properties_lose_to_newer_statistics(client, new_client, dbname: str) -> None:
    """Audit item 9's race: a client reads the table, another writes newer statistics, the first alters the
    table carrying the properties it read. The newer statistics stay; a deliberate change on a fresh read wins."""
    _setup(client, dbname)
    read_before = client.get_table(dbname, "t")
    other = new_client()
    other.update_table_column_statistics(b.table_stats(dbname, "t", [b.obj("l", "bigint", b.data_long(0, 99, 0, 60))]))
    read_before.parameters["comment"] = "renamed"
    client.alter_table(dbname, "t", read_before)  # carries l: -3..40 read before the write
    got = client.get_table_statistics_req(tt.TableStatsRequest(dbName=dbname, tblName="t", colNames=["l"]))
    assert got.tableStats[0].statsData.longStats == tt.LongColumnStatsData(lowValue=0, highValue=99, numNulls=0,
                                                                           numDVs=60)
    after = client.get_table(dbname, "t")
    assert after.parameters["comment"] == "renamed"
    assert (after.parameters[P + "l.min"], after.parameters[P + "l.max"]) == ("0", "99")
    after.parameters[P + "l.max"] = "120"  # read after the write: a change of the client's own
    client.alter_table(dbname, "t", after)
    got = client.get_table_statistics_req(tt.TableStatsRequest(dbName=dbname, tblName="t", colNames=["l"]))
    assert got.tableStats[0].statsData.longStats.highValue == 120


def test_dropping_spark_statistics_hides_them_until_analysed_again(client, dbname: str) -> None:
    """Spark drops its statistics keys after an INSERT (alterTableStats(None)): Spark sees none until the next
    analysis; Hive's readers keep TAB_COL_STATS, with COLUMN_STATS_ACCURATE saying they are not accurate."""
    _setup(client, dbname)
    table = client.get_table(dbname, "t")
    table.parameters = {k: v for k, v in table.parameters.items() if not k.startswith("spark.sql.statistics.")}
    client.alter_table(dbname, "t", table)
    after = client.get_table(dbname, "t")
    assert _spark_keys(after) == {}
    assert "COLUMN_STATS" not in json.loads(after.parameters["COLUMN_STATS_ACCURATE"])
    got = client.get_table_statistics_req(tt.TableStatsRequest(dbName=dbname, tblName="t", colNames=["l", "s"]))
    assert sorted(o.colName for o in got.tableStats) == ["l", "s"]
    client.update_table_column_statistics(b.table_stats(dbname, "t", [b.obj("l", "bigint", b.data_long(1, 2, 0, 2))]))
    keys = _spark_keys(client.get_table(dbname, "t"))
    assert (keys[P + "l.min"], keys[P + "l.max"]) == ("1", "2")
    assert not any(k.startswith(P + "s.") for k in keys)  # not analysed since


def test_bad_table_numbers_are_ignored_with_a_warning(client, dbname: str, server) -> None:
    _setup(client, dbname)
    client.alter_table(dbname, "t", _with(client.get_table(dbname, "t"), {
        "spark.sql.statistics.numRows": "-5", "spark.sql.statistics.totalSize": "-1"}))
    params = client.get_table(dbname, "t").parameters
    assert "numRows" not in params and "totalSize" not in params
    assert [line for line in server.output.splitlines()
            if "spark.sql.statistics.numRows ignored, negative" in line and dbname in line]
    # a garbage row count costs only itself: Spark's statistics of a two-valued boolean still stay for Spark
    both = {P + "b.version": "2", P + "b.distinctCount": "2", P + "b.nullCount": "0", P + "b.avgLen": "1",
            P + "b.maxLen": "1", P + "b.min": "false", P + "b.max": "true"}
    client.alter_table(dbname, "t", _with(client.get_table(dbname, "t"), {
        "spark.sql.statistics.numRows": "many", **both}))
    keys = _spark_keys(client.get_table(dbname, "t"))
    assert {k: v for k, v in keys.items() if k.startswith(P + "b.")} == both
    assert "spark.sql.statistics.numRows" not in keys


def test_spark_histograms_stay_while_their_statistics_stand(client, dbname: str) -> None:
    _setup(client, dbname)
    text = encode_histogram(SparkHistogram(2.5, (HistogramBin(1.0, 4.0, 3), HistogramBin(4.0, 9.0, 4))))
    client.alter_table(dbname, "t", _with(client.get_table(dbname, "t"), {
        "spark.sql.statistics.numRows": "5", P + "l.version": "2", P + "l.distinctCount": "5",
        P + "l.nullCount": "0", P + "l.min": "1", P + "l.max": "9", P + "l.avgLen": "8", P + "l.maxLen": "8",
        P + "l.histogram": text}))
    table = client.get_table(dbname, "t")
    assert _spark_keys(table)[P + "l.histogram"] == text
    assert not any(k.startswith("metastore.spark.") for k in table.parameters)  # kept out of sight
    client.alter_table(dbname, "t", table)  # carried forward: still there
    assert _spark_keys(client.get_table(dbname, "t"))[P + "l.histogram"] == text
    client.update_table_column_statistics(b.table_stats(dbname, "t", [b.obj("l", "bigint", b.data_long(1, 9, 0, 4))]))
    assert P + "l.histogram" not in _spark_keys(client.get_table(dbname, "t"))  # not of these statistics


def test_partition_spark_numbers_go_to_hive_keys(client, dbname: str, server) -> None:
    b.create_db_and_table(client, dbname, cols=COLS, partitioned=True)
    part = b.partition(dbname, "t", ["2024-01-01", "1"], COLS)
    part.parameters = {"numRows": "10", "totalSize": "100", "rawDataSize": "400"}
    client.add_partitions([part])
    stored = client.get_partition(dbname, "t", part.values)
    stored.parameters.update({"spark.sql.statistics.numRows": "12", "spark.sql.statistics.totalSize": "130"})
    client.alter_partitions(dbname, "t", [stored])
    params = client.get_partition(dbname, "t", part.values).parameters
    assert (params["numRows"], params["totalSize"]) == ("12", "130")
    assert "rawDataSize" not in params and not any(k.startswith("spark.sql.") for k in params)
    stored = client.get_partition(dbname, "t", part.values)
    stored.parameters.update({"spark.sql.statistics.numRows": "-1", "spark.sql.statistics.totalSize": "130"})
    client.alter_partition(dbname, "t", stored)
    params = client.get_partition(dbname, "t", part.values).parameters
    assert (params["numRows"], params["totalSize"]) == ("12", "130")
    output = server.output_once("numRows ignored, negative")
    assert [line for line in output.splitlines() if "numRows ignored, negative" in line and "partition" in line]


def _with(table: tt.Table, changes: dict[str, str]) -> tt.Table:
    table.parameters.update(changes)
    return table
