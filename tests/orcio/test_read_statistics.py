"""Statistics, row indexes and bloom filters, checked against pyorc (ORC C++) and known facts of the examples."""

from __future__ import annotations

import datetime as dt
import decimal
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from metastore.orcio import OrcError
from metastore.orcio._bloom import BloomFilter, value_hash
from metastore.orcio._reader import OrcReader
from metastore.orcio._statistics import (
    BinaryStatistics,
    BooleanStatistics,
    CollectionStatistics,
    DateStatistics,
    DecimalStatistics,
    DoubleStatistics,
    IntegerStatistics,
    StringStatistics,
    TimestampStatistics,
    statistics_from_proto,
)
from metastore.orcio._types import TypeDescription

ORC_DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "orc"
# pyorc 0.12 (ORC C++ 2.3.1) crashes the interpreter (SIGSEGV) reading statistics of these Hive 0.11 files; they
# are checked against their own data in test_stripe_statistics_agree_with_the_data instead
PYORC_CRASHES = {"orc-file-11-format.orc", "orc_split_elim.orc"}
# every example pyorc reads (it refuses zero.orc and the corrupt ones; LZO works)
STATS_FILES = sorted(
    p.name
    for p in ORC_DATA_DIR.glob("*.orc")
    if p.name not in {"zero.orc", "version1999.orc"} | PYORC_CRASHES
)


def _compare(ours, theirs: dict, where: str, sums: bool = True) -> None:
    assert ours.number_of_values == theirs["number_of_values"], where
    assert ours.has_null == theirs["has_null"], where
    if isinstance(ours, IntegerStatistics | DoubleStatistics | DecimalStatistics | StringStatistics):
        for key in ("minimum", "maximum"):
            if key in theirs:
                assert getattr(ours, key) == theirs[key], f"{where} {key}"
    if sums and isinstance(ours, IntegerStatistics | DoubleStatistics | DecimalStatistics) and "sum" in theirs:
        if isinstance(ours, DoubleStatistics):
            assert ours.sum == pytest.approx(theirs["sum"]), where
        elif isinstance(ours, DecimalStatistics):
            # pyorc builds its Decimal in Python's default 28-digit context
            assert decimal.Context(prec=28).plus(ours.sum) == theirs["sum"], where
        else:
            assert ours.sum == theirs["sum"], where
    if isinstance(ours, DateStatistics) and "minimum" in theirs:
        assert ours.minimum_date == theirs["minimum"] and ours.maximum_date == theirs["maximum"], where
    if sums and isinstance(ours, StringStatistics | BinaryStatistics) and "total_length" in theirs:
        assert ours.total_length == theirs["total_length"], where
    if sums and isinstance(ours, BooleanStatistics) and "true_count" in theirs:
        assert (ours.true_count, ours.false_count) == (theirs["true_count"], theirs["false_count"]), where
    if isinstance(ours, TimestampStatistics) and "minimum" in theirs and ours.minimum is not None:
        # pyorc gives aware UTC datetimes with millisecond precision from the same fields
        assert ours.minimum_datetime.replace(microsecond=ours.minimum_datetime.microsecond // 1000 * 1000) == \
            theirs["minimum"].astimezone(dt.UTC), where
        assert ours.maximum == round(theirs["maximum"].timestamp() * 1000) or \
            ours.maximum == int(theirs["maximum"].timestamp() * 1000), where


_PYORC_STATS = """
import os
result = {}
for name in inputs["names"]:
    with open(os.path.join(inputs["dir"], name), "rb") as fh:
        try:
            reader = pyorc.Reader(fh)
        except Exception as exc:
            result[name] = repr(exc)
            continue
        def plain(stats):
            return {k: (int(v) if k == "kind" else v) for k, v in stats.items()}
        columns = []
        cid = 0
        while True:
            try:
                columns.append(plain(reader[cid].statistics))
            except IndexError:
                break
            cid += 1
        stripes = []
        for s in range(min(reader.num_of_stripes, 4)):
            stripe = reader.read_stripe(s)
            try:
                stripes.append([plain(stripe[c].statistics) for c in range(cid)])
            except (IndexError, RuntimeError):  # pyorc merges row-index statistics (none without a row index)
                break
        result[name] = (columns, stripes)
"""


@pytest.fixture(scope="module")
def pyorc_statistics(run_pyorc) -> dict:
    """File and stripe statistics of every example as pyorc (ORC C++) reports them, computed in one subprocess."""
    return run_pyorc(_PYORC_STATS, names=STATS_FILES, dir=str(ORC_DATA_DIR))


@pytest.mark.parametrize("name", STATS_FILES)
def test_file_and_stripe_statistics_match_pyorc(name: str, pyorc_statistics: dict) -> None:
    ours = OrcReader(ORC_DATA_DIR / name)
    theirs = pyorc_statistics[name]
    if isinstance(theirs, str):
        pytest.skip(f"pyorc cannot open {name}: {theirs}")
    file_theirs, stripes_theirs = theirs
    file_stats = ours.file_statistics
    assert len(file_stats) == len(file_theirs)
    for cid in range(len(file_stats)):
        _compare(file_stats[cid], file_theirs[cid], f"{name} column {cid}")
    # pyorc's stripe statistics are merged from the row index (so only where there is one, and without
    # sums: a stripe sum can overflow where every row-group sum did not)
    stripe_stats = ours.stripe_statistics
    if ours.row_index_stride and ours.stripes and ours.row_index(0, 0):
        for s in range(min(len(stripe_stats), len(stripes_theirs))):
            for cid in range(len(stripe_stats[s])):
                _compare(stripe_stats[s][cid], stripes_theirs[s][cid], f"{name} stripe {s} column {cid}", sums=False)


def _check_against_values(st, values: list, rows: int, where) -> None:
    present = [v for v in values if v is not None]
    assert st.number_of_values == len(present), where
    if not st.has_null:
        assert len(present) == rows, where
    if isinstance(st, IntegerStatistics | StringStatistics | DoubleStatistics) and present:
        assert (st.minimum, st.maximum) == (min(present), max(present)), where
    if isinstance(st, IntegerStatistics) and st.sum is not None:
        assert st.sum == sum(present), where
    if isinstance(st, DecimalStatistics) and present and st.minimum is not None:
        assert (st.minimum, st.maximum) == (min(present), max(present)), where


@pytest.mark.parametrize("name", ["TestOrcFile.testStripeLevelStats.orc", "orc_split_elim_new.orc",
                                  "TestOrcFile.testSeek.orc", "nulls-at-end-snappy.orc", "orc-file-11-format.orc",
                                  "orc_split_elim.orc", "decimal.orc"])
def test_statistics_agree_with_the_data(name: str) -> None:
    r = OrcReader(ORC_DATA_DIR / name)
    whole = r.read()
    for field, vec in whole.columns.items():
        cid = r.schema.find(field).id
        _check_against_values(r.file_statistics[cid], vec.to_pylist(), whole.num_rows, (field, "file"))
    # old files (Hive 0.11) have no Metadata section; the others have one entry per stripe
    stats = r.stripe_statistics
    assert len(stats) in (0, len(r.stripes))
    for s in range(len(stats)):
        batch = r.read_stripe(s)
        for field, vec in batch.columns.items():
            cid = r.schema.find(field).id
            _check_against_values(stats[s][cid], vec.to_pylist(), batch.num_rows, (field, s))


def test_string_and_binary_statistics(orc_examples: Path) -> None:
    stats = OrcReader(orc_examples / "TestOrcFile.testStringAndBinaryStatistics.orc").file_statistics
    binary, string = stats[1], stats[2]
    assert isinstance(binary, BinaryStatistics) and binary.total_length == 15 and binary.has_null
    assert isinstance(string, StringStatistics)
    assert (string.minimum, string.maximum, string.total_length) == ("bar", "hi", 8)
    assert (binary.number_of_values, string.number_of_values) == (3, 3)


def test_typed_statistics_of_many_kinds(orc_examples: Path) -> None:
    r = OrcReader(orc_examples / "orc_split_elim_new.orc")
    stats = r.file_statistics
    assert stats[1] == IntegerStatistics(25000, False, 40, 2, 100, 2499619)
    dec = stats[4]
    assert isinstance(dec, DecimalStatistics) and (dec.minimum, dec.maximum, dec.sum) == (
        Decimal("0"), Decimal("5.5"), Decimal("16.6"))
    ts = stats[5]
    assert isinstance(ts, TimestampStatistics) and (ts.minimum, ts.maximum) == (-28800000, -28550000)
    nested = OrcReader(orc_examples / "complextypes_iceberg.orc").file_statistics[2]
    assert isinstance(nested, CollectionStatistics)
    assert (nested.min_children, nested.max_children, nested.total_children) == (1024, 1024, 1024)
    old = OrcReader(orc_examples / "TestOrcFile.testDate1900.orc").file_statistics[1]
    # pre-ORC-135 files only have writer-local timestamp bounds
    assert isinstance(old, TimestampStatistics) and old.minimum is None and old.minimum_local is not None


def test_statistics_round_trip_through_proto(orc_examples: Path) -> None:
    r = OrcReader(orc_examples / "TestOrcFile.testSeek.orc")
    for cid, msg in enumerate(r._footer.statistics):
        typed = statistics_from_proto(msg, r.schema.find_column(cid))
        again = statistics_from_proto(typed._to_proto(), r.schema.find_column(cid))
        assert again == typed


def test_timestamp_nanos_statistics() -> None:
    from metastore.orcio._proto import orc_proto_pb2 as pb

    msg = pb.ColumnStatistics(number_of_values=2, has_null=False)
    msg.timestamp_statistics.minimum_utc = 1000
    msg.timestamp_statistics.maximum_utc = 2000
    msg.timestamp_statistics.minimum_nanos = 124  # stored plus one
    typed = statistics_from_proto(msg, TypeDescription.parse("timestamp"))
    assert (typed.minimum_nanos, typed.maximum_nanos) == (123, 999_999)
    assert typed.minimum_epoch_nanos == 1000 * 1_000_000 + 123
    assert statistics_from_proto(typed._to_proto(), TypeDescription.parse("timestamp")) == typed
    bad = pb.ColumnStatistics(number_of_values=1)
    bad.decimal_statistics.minimum = "not a number"
    with pytest.raises(OrcError, match="not a number"):
        statistics_from_proto(bad, TypeDescription.parse("decimal(10,2)"))


def test_statistics_say_whether_the_writer_counted_values() -> None:
    from metastore.orcio._proto import orc_proto_pb2 as pb

    counted = statistics_from_proto(pb.ColumnStatistics(number_of_values=0, has_null=True), TypeDescription.parse("int"))
    uncounted = statistics_from_proto(pb.ColumnStatistics(has_null=True), TypeDescription.parse("int"))
    assert counted.values_counted and not uncounted.values_counted
    assert uncounted.number_of_values == 0
    assert counted == uncounted  # the flag is not part of the statistics' value


# ------------------------------------------------------------------------------------------------ row index


def test_row_index_positions_of_test_seek(orc_examples: Path) -> None:
    r = OrcReader(orc_examples / "TestOrcFile.testSeek.orc")
    assert r.row_group_count(0) == 5
    by_name = {name: r.schema.find(name).id for name in ("boolean1", "int1", "double1", "bytes1", "string1")}
    assert r.row_index(0, by_name["int1"])[1].positions == (0, 2050, 488)
    assert r.row_index(0, by_name["double1"])[1].positions == (0, 8000)
    assert r.row_index(0, by_name["bytes1"])[1].positions == (0, 20000, 0, 514, 488)
    assert r.row_index(0, by_name["boolean1"])[1].positions == (0, 61, 64, 0)
    assert r.column_encoding(0, "string1") == "DICTIONARY_V2"
    assert r.row_index(0, by_name["string1"])[1].positions == (0, 766, 234)
    entry = r.row_index(0, "int1")[0]
    assert isinstance(entry.statistics, IntegerStatistics) and entry.statistics.number_of_values == 1000


def test_row_index_positions_with_present_stream(orc_examples: Path) -> None:
    r = OrcReader(orc_examples / "orc_split_elim_cpp.orc")
    assert r.row_index(0, "ts")[1].positions == (0, 18, 80, 0, 0, 164, 391, 0, 76, 272)


def test_row_index_stats_of_int_string_file(orc_examples: Path) -> None:
    r = OrcReader(orc_examples / "orc_index_int_string.orc")
    groups = r.row_index(0, 1)
    assert len(groups) == 3 and r.row_index_stride == 2000
    assert [g.statistics.minimum for g in groups] == [1, 2001, 4001]
    rows = r.read().to_pylist()
    for g, entry in enumerate(r.row_index(0, 2)):
        values = [row["_col1"] for row in rows[g * 2000 : (g + 1) * 2000]]
        assert entry.statistics.minimum == min(values) and entry.statistics.maximum == max(values)


def test_every_row_group_reads_like_the_stripe(orc_examples: Path) -> None:
    # all types, ZLIB, PRESENT streams, dictionaries and nested lists/maps: seek through every row group
    for name in ("TestOrcFile.testSeek.orc", "orc_split_elim_cpp.orc", "TestOrcFile.testPredicatePushdown.orc",
                 "TestStringDictionary.testRowIndex.orc", "nulls-at-end-snappy.orc", "TestOrcFile.testSnappy.orc"):
        r = OrcReader(orc_examples / name)
        stride = r.row_index_stride
        for s in range(min(len(r.stripes), 3)):
            whole = r.read_stripe(s).to_pylist()
            for g in range(r.row_group_count(s)):
                assert r.read_row_group(s, g).to_pylist() == whole[g * stride : (g + 1) * stride], (name, s, g)


def test_seek_and_read_rows(orc_examples: Path) -> None:
    r = OrcReader(orc_examples / "TestOrcFile.testSeek.orc")
    everything = r.read().to_pylist()
    rng = np.random.default_rng(7)
    for _ in range(15):
        start = int(rng.integers(0, len(everything)))
        stop = min(len(everything), start + int(rng.integers(1, 2500)))
        assert r.read_rows(start, stop).to_pylist() == everything[start:stop]
    tail = [row for batch in r.seek_row_group(5, 3, batch_size=700) for row in batch.to_pylist()]
    assert tail == everything[5 * 5000 + 3000 :]
    with pytest.raises(OrcError, match="no row index"):
        OrcReader(orc_examples / "TestOrcFile.testWithoutIndex.orc").read_row_group(0, 0)


# ------------------------------------------------------------------------------------------------ bloom filters


def test_bad_bloom_filters_are_ignored(orc_examples: Path) -> None:
    for name in ("bad_bloom_filter_1.6.0.orc", "bad_bloom_filter_1.6.11.orc"):
        r = OrcReader(orc_examples / name)
        assert r.writer_id == 1 and r.has_bad_bloom_filters
        assert r.bloom_filter_columns(0)  # the streams are there
        assert all(r.bloom_filters(0, c) is None for c in r.bloom_filter_columns(0))


def test_pre_release_bloom_layout_is_not_used(orc_examples: Path) -> None:
    r = OrcReader(orc_examples / "over1k_bloom.orc")
    columns = r.bloom_filter_columns(0)
    assert columns
    assert all(r.bloom_filters(0, c) is None for c in columns)


_PYORC_BLOOM_FILE = """
import datetime as dt, io, zoneinfo
from decimal import Decimal
utc = zoneinfo.ZoneInfo("UTC")
buf = io.BytesIO()
schema = ("struct<i:bigint,s:string,d:double,f:float,day:date,ts:timestamp,dec:decimal(10,2),b:binary,"
          "v:varchar(5)>")
columns = ["i", "s", "d", "f", "day", "ts", "dec", "b", "v"]
with pyorc.Writer(buf, schema, row_index_stride=1000, bloom_filter_columns=columns,
                  compression=pyorc.CompressionKind.ZLIB, timezone=utc) as w:
    for k in range(2500):
        w.write((k * 7, f"str{k}", k / 3, k / 4, dt.date(2000, 1, 1) + dt.timedelta(days=k),
                 dt.datetime(2020, 1, 1, tzinfo=utc) + dt.timedelta(seconds=k * 13, microseconds=k),
                 Decimal(k) / Decimal(100), bytes([k % 256, 1]), f"v{k % 100}"))
result = buf.getvalue()
"""


def test_bloom_filters_of_pyorc_are_bit_exact(run_pyorc) -> None:
    """Rebuild every row group's filter from the rows with our hashing: the bits must equal ORC C++'s."""
    r = OrcReader(run_pyorc(_PYORC_BLOOM_FILE))
    assert not r.has_bad_bloom_filters and r.bloom_filter_columns(0) == list(range(1, 10))
    batch = r.read()
    for name in r.schema.field_names:
        node = r.schema.find(name)
        filters = r.bloom_filters(0, node.id)
        assert filters is not None and len(filters) == 3
        values = batch.column(name).to_pylist()
        for g, f in enumerate(filters):
            mine = BloomFilter(f.num_bits, f.num_hash_functions, np.zeros(f.num_bits // 64, np.uint64))
            group = values[g * 1000 : (g + 1) * 1000]
            if name == "ts":
                group = [v.replace(tzinfo=dt.UTC) for v in group]
            mine.add_hashes(np.array([value_hash(str(node), v) for v in group], dtype=np.int64))
            assert (mine.words == f.words).all(), (name, g)
            assert f.test_hashes(np.array([value_hash(str(node), v) for v in group])).all()
        if name == "i":
            # values in no row group are rejected but for the false positives (fpp 0.05)
            absent = np.arange(10**12, 10**12 + 2000) * 7 + 1
            accepted = filters[0].test_hashes(np.array([value_hash("bigint", int(v)) for v in absent]))
            assert accepted.mean() < 0.12
