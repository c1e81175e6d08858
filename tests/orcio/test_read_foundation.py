"""The shared foundation: schemas, compression framing, bloom filter arithmetic, errors and describe()."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import numpy as np
import pytest

from metastore.orcio import OrcError
from metastore.orcio._bloom import (
    BloomFilter,
    decimal_bloom_text,
    double_to_long_bits,
    has_bad_bloom_filters,
    long_hash,
    long_hashes,
)
from metastore.orcio._compression import (
    CompressionKind,
    chunk_header,
    compress_stream,
    decompress_stream,
    decompress_stream_indexed,
)
from metastore.orcio._describe import describe
from metastore.orcio._types import Category, TypeDescription

# ------------------------------------------------------------------------------------------------ schemas


@pytest.mark.parametrize(
    "text",
    [
        "struct<a:int,b:map<string,array<decimal(10,2)>>>",
        "struct<`odd name`:int,`with``tick`:string,x:uniontype<int,string,struct<y:date>>>",
        "struct<t:timestamp,l:timestamp with local time zone,c:char(5),v:varchar(200),bin:binary>",
        "array<struct<x:float,y:double,z:boolean,w:tinyint,u:smallint,v:bigint>>",
        "bigint",
    ],
)
def test_schema_text_round_trip(text: str) -> None:
    schema = TypeDescription.parse(text)
    assert str(schema) == text
    assert TypeDescription.parse(str(schema)) == schema
    again = TypeDescription._from_proto_types(schema._to_proto_types())
    assert again == schema and str(again) == text
    assert [n.id for n in again.walk()] == list(range(again.column_count))


def test_schema_ids_and_lookups() -> None:
    schema = TypeDescription.parse("struct<a:int,b:map<string,array<decimal(10,2)>>,`c.d`:struct<e:int>>")
    assert [(n.id, n.max_id) for n in schema.walk()] == [(0, 7), (1, 1), (2, 5), (3, 3), (4, 5), (5, 5), (6, 7),
                                                        (7, 7)]
    assert schema.find("b._value._elem").id == 5
    assert schema.find("`c.d`.e").id == 7
    assert schema.find("B").id == 2  # field names match case-insensitively as a fallback
    assert schema.find_column(4).category == Category.LIST
    assert schema.column_path(7) == "`c.d`.e"
    with pytest.raises(OrcError, match="no field 'zz'"):
        schema.find("zz")
    decimal = schema.find("b._value._elem")
    assert (decimal.precision, decimal.scale) == (10, 2)
    assert TypeDescription.parse("decimal") == TypeDescription.decimal(38, 10)
    assert TypeDescription.parse(" struct < a : int > ").field_names == ("a",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("struct<a:int,>", "expected a field name"),
        ("struct<a:int", "expected '>'"),
        ("decimal(40,2)", "decimal"),
        ("decimal(5,6)", "decimal"),
        ("char(0)", "length"),
        ("int<", "unexpected text"),
        ("whatever", "unknown type"),
        ("map<int>", "map type needs exactly 2 children"),
    ],
)
def test_schema_errors(text: str, message: str) -> None:
    with pytest.raises(OrcError, match=message):
        TypeDescription.parse(text)


def test_proto_types_are_validated() -> None:
    from metastore.orcio._proto import orc_proto_pb2 as pb

    cyclic = [pb.Type(kind=pb.Type.STRUCT, subtypes=[0], field_names=["a"])]
    with pytest.raises(OrcError, match="not after it"):
        TypeDescription._from_proto_types(cyclic)
    shared = [pb.Type(kind=pb.Type.STRUCT, subtypes=[1, 1], field_names=["a", "b"]), pb.Type(kind=pb.Type.INT)]
    with pytest.raises(OrcError, match="more than one"):
        TypeDescription._from_proto_types(shared)
    unknown = [pb.Type(kind=19)]
    with pytest.raises(OrcError, match="unsupported ORC type kind 19"):
        TypeDescription._from_proto_types(unknown)
    nameless = [pb.Type(kind=pb.Type.STRUCT, subtypes=[1]), pb.Type(kind=pb.Type.INT)]
    assert str(TypeDescription._from_proto_types(nameless)) == "struct<_col0:int>"
    assert str(TypeDescription._from_proto_types([])) == "struct<>"


# ------------------------------------------------------------------------------------------------ compression


def test_chunk_headers() -> None:
    assert chunk_header(100000, False) == bytes.fromhex("400d03")
    assert chunk_header(5, True) == bytes.fromhex("0b0000")
    with pytest.raises(OrcError):
        chunk_header(1 << 23, False)


@pytest.mark.parametrize("kind", ["NONE", "ZLIB", "SNAPPY", "LZ4", "ZSTD"])
def test_compression_round_trip_and_positions(kind: str) -> None:
    rng = np.random.default_rng(3)
    data = rng.integers(0, 4, 300_000, dtype=np.uint8).tobytes() + os.urandom(140_000) + bytes(50_000)
    codec = CompressionKind.parse(kind)
    packed = compress_stream(codec, 65536, data)
    assert decompress_stream(codec, 65536, packed.data) == data
    indexed = decompress_stream_indexed(codec, 65536, packed.data)
    if codec != CompressionKind.NONE:
        assert list(indexed.compressed_starts) == list(packed.chunk_starts)
        # random bytes do not compress: that chunk is stored as it is (isOriginal)
        raw_chunk = 5  # bytes 327680..393216 are all random
        start = packed.chunk_starts[raw_chunk]
        assert packed.data[start] & 1 == 1
        for offset in (0, 65536, 70_000, 300_123, len(data)):
            assert indexed.offset_of(*packed.position(offset)) == offset
    else:
        assert packed.position(1234) == (1234,)


def test_decompression_rejects_bad_chunks() -> None:
    deflater = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = deflater.compress(bytes(1000)) + deflater.flush()
    good = chunk_header(len(body), False) + body
    assert decompress_stream(CompressionKind.ZLIB, 1000, good) == bytes(1000)
    with pytest.raises(OrcError, match="more than the block size"):
        decompress_stream(CompressionKind.ZLIB, 999, good)
    with pytest.raises(OrcError, match="claims"):
        decompress_stream(CompressionKind.ZLIB, 1000, good[:-1])
    with pytest.raises(OrcError, match="truncated inside a chunk header"):
        decompress_stream(CompressionKind.ZLIB, 1000, good + b"\x01")
    with pytest.raises(OrcError, match="larger than the block size"):
        decompress_stream(CompressionKind.SNAPPY, 4, chunk_header(5, True) + b"abcde")
    with pytest.raises(OrcError, match="allowed"):
        decompress_stream(CompressionKind.ZLIB, 1000, good * 3, max_output=2500)
    for kind in (CompressionKind.SNAPPY, CompressionKind.LZ4, CompressionKind.ZSTD, CompressionKind.LZO):
        with pytest.raises(OrcError):
            decompress_stream(kind, 1000, chunk_header(6, False) + b"\xff\x00garb")
    with pytest.raises(OrcError, match="BROTLI compression is not supported"):
        decompress_stream(CompressionKind.BROTLI, 1000, chunk_header(3, False) + b"abc")
    with pytest.raises(OrcError, match="unknown compression"):
        CompressionKind.parse("gzip2")
    assert CompressionKind.parse("uncompressed") == CompressionKind.NONE


def test_lzo_blocks() -> None:
    from metastore.orcio._lzo import lzo1x_decompress

    # literal run "abcd", a match of 4 at distance 4 (via an M2 instruction), end marker
    block = bytes([17 + 4]) + b"abcd" + bytes([((4 - 1) << 5) | (3 << 2), 0]) + b"\x11\x00\x00"
    assert lzo1x_decompress(block, 100) == b"abcdabcd"
    with pytest.raises(OrcError, match="more than the block size"):
        lzo1x_decompress(block, 6)
    with pytest.raises(OrcError, match="before the start"):
        lzo1x_decompress(bytes([17 + 1]) + b"a" + bytes([(3 << 5) | (7 << 2), 9]) + b"\x11\x00\x00", 100)
    with pytest.raises(OrcError, match="ends inside"):
        lzo1x_decompress(block[:-2], 100)


# ------------------------------------------------------------------------------------------------ bloom filters


def test_long_hash_vectors() -> None:
    # TestBloomFilter.testLongHash of ORC Java
    vectors = {0: 0, -1: 6614246905173314819, 18000000000: -1097054448615658549,
               790302201: 1499534499340523007}
    for value, expected in vectors.items():
        assert long_hash(value) == expected
    assert long_hashes(np.array(list(vectors), dtype=np.int64)).tolist() == list(vectors.values())


def test_murmur3_test_vector() -> None:
    from metastore.orcio._bloom import bytes_hash

    text = ("It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of "
            "foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of Light, "
            "it was the season of Darkness, it was the spring of hope, it was the winter of despair, we had "
            "everything before us, we had nothing before us, we were all going direct to Heaven, we were all "
            "going direct the other way.")
    assert bytes_hash(text.encode()) == 305830725663368540


def test_bloom_sizing_and_serialisation() -> None:
    assert (BloomFilter.for_entries(10000, 0.01).num_bits, BloomFilter.for_entries(10000, 0.01).num_hash_functions) \
        == (95872, 7)
    assert (BloomFilter.for_entries(10000, 0.05).num_bits, BloomFilter.for_entries(10000, 0.05).num_hash_functions) \
        == (62400, 4)
    words = BloomFilter.from_words([0x8040201008040201, 0x7FBFDFEFF7FBFDFE], 3)
    assert words.to_utf8_bytes() == bytes.fromhex("0102040810204080fefdfbf7efdfbf7f")
    again = BloomFilter._from_proto(words._to_proto())
    assert (again.words == words.words).all() and again.num_hash_functions == 3
    legacy = BloomFilter._from_proto(words._to_proto(legacy=True))
    assert (legacy.words == words.words).all()
    with pytest.raises(OrcError, match="whole number"):
        BloomFilter.from_utf8_bytes(b"\x00" * 7, 3)


def test_bloom_membership_and_merge() -> None:
    a = BloomFilter.for_entries(1000, 0.05)
    b = BloomFilter.for_entries(1000, 0.05)
    a.add_longs(np.arange(500))
    b.add_string("hello")
    b.add_double(2.5)
    b.add_bytes(b"\x00\x01")
    a.merge(b)
    assert all(a.test_long(i) for i in range(500))
    assert a.test_string("hello") and a.test_double(2.5) and a.test_bytes(b"\x00\x01")
    misses = sum(a.test_long(i) for i in range(10_000, 12_000))
    assert misses < 2000 * 0.12
    assert double_to_long_bits(float("nan")) == 0x7FF8000000000000
    assert decimal_bloom_text(__import__("decimal").Decimal("-1000.50")) == "-1000.5"
    with pytest.raises(OrcError, match="cannot merge"):
        a.merge(BloomFilter.for_entries(10, 0.05))


def test_bad_bloom_filter_rule() -> None:
    assert has_bad_bloom_filters(1, None)
    for version in ("1.6.0", "1.6.11", "1.7.0", "1.6.5-SNAPSHOT"):
        assert has_bad_bloom_filters(1, version)
    for version in ("1.6.12", "1.7.1", "2.3.1"):
        assert not has_bad_bloom_filters(1, version)
    assert not has_bad_bloom_filters(0, None)


# ------------------------------------------------------------------------------------------------ errors, describe


def test_error_context() -> None:
    err = OrcError("bad thing", file="f.orc", stripe=2)
    assert str(err) == "bad thing (file 'f.orc', stripe 2)"
    err.with_context(column=4, stream="DATA", stripe=9)
    assert str(err) == "bad thing (file 'f.orc', stripe 2, column 4, stream DATA)"
    assert err.reason == "bad thing"


def test_describe(orc_examples: Path) -> None:
    text = describe(orc_examples / "orc_split_elim_cpp.orc")
    assert "File Version: 0.12 with ORC_135 by ORC C++ 1.8.0-SNAPSHOT" in text
    assert "Type: struct<userid:bigint,string1:string,subtype:double,decimal1:decimal(16,6),ts:timestamp>" in text
    assert "Column 1: count: 25000 hasNull: false min: 2 max: 100 sum: 2499619" in text
    assert "Encoding column 2: DIRECT_V2" in text and "Writer timezone: GMT" in text
    bad = describe(orc_examples / "bad_bloom_filter_1.6.11.orc")
    assert "Bloom filters (ignored: known-bad writer): columns 1, 2" in bad
    # a broken Metadata section is reported, not fatal
    assert "Stripe Statistics: unreadable" in describe(orc_examples / "corrupt" / "missing_length_stream_in_string_dict.orc") \
        or "Stripe Statistics:" in describe(orc_examples / "corrupt" / "missing_length_stream_in_string_dict.orc")
    assert "Rows: 0" in describe(orc_examples / "zero.orc")


def test_stream_lengths_cover_each_stripes_index_and_data(orc_examples: Path) -> None:
    from metastore.orcio import OrcReader

    with OrcReader(str(orc_examples / "orc_split_elim_cpp.orc")) as reader:
        for s, info in enumerate(reader.stripes):
            streams = reader.stream_lengths(s)
            assert sum(length for *_, length in streams) == info.index_length + info.data_length
            assert sum(length for _, kind, length in streams if kind == "ROW_INDEX" or kind.startswith("BLOOM")) \
                == info.index_length
            assert {column for column, kind, _ in streams if kind == "DATA"} == {1, 2, 3, 4, 5}
