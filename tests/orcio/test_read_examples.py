"""The reader against Apache ORC's example files: rows (expected JSON lines), file metadata and odd files."""

from __future__ import annotations

import datetime as dt
import gzip
from decimal import Decimal
from pathlib import Path

import pytest

from metastore.orcio import OrcError
from metastore.orcio._compression import CompressionKind
from metastore.orcio._jsonrows import json_lines
from metastore.orcio._reader import OrcReader

ORC_DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "orc"

EXPECTED = sorted(p.name[: -len(".jsn.gz")] for p in (ORC_DATA_DIR / "expected").glob("*.jsn.gz"))


def expected_lines(name: str) -> list[bytes]:
    lines = gzip.decompress((ORC_DATA_DIR / "expected" / f"{name}.jsn.gz").read_bytes()).split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


@pytest.mark.parametrize("name", EXPECTED)
def test_json_lines_match_expected(name: str) -> None:
    got = list(json_lines(ORC_DATA_DIR / f"{name}.orc"))
    want = expected_lines(name)
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert a == b, f"row {i} differs"


def test_demo_11_and_12_hold_the_same_rows(orc_examples: Path) -> None:
    # the expected file of the demo data is missing upstream; its RLE v1 and v2 encodings must agree instead
    old = OrcReader(orc_examples / "demo-11-zlib.orc")
    new = OrcReader(orc_examples / "demo-12-zlib.orc")
    assert (old.num_rows, len(old.stripes), len(new.stripes)) == (1_920_800, 385, 1)
    a = old.read()
    b = new.read()
    for name in a.columns:
        va, vb = a.column(name), b.column(name)
        assert va.null_count == vb.null_count == 0, name
        assert (va.to_numpy() == vb.to_numpy()).all(), name


# --------------------------------------------------------------------------------------------- metadata facts

# rows, stripes, compression, block size, stride, software description (tools/test/TestMatch.cc)
FACTS = {
    "TestOrcFile.columnProjection.orc": (21000, 5, CompressionKind.NONE, 1000, "ORC Java"),
    "TestOrcFile.testSeek.orc": (32768, 7, CompressionKind.ZLIB, 1000, "ORC Java"),
    "TestOrcFile.testSnappy.orc": (10000, None, CompressionKind.SNAPPY, None, "ORC Java"),
    "TestOrcFile.testDate1900.orc": (70000, 8, CompressionKind.ZLIB, None, "ORC Java"),
    "TestOrcFile.testDate2038.orc": (212000, 28, CompressionKind.ZLIB, None, "ORC Java"),
    "TestOrcFile.testMemoryManagementV11.orc": (2500, 25, None, 0, "ORC Java"),
    "TestOrcFile.testWithoutIndex.orc": (50000, 10, CompressionKind.SNAPPY, 0, "ORC Java"),
    "TestVectorOrcFile.testLz4.orc": (10000, None, CompressionKind.LZ4, None, "ORC Java"),
    "TestVectorOrcFile.testLzo.orc": (10000, None, CompressionKind.LZO, None, "ORC Java"),
    "TestVectorOrcFile.testZstd.0.12.orc": (10000, None, CompressionKind.ZSTD, None, "ORC Java"),
    "orc_split_elim_cpp.orc": (25000, 1, CompressionKind.ZLIB, 10000, "ORC C++ 1.8.0-SNAPSHOT"),
    "decimal64_v2_cplusplus.orc": (10, 1, CompressionKind.ZLIB, 10000, "ORC C++ 1.8.0-SNAPSHOT"),
    "demo-11-zlib.orc": (1920800, 385, CompressionKind.ZLIB, None, None),
}


@pytest.mark.parametrize("name", sorted(FACTS))
def test_file_facts(name: str) -> None:
    rows, stripes, compression, stride, software = FACTS[name]
    r = OrcReader(ORC_DATA_DIR / name)
    assert r.num_rows == rows
    assert sum(s.number_of_rows for s in r.stripes) == rows
    if stripes is not None:
        assert len(r.stripes) == stripes
    if compression is not None:
        assert r.compression == compression
    if stride is not None:
        assert r.row_index_stride == stride
    if software is not None:
        assert r.software_description == software


@pytest.mark.parametrize(
    ("name", "length"),
    [("orc_split_elim.orc", 246402), ("orc_no_format.orc", 745), ("decimal64_v2.orc", 738),
     ("complextypes_iceberg.orc", 1734)],
)
def test_file_length(name: str, length: int) -> None:
    assert OrcReader(ORC_DATA_DIR / name).file_length == length


def test_versions_and_writers(orc_examples: Path) -> None:
    old = OrcReader(orc_examples / "TestOrcFile.testMemoryManagementV11.orc")
    assert old.file_version == (0, 11)
    assert OrcReader(orc_examples / "TestOrcFile.testMemoryManagementV12.orc").file_version == (0, 12)
    pre2 = OrcReader(orc_examples / "decimal64_v2.orc")
    assert pre2.file_version == (1, 9999) and pre2.file_version_name == "UNSTABLE-PRE-2.0"
    assert pre2.calendar == 2 and not pre2.hybrid_calendar
    cpp = OrcReader(orc_examples / "orc_split_elim_cpp.orc")
    assert (cpp.writer_id, cpp.writer_version, cpp.writer_name) == (1, 6, "ORC C++")
    assert cpp.writer_timezone(0) == "GMT"
    new = OrcReader(orc_examples / "orc_split_elim_new.orc")
    assert (new.writer_version, new.calendar) == (9, 1) and new.hybrid_calendar
    assert new.writer_timezone(0) == "America/Los_Angeles"
    unknown = OrcReader(orc_examples / "TestOrcFile.testSargSkipPickupGroupWithoutIndexJava.orc")
    assert unknown.software_version == "unknown"


def test_missing_optional_fields(orc_examples: Path) -> None:
    r = OrcReader(orc_examples / "TestOrcFile.testWithoutCompressionBlockSize.orc")
    assert r.compression == CompressionKind.SNAPPY
    assert r.compression_block_size == 262144
    assert not r._postscript.HasField("writer_version") and r.writer_version == 0
    # the footer has no numberOfRows: the count comes from the stripes
    assert not r._footer.HasField("number_of_rows")
    assert r.num_rows == 100
    assert str(r.schema) == "bigint"
    assert r.read().to_pylist() == list(range(1, 101)) or len(r.read().to_pylist()) == 100
    no_format = OrcReader(orc_examples / "orc_no_format.orc")
    assert not no_format._postscript.HasField("magic") and no_format.file_version == ()
    assert no_format.num_rows == 5


def test_user_metadata(orc_examples: Path) -> None:
    r = OrcReader(orc_examples / "TestOrcFile.metaData.orc")
    assert set(r.user_metadata) == {"big", "clobber", "my.meta"}
    assert r.user_metadata["clobber"] == bytes([5, 7, 11, 13, 17, 19])
    assert len(r.user_metadata["big"]) == 40000


def test_bare_timestamp_root(orc_examples: Path) -> None:
    r = OrcReader(orc_examples / "TestOrcFile.testTimestamp.orc")
    assert str(r.schema) == "timestamp"
    values = r.read().to_pylist()
    # "2037-01-01 00:00:00.000999" and "2003-01-01 00:00:00.000000222"
    assert values[0] == dt.datetime(2037, 1, 1, 0, 0, 0, 999)
    vec = r.read().root
    assert int(vec.nanos[0]) == 999_000 and int(vec.nanos[1]) == 222


def test_union_decimal_and_timestamp_values(orc_examples: Path) -> None:
    rows = OrcReader(orc_examples / "TestOrcFile.testUnionAndTimestamp.orc").read().to_pylist()
    assert rows[0] == {
        "time": dt.datetime(2000, 3, 12, 15, 0),
        "union": (0, 42),
        "decimal": Decimal("12345678.654745600000000000"),
    }
    assert rows[2] == {"time": None, "union": None, "decimal": None}


def test_decimal_per_value_scales_and_hive11(orc_examples: Path) -> None:
    rows = OrcReader(orc_examples / "decimal.orc").read().to_pylist()
    assert rows[0] == {"_col0": Decimal("-1000.50000")}
    assert sum(r["_col0"] is None for r in rows) == 2000
    # Hive 0.11 decimal(0,0): every value keeps its own scale
    hive11 = OrcReader(orc_examples / "orc_split_elim.orc")
    assert hive11.schema.find("decimal1").precision == 0
    assert hive11.read(["decimal1"]).to_pylist()[0] == {"decimal1": Decimal("1.2")}


def test_decimal64_encoding(orc_examples: Path) -> None:
    java = OrcReader(orc_examples / "decimal64_v2.orc").read().to_pylist()
    cpp = OrcReader(orc_examples / "decimal64_v2_cplusplus.orc").read().to_pylist()
    assert len(java) == len(cpp) == 10
    assert java[0]["c"] == Decimal("36164.16")
    assert cpp[0]["b"] == Decimal("164.16")


def test_column_projection_reads_only_asked_streams(orc_examples: Path) -> None:
    r = OrcReader(orc_examples / "TestOrcFile.testSeek.orc")
    batch = r.read(["int1", "middle.list"])
    assert str(batch.schema) == "struct<int1:int,middle:struct<list:array<struct<int1:int,string1:string>>>>"
    full = r.read()
    assert batch.column("int1").values.tolist() == full.column("int1").values.tolist()
    assert batch.column("middle").to_pylist() == full.column("middle").to_pylist()
    # by column id too
    assert r.read([4]).column("int1").values.tolist() == full.column("int1").values.tolist()
    with pytest.raises(OrcError, match="no field 'nope'"):
        r.read(["nope"])


def test_empty_and_zero_files(orc_examples: Path) -> None:
    empty = OrcReader(orc_examples / "TestOrcFile.emptyFile.orc")
    assert empty.num_rows == 0 and empty.stripes == []
    assert empty.read().num_rows == 0
    assert str(empty.schema).startswith("struct<boolean1:boolean,")
    zero = OrcReader(orc_examples / "zero.orc")
    assert (zero.num_rows, str(zero.schema), zero.stripes) == (0, "struct<>", [])
    assert list(zero.rows()) == []


def test_future_version_is_refused_like_java(orc_examples: Path) -> None:
    with pytest.raises(OrcError, match=r"written by a future ORC version 19\.99\. This file is not readable"):
        OrcReader(orc_examples / "version1999.orc")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("missing_blob_stream_in_string_dict.orc", "DICTIONARY_DATA stream not found"),
        ("missing_length_stream_in_string_dict.orc", "LENGTH stream not found"),
        ("negative_dict_entry_lengths.orc", "negative length"),
        ("stripe_footer_bad_column_encodings.orc", "footer of stripe 0"),
    ],
)
def test_corrupt_files_raise_clear_errors(name: str, message: str) -> None:
    with pytest.raises(OrcError, match=message) as info:
        OrcReader(ORC_DATA_DIR / "corrupt" / name).read()
    assert name in str(info.value)
    assert info.value.stripe == 0


def test_corrupt_metadata_does_not_block_data(orc_examples: Path) -> None:
    r = OrcReader(orc_examples / "corrupt" / "missing_length_stream_in_string_dict.orc")
    assert r.read(["_col0"] if "_col0" in r.schema.field_names else [1]).num_rows == r.num_rows


def test_encrypted_columns_read_as_null(orc_examples: Path) -> None:
    rows = OrcReader(orc_examples / "encrypted" / "sample1.orc").read().to_pylist()
    assert rows == [{"ssn": None, "email": None, "name": "Dongjoon Hyun"}]


def test_non_struct_roots_and_sources(orc_examples: Path) -> None:
    data = (orc_examples / "TestOrcFile.test1.orc").read_bytes()
    from_bytes = OrcReader(data).read().to_pylist()
    with open(orc_examples / "TestOrcFile.test1.orc", "rb") as fh:
        from_file = OrcReader(fh).read().to_pylist()
    assert from_bytes == from_file and len(from_bytes) == 2
    assert from_bytes[1]["map"] == {"chani": {"int1": 5, "string1": "chani"},
                                    "mauddib": {"int1": 1, "string1": "mauddib"}}


def test_iter_batches_and_rows(orc_examples: Path) -> None:
    r = OrcReader(orc_examples / "TestOrcFile.testStripeLevelStats.orc")
    batches = list(r.iter_batches(batch_size=4000))
    assert [b.num_rows for b in batches] == [4000, 1000, 4000, 1000, 1000]
    assert [b.first_row for b in batches] == [0, 4000, 5000, 9000, 10000]
    rows = list(r.rows())
    assert len(rows) == 11000 and rows[0] == {"int1": 1, "string1": "one"}
    assert sum(len(b.to_pylist()) for b in batches) == 11000


def test_hybrid_calendar_conversion() -> None:
    import numpy as np

    from metastore.orcio._temporal import hybrid_to_proleptic_days

    # Julian 1582-10-04 is the day before Gregorian 1582-10-15 in the hybrid calendar
    converted = hybrid_to_proleptic_days(np.array([-141428, -141427, 0]))
    assert converted.tolist() == [dt.date(1582, 10, 4).toordinal() - 719163, -141427, 0]


def test_projection_reads_only_the_selected_streams(orc_examples: Path) -> None:
    import io

    class RecordingFile(io.BytesIO):
        def __init__(self, data: bytes) -> None:
            super().__init__(data)
            self.ranges: list[tuple[int, int]] = []

        def read(self, size: int = -1) -> bytes:
            start = self.tell()
            out = super().read(size)
            self.ranges.append((start, start + len(out)))
            return out

    data = (orc_examples / "TestOrcFile.testSeek.orc").read_bytes()
    f = RecordingFile(data)
    reader = OrcReader(f)
    int_id = reader.schema.find("int1").id
    footer = reader._stripe_footer(0)
    f.ranges.clear()
    reader.read(["int1"], stripe=0)
    start = reader.stripes[0].offset
    locations = {}
    for s in footer.streams:
        locations[(s.column, s.kind)] = (start, start + s.length)
        start += s.length
    read_bytes = set()
    for a, b in f.ranges:
        read_bytes.update(range(a, b))
    for (column, kind), (a, b) in locations.items():
        touched = any(x in read_bytes for x in range(a, b))
        wanted = column in (0, int_id) and kind in (0, 1, 2, 3, 5)
        if b > a:
            assert touched == wanted, (column, kind)
