"""ORC Java through Spark: it reads our files back identically, and for the same rows and options our files are
byte-for-byte what ORC Java writes (streams, row indexes, bloom filters, statistics, encodings)."""

from __future__ import annotations

import datetime as dt
import glob
import random
from decimal import Decimal, localcontext

import pytest

from metastore.orcio._compression import decompress_stream
from metastore.orcio._proto import orc_proto_pb2 as pb
from metastore.orcio._reader import OrcReader
from metastore.orcio._types import Category, TypeDescription
from metastore.orcio._writer import OrcWriter

from .write_cases import canonical, expected, random_columns, random_schema

pytestmark = pytest.mark.spark


def _spark_safe(columns: dict, schema: TypeDescription) -> None:
    """Spark rebases pre-Gregorian values through the hybrid calendar and cannot show year 1 as year 1."""

    def fix(t: TypeDescription, v):
        if v is None:
            return None
        c = t.category
        if c == Category.DATE and v.year < 100:
            return v.replace(year=100)
        if c in (Category.TIMESTAMP, Category.TIMESTAMP_INSTANT) and v.year < 100:
            return v.replace(year=100)
        if c == Category.LIST:
            return [fix(t.children[0], x) for x in v]
        if c == Category.MAP:
            return {fix(t.children[0], k): fix(t.children[1], x) for k, x in v.items()}
        if c == Category.STRUCT:
            return {n: fix(ct, v.get(n)) for n, ct in t.fields()}
        return v

    for name, t in schema.fields():
        columns[name] = [fix(t, v) for v in columns[name]]


def test_spark_reads_our_files(spark, tmp_path) -> None:
    compressions = ["NONE", "ZLIB", "SNAPPY", "LZ4", "ZSTD"]
    for case in range(3):
        rng = random.Random(100 + case)
        body = random_schema(rng, allow_union=False)
        schema = TypeDescription.parse(f"struct<id:int,{str(body)[7:-1]}>")
        directory = tmp_path / f"case{case}"
        directory.mkdir()
        want: dict[int, tuple] = {}
        next_id = 0
        for f, compression in enumerate(compressions):
            rows = rng.choice([0, 5, 1200, 3000])
            columns = random_columns(rng, body, rows, wide_times=True)
            _spark_safe(columns, body)
            columns = {"id": list(range(next_id, next_id + rows)), **columns}
            options = {"orc.compress": compression, "orc.stripe.size": str(rng.choice([4000, 1 << 20]))}
            options["orc.row.index.stride"] = str(rng.choice([1000, 10000]))
            with OrcWriter(directory / f"part-{f}.orc", schema, options) as writer:
                writer.write_batch(columns)
            for i in range(rows):
                want[next_id + i] = tuple(expected(t, columns[n][i]) for n, t in schema.fields())
            next_id += rows
        got = spark.read.orc(str(directory)).collect()
        fields = schema.fields()
        by_id = {row["id"]: tuple(canonical(t, row[n]) for n, t in fields) for row in got}
        assert by_id == want, f"schema {schema}"


# --------------------------------------------------------------------------------------------- same bytes as Java


def _rows(rng: random.Random, n: int) -> list[tuple]:
    def maybe(v, p=0.1):
        return None if rng.random() < p else v

    out = []
    for i in range(n):
        out.append((
            i,
            maybe(rng.random() < 0.5),
            maybe(rng.randrange(-128, 128)),
            maybe(rng.randrange(-(2**15), 2**15)),
            maybe(rng.randrange(-(2**31), 2**31)),
            maybe(rng.choice([rng.randrange(-(2**63), 2**63), rng.randrange(100), 2**63 - 1, -(2**63)])),
            maybe(rng.random() * 100),
            maybe(rng.choice([rng.random(), float("nan"), float("inf"), -0.0, 0.0])),
            maybe(rng.choice(["", "a", "bb", "ccc", "héllo", "x" * 1100, "z" * 1030 + "é" * 10])),
            maybe(f"hc{rng.randrange(10**9)}"),
            maybe(bytes(rng.randrange(256) for _ in range(rng.randrange(5)))),
            maybe(Decimal(rng.randrange(-(10**9), 10**9)) / 100),
            maybe(Decimal(rng.randrange(-(10**29), 10**29)).scaleb(-10)),
            maybe(dt.date(1600, 1, 1) + dt.timedelta(days=rng.randrange(200000))),
            maybe(dt.datetime(1900, 1, 1) + dt.timedelta(microseconds=rng.randrange(10**16))),
            maybe([rng.randrange(100) for _ in range(rng.randrange(4))]),
            maybe({f"k{j}": rng.randrange(10) for j in range(rng.randrange(3))}),
            maybe((maybe(rng.randrange(10)), maybe(str(rng.randrange(5))))),
            # exactly 80% distinct in the first row group: Java's float ratio 0.8f > 0.8 picks DIRECT
            f"r{i % 800}" if i < 1000 else f"r{rng.randrange(10)}",
            f"r{i % 799}" if i < 1000 else f"r{rng.randrange(10)}",
            # sums leave the decimal64 range within a few rows (Java drops them, with its merge quirk)
            maybe(Decimal(rng.randrange(-(10**17), 10**18))),
        ))
    return out


def _spark_schema():
    from pyspark.sql import types as T  # noqa: N812 - PySpark's documented spelling

    return T.StructType([
        T.StructField("id", T.LongType()), T.StructField("b", T.BooleanType()), T.StructField("t", T.ByteType()),
        T.StructField("sm", T.ShortType()), T.StructField("i", T.IntegerType()), T.StructField("l", T.LongType()),
        T.StructField("f", T.FloatType()), T.StructField("d", T.DoubleType()), T.StructField("s", T.StringType()),
        T.StructField("hs", T.StringType()), T.StructField("bin", T.BinaryType()),
        T.StructField("dec", T.DecimalType(10, 2)), T.StructField("wide", T.DecimalType(38, 10)),
        T.StructField("dt", T.DateType()), T.StructField("ts", T.TimestampType()),
        T.StructField("li", T.ArrayType(T.IntegerType())),
        T.StructField("m", T.MapType(T.StringType(), T.IntegerType())),
        T.StructField("st", T.StructType([T.StructField("x", T.IntegerType()), T.StructField("y", T.StringType())])),
        T.StructField("r80", T.StringType()), T.StructField("r79", T.StringType()),
        T.StructField("d18", T.DecimalType(18, 0)),
    ])


def _streams(reader: OrcReader, stripe: int) -> dict[tuple, bytes]:
    info = reader._footer.stripes[stripe]
    with open(reader.path, "rb") as file:
        raw = file.read()
    out = {}
    offset = info.offset
    for s in reader._stripe_footer(stripe).streams:
        stored = raw[offset : offset + s.length]
        offset += s.length
        name = pb.Stream.Kind.Name(s.kind)
        out[(s.column, name, "stored")] = stored
        out[(s.column, name)] = decompress_stream(reader.compression, reader.compression_block_size, stored)
    return out


def _without_collection_stats(stats: pb.ColumnStatistics) -> pb.ColumnStatistics:
    # ORC Java records its batch capacity (e.g. 1024) as list/map children counts; we count the children
    copy = pb.ColumnStatistics()
    copy.CopyFrom(stats)
    copy.ClearField("collection_statistics")
    return copy


@pytest.mark.parametrize(
    ("spark_options", "our_options"),
    [
        ({"compression": "none"}, {"orc.compress": "NONE"}),
        (
            {"compression": "zlib", "orc.compress.size": "4096", "orc.bloom.filter.fpp": "0.05"},
            {"orc.compress": "ZLIB", "orc.compress.size": "4096", "orc.bloom.filter.fpp": "0.05"},
        ),
    ],
)
def test_same_bytes_as_orc_java(spark, tmp_path, spark_options, our_options) -> None:
    rows = _rows(random.Random(7), 5300)
    common = {"orc.row.index.stride": "1000", "orc.bloom.filter.columns": "*"}
    writer = spark.createDataFrame(rows, _spark_schema()).coalesce(1).write.mode("overwrite")
    for key, value in {**spark_options, **common}.items():
        writer = writer.option(key, value)
    writer.orc(str(tmp_path / "spark"))
    java = OrcReader(glob.glob(str(tmp_path / "spark" / "*.orc"))[0])
    assert java.writer_id == 0 and len(java.stripes) == 1

    ours_path = tmp_path / "ours.orc"
    with OrcWriter(ours_path, java.schema, {**our_options, **common}) as w:
        w.write_batch([list(c) for c in zip(*rows, strict=True)])
    ours = OrcReader(ours_path)

    theirs_streams, our_streams = _streams(java, 0), _streams(ours, 0)
    assert list(theirs_streams) == list(our_streams)  # same streams in the same order
    collections = {n.id for n in ours.schema.walk() if n.category in (Category.LIST, Category.MAP)}
    for key, data in theirs_streams.items():
        column, kind = key[0], key[1]
        if kind == "ROW_INDEX":
            if len(key) == 2:
                theirs_index, our_index = pb.RowIndex.FromString(data), pb.RowIndex.FromString(our_streams[key])
                for a, b in zip(theirs_index.entry, our_index.entry, strict=True):
                    assert list(a.positions) == list(b.positions), (column, ours.schema.column_path(column))
                    assert _without_collection_stats(a.statistics) == _without_collection_stats(b.statistics)
            elif column not in collections:
                assert data == our_streams[key]
            continue
        assert data == our_streams[key], (key, ours.schema.column_path(column))
    assert list(java._stripe_footer(0).columns) == list(ours._stripe_footer(0).columns)
    encodings = {name: ours.column_encoding(0, name) for name in ("r80", "r79")}
    assert encodings == {"r80": "DIRECT_V2", "r79": "DICTIONARY_V2"}
    # Java's decimal64 quirk, reproduced: row groups and the stripe drop the overflowing sum, but the file-level
    # merge copies the stripe's last partial sum without its "dropped" flag
    d18 = ours.schema.find("d18").id
    assert all(e.statistics.sum is None for e in ours.row_index(0, d18))
    assert not ours._metadata_section.stripe_stats[0].col_stats[d18].decimal_statistics.HasField("sum")
    assert ours._footer.statistics[d18].decimal_statistics.HasField("sum")
    for a, b in zip(java._metadata_section.stripe_stats[0].col_stats, ours._metadata_section.stripe_stats[0].col_stats, strict=True):
        assert _without_collection_stats(a) == _without_collection_stats(b)
    for a, b in zip(java._footer.statistics, ours._footer.statistics, strict=True):
        assert _without_collection_stats(a) == _without_collection_stats(b)
    # and the values themselves
    with localcontext() as ctx:
        ctx.prec = 100
        assert str(ours.read().to_pylist()) == str(java.read().to_pylist())
