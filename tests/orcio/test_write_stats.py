"""Statistics and bloom filters: what ORC C++ (pyorc) reads from our files equals statistics computed here from
the data; its predicate pushdown skips exactly the row groups our row-index statistics and bloom filters rule
out; ORC Java's own hashing, bloom filters and decimal sums agree with ours."""

from __future__ import annotations

import datetime as dt
import math
import random
import struct
from decimal import Context, Decimal

import numpy as np
import pyorc
import pytest
from pyorc import PredicateColumn, TypeKind

from metastore.orcio._bloom import BloomFilter, doubles_to_long_bits, long_hashes
from metastore.orcio._murmur3 import hash64_array_bytes
from metastore.orcio._reader import OrcReader
from metastore.orcio._statistics import decimal_to_text
from metastore.orcio._stats_builder import (
    WIDE_DECIMALS,
    hive_decimal_add,
    string_lower_bound,
    string_upper_bound,
)
from metastore.orcio._writer import OrcWriter

from .java_oracle import ask_java, compiled_oracle

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
requires_java = pytest.mark.skipif(compiled_oracle() is None, reason="needs javac and pyspark's orc-core jar")

SCHEMA = (
    "struct<b:boolean,t:tinyint,i:int,l:bigint,f:float,d:double,s:string,c:char(3),bin:binary,"
    "dec:decimal(12,3),wide:decimal(30,4),dt:date,ts:timestamp,li:array<int>>"
)


def _data(rng: random.Random, n: int) -> dict[str, list]:
    def maybe(v, p):
        return None if rng.random() < p else v

    rate = {name: rng.choice([0.0, 0.2, 1.0 if name in ("bin", "c") else 0.3]) for name in SCHEMA_NAMES}
    return {
        "b": [maybe(rng.random() < 0.3, rate["b"]) for _ in range(n)],
        "t": [maybe(rng.randrange(-128, 128), rate["t"]) for _ in range(n)],
        "i": [maybe(rng.randrange(-(2**31), 2**31), rate["i"]) for _ in range(n)],
        "l": [maybe(rng.choice([rng.randrange(-(10**12), 10**12), INT64_MAX, INT64_MIN]), rate["l"]) for _ in range(n)],
        "f": [maybe(rng.uniform(-100, 100), rate["f"]) for _ in range(n)],
        "d": [maybe(rng.choice([rng.uniform(-1e9, 1e9), -0.0, math.inf]), rate["d"]) for _ in range(n)],
        "s": [maybe(rng.choice(["", "ä", f"k{rng.randrange(50)}", "z" * rng.randrange(30)]), rate["s"]) for _ in range(n)],
        "c": [maybe(rng.choice(["a", "abcd", "é"]), rate["c"]) for _ in range(n)],
        "bin": [maybe(bytes(rng.randrange(256) for _ in range(rng.randrange(4))), rate["bin"]) for _ in range(n)],
        "dec": [maybe(Decimal(rng.randrange(-(10**12) + 1, 10**12)).scaleb(-3), rate["dec"]) for _ in range(n)],
        "wide": [maybe(Decimal(rng.randrange(-(10**30) + 1, 10**30)).scaleb(-4, WIDE_DECIMALS), rate["wide"]) for _ in range(n)],
        "dt": [maybe(dt.date(1970, 1, 1) + dt.timedelta(days=rng.randrange(-5000, 30000)), rate["dt"]) for _ in range(n)],
        "ts": [maybe(dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=rng.randrange(10**15)), rate["ts"]) for _ in range(n)],
        "li": [maybe([rng.randrange(5) for _ in range(rng.randrange(4))], rate["li"]) for _ in range(n)],
    }


SCHEMA_NAMES = ["b", "t", "i", "l", "f", "d", "s", "c", "bin", "dec", "wide", "dt", "ts", "li"]


def _expected_stats(name: str, values: list) -> dict:
    """The statistics dict pyorc should report for these values, computed directly."""
    present = [v for v in values if v is not None]
    out: dict = {"has_null": len(present) != len(values), "number_of_values": len(present)}
    if name in ("t", "i", "l"):
        if present:
            out["minimum"], out["maximum"] = min(present), max(present)
        total, overflow = 0, False
        for v in present:
            total += v
            overflow |= not INT64_MIN <= total <= INT64_MAX
        out["sum"] = None if overflow else total
    elif name in ("f", "d"):
        wide = [float(np.float32(v)) if name == "f" else v for v in present]
        if wide:
            out["minimum"], out["maximum"] = min(wide), max(wide)
        total = 0.0
        for v in wide:
            total += v
        out["sum"] = total
    elif name in ("s", "c"):
        texts = [(v + "  ")[:3] if name == "c" else v for v in present]
        encoded = [t.encode() for t in texts]
        if encoded:
            out["minimum"], out["maximum"] = min(encoded).decode(), max(encoded).decode()
            out["total_length"] = sum(map(len, encoded))
    elif name == "b":
        out["true_count"] = sum(present)
        out["false_count"] = len(present) - sum(present)
    elif name == "bin":
        out["total_length"] = sum(map(len, present))
    elif name in ("dec", "wide"):
        if present:
            out["minimum"], out["maximum"] = min(present), max(present)
        total = Decimal(0)
        for v in present:
            total = WIDE_DECIMALS.add(total, v)
        out["sum"] = total
    elif name in ("dt", "ts"):
        if present:
            out["minimum"], out["maximum"] = min(present), max(present)
    elif name == "li":
        pass
    return out


def _pyorc_view(name: str, stats: dict) -> dict:
    out = {k: v for k, v in stats.items() if k != "kind"}
    if name == "ts":
        for key in ("minimum", "maximum", "lower_bound", "upper_bound"):
            if key in out:
                out[key] = out[key].replace(tzinfo=None)
        # pyorc gives millisecond precision (with an upper bound one millisecond up)
        out.pop("lower_bound", None)
        out.pop("upper_bound", None)
    return out


def _ms(value: dt.datetime) -> dt.datetime:
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


@pytest.mark.parametrize("seed", range(4))
def test_file_and_stripe_statistics_match_the_data(seed: int, tmp_path) -> None:
    rng = random.Random(seed)
    n = rng.choice([50, 2500, 6000])
    data = _data(rng, n)
    path = tmp_path / "stats.orc"
    options = {"orc.compress": ["NONE", "ZSTD", "ZLIB", "SNAPPY"][seed], "orc.stripe.size": "30000"}
    with OrcWriter(path, SCHEMA, options) as writer:
        writer.write_batch(data)
    ours = OrcReader(path)
    ids = {name: ours.schema.find(name).id for name in SCHEMA_NAMES}
    with open(path, "rb") as f:
        reader = pyorc.Reader(f)
        stripes = [(s.first_row, s.first_row + s.number_of_rows) for s in ours.stripes]
        levels = [(None, 0, n)] + [(i, a, b) for i, (a, b) in enumerate(stripes)]
        assert n < 100 or len(stripes) > 1
        for stripe, lo, hi in levels:
            holder = reader if stripe is None else reader.read_stripe(stripe)
            for name in SCHEMA_NAMES:
                got = _pyorc_view(name, holder[ids[name]].statistics)
                want = _expected_stats(name, data[name][lo:hi])
                if name == "ts" and "minimum" in want:
                    want["minimum"], want["maximum"] = _ms(want["minimum"]), _ms(want["maximum"])
                if got.get("sum") is None:
                    got.pop("sum", None)
                if want.get("sum") is None:
                    want.pop("sum", None)
                if name == "c" and want["number_of_values"] == 0:
                    want.pop("total_length", None)
                if name == "wide" and "sum" in want:
                    # pyorc hands sums back through a 28-digit Decimal context; the stored text is exact
                    assert ours.column_statistics(name).sum is not None
                    want["sum"] = Context(prec=28).plus(want["sum"])
                assert got == want, (stripe, name)
                if name == "wide" and stripe is None and "sum" in want:
                    exact = _expected_stats(name, data[name])["sum"]
                    assert ours._footer.statistics[ids[name]].decimal_statistics.sum == decimal_to_text(exact)


def test_list_children_statistics(tmp_path) -> None:
    path = tmp_path / "lists.orc"
    values = [[1, 2, 3], None, [], [4]] * 300
    with OrcWriter(path, "struct<li:array<int>>", {"orc.row.index.stride": "1000"}) as writer:
        writer.write_batch({"li": values})
    stats = OrcReader(path)._footer.statistics[1].collection_statistics
    assert (stats.min_children, stats.max_children, stats.total_children) == (0, 3, 1200)
    entries = OrcReader(path).row_index(0, 1)
    first = entries[0].statistics
    assert (first.number_of_values, first.has_null) == (750, True)


# ------------------------------------------------------------------------------------- predicate pushdown


def test_pyorc_predicate_pushdown_uses_row_index_and_bloom_filters(tmp_path) -> None:
    groups, stride = 8, 1000
    n = groups * stride
    # each row group holds keys "key-0000".."key-9999" with step 2 shifted per group: odd keys never occur,
    # yet every odd key lies between some group's min and max
    keys = [f"key-{(2 * (i % stride) + 2 * g) % 10000:04d}" for g in range(groups) for i in range(stride)]
    numbers = [2 * i for i in range(n)]
    columns = {"k": keys, "n": numbers, "plain": keys}
    path = tmp_path / "ppd.orc"
    options = {"orc.row.index.stride": str(stride), "orc.bloom.filter.columns": "k,n", "orc.compress": "ZLIB"}
    with OrcWriter(path, "struct<k:string,n:bigint,plain:string>", options) as writer:
        writer.write_batch(columns)

    def rows(predicate) -> list:
        with open(path, "rb") as f:
            return list(pyorc.Reader(f, predicate=predicate))

    # absent but inside every group's min/max: the bloom filters rule every group out
    assert rows(PredicateColumn(TypeKind.STRING, "k") == "key-0013") == []
    assert rows(PredicateColumn(TypeKind.LONG, "n") == 4001) == []
    # the same probe on a column without bloom filters keeps the groups whose min/max cover it
    kept = rows(PredicateColumn(TypeKind.STRING, "plain") == "key-0013")
    covering = [g for g in range(groups) if min(keys[g * stride : (g + 1) * stride]) <= "key-0013"
                <= max(keys[g * stride : (g + 1) * stride])]
    assert len(covering) > 1 and len(kept) == len(covering) * stride
    # a present value: exactly the row groups that contain it come back (whole groups)
    target = keys[3 * stride + 17]
    holding = {i // stride for i, k in enumerate(keys) if k == target}
    got = rows(PredicateColumn(TypeKind.STRING, "k") == target)
    assert len(got) == len(holding) * stride
    assert {numbers.index(r[1]) // stride for r in got} == holding
    # min/max alone: a range only one row group covers
    got = rows(PredicateColumn(TypeKind.LONG, "n") < 1000)
    assert len(got) == stride


def test_bloom_filters_are_sized_and_marked_as_java(tmp_path) -> None:
    path = tmp_path / "bloom.orc"
    options = {"orc.bloom.filter.columns": "x", "orc.bloom.filter.fpp": "0.05", "orc.row.index.stride": "2000"}
    with OrcWriter(path, "struct<x:int,y:int>", options) as writer:
        writer.write_batch({"x": list(range(5000)), "y": list(range(5000))})
    reader = OrcReader(path)
    assert reader.bloom_filter_columns(0) == [reader.schema.find("x").id]
    filters = reader.bloom_filters(0, "x")
    assert filters is not None and len(filters) == 3
    expected = BloomFilter.for_entries(2000, 0.05)
    assert all(f.num_bits == expected.num_bits and f.num_hash_functions == expected.num_hash_functions for f in filters)
    assert reader._stripe_footer(0).columns[1].bloom_encoding == 1
    assert filters[0].test_long(1999) and filters[1].test_long(2000)
    assert sum(filters[0].test_long(v) for v in range(2000, 5000)) < 3000 * 0.1


# ------------------------------------------------------------------------------------- ORC Java as the oracle


@requires_java
def test_hashing_and_bloom_bits_equal_orc_java() -> None:
    rng = random.Random(11)
    longs = [rng.choice([INT64_MIN, INT64_MAX, 0, -1, rng.randrange(INT64_MIN, INT64_MAX), rng.randrange(-1000, 1000)])
             for _ in range(3000)]
    doubles = [rng.choice([math.nan, math.inf, -math.inf, -0.0, 0.0, rng.uniform(-1e300, 1e300), rng.random()])
               for _ in range(3000)]
    blobs = [bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 7, 8, 9, 15, 16, 17, 40, 100])))
             for _ in range(3000)]
    requests = [f"HASH64 {b.hex() or '-'}" for b in blobs]
    chunks = [(0, 1000), (1000, 3000)]
    for lo, hi in chunks:
        requests.append(f"BLOOM 10000 0.01 long {','.join(map(str, longs[lo:hi]))}")
        bits = [struct.unpack('<q', struct.pack('<d', v))[0] for v in doubles[lo:hi]]
        requests.append(f"BLOOM 10000 0.05 double {','.join(map(str, bits))}")
        requests.append(f"BLOOM 3000 0.01 bytes {','.join(b.hex() or '' for b in blobs[lo:hi])}")
    answers = ask_java(requests)
    ours_hash = hash64_array_bytes(blobs).tolist()
    assert [int(a) for a in answers[:3000]] == ours_hash
    k = 3000
    for lo, hi in chunks:
        for entries, fpp, hashes in (
            (10000, 0.01, long_hashes(np.array(longs[lo:hi], dtype=np.int64))),
            (10000, 0.05, long_hashes(doubles_to_long_bits(np.array(doubles[lo:hi])))),
            (3000, 0.01, hash64_array_bytes(blobs[lo:hi])),
        ):
            bf = BloomFilter.for_entries(entries, fpp)
            bf.add_hashes(hashes)
            num_hashes, bitset = answers[k].split(" ")
            assert int(num_hashes) == bf.num_hash_functions
            assert bitset == bf.to_utf8_bytes().hex()
            k += 1


@requires_java
def test_wide_decimal_sums_round_and_overflow_as_hive_decimal() -> None:
    rng = random.Random(5)
    cases = []
    for _ in range(300):
        scale = rng.choice([0, 6, 18, 30])
        digits = rng.choice([5, 20, 38 - scale if scale < 38 else 1, 38])
        values = []
        for _ in range(rng.randrange(1, 12)):
            unscaled = rng.randrange(-(10 ** min(digits, 38)) + 1, 10 ** min(digits, 38))
            values.append(Decimal(unscaled).scaleb(-scale, WIDE_DECIMALS))
        cases.append(values)
    cases.append([Decimal("99999999999999999999.999999999999999999"), Decimal(1)])
    cases.append([Decimal("9" * 38), Decimal(1)])
    answers = ask_java([f"DECSUM {','.join(format(v, 'f') for v in values)}" for values in cases])
    for values, answer in zip(cases, answers, strict=True):
        total: Decimal | None = Decimal(0)
        for v in values:
            total = hive_decimal_add(total, v) if total is not None else None
        java = None if answer == "null" else Decimal(answer)
        assert total == java, values


def test_long_string_bounds_follow_java() -> None:
    ascii_long = b"a" * 2000
    assert string_lower_bound(ascii_long) == b"a" * 1024
    assert string_upper_bound(ascii_long) == b"a" * 1023 + b"b"
    # a two-byte character across byte 1024: the cut happens at its first byte
    straddle = b"a" * 1023 + "é".encode() + b"zz"
    assert string_lower_bound(straddle) == b"a" * 1023
    assert string_upper_bound(straddle) == b"a" * 1022 + b"b"
    # the upper bound's last character is incremented as a code point
    multi = "é".encode() * 600
    assert string_upper_bound(multi) == "é".encode() * 511 + "ê".encode()


@pytest.mark.parametrize("threshold", ["0.0", "1.0"])  # direct, dictionary
def test_string_row_group_statistics_by_bytes(tmp_path, threshold) -> None:
    rng = random.Random(3)
    alphabet = ["prefix00", "prefix00\x00", "prefix00a", "prefix0", "", "é", "\x00", "zz", "prefix00\x00\x00"]
    values = [rng.choice(alphabet) + rng.choice(["", "x", "\x00"]) if rng.random() < 0.9 else None for _ in range(5000)]
    path = tmp_path / "strings.orc"
    options = {"orc.row.index.stride": "1000", "orc.dictionary.key.threshold": threshold}
    with OrcWriter(path, "struct<s:string>", options) as writer:
        writer.write_batch({"s": values})
    reader = OrcReader(path)
    assert reader.column_encoding(0, 1) == ("DIRECT_V2" if threshold == "0.0" else "DICTIONARY_V2")
    for g, entry in enumerate(reader.row_index(0, 1)):
        group = [v.encode() for v in values[g * 1000 : (g + 1) * 1000] if v is not None]
        st = entry.statistics
        assert (st.minimum.encode(), st.maximum.encode(), st.total_length) == (min(group), max(group), sum(map(len, group)))
