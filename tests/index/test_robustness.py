"""The split filter never drops a split it cannot judge: data files changed or unknown since the build, index
files missing, truncated, damaged or unusable for any reason keep their splits, with a warning naming the file,
and the index's health (SHOW INDEX's status) reports it. BLOOM keeps its configured false-positive rate even for
stripes of one to five distinct values."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from metastore.index.bloom import StripeBloom, filter_size, key_hashes, stripe_filter
from metastore.index.build import BuildTarget, build_parts
from metastore.index.columns import Domain, column_type
from metastore.index.filter import PartCache, filter_splits
from metastore.index.model import DataFile, IndexKind, IndexLevel, IndexPart, IndexRecord, IndexState, Split
from metastore.index.parts import PartReader
from metastore.index.predicate import Compare, Value, ValueKind
from metastore.index.scan import data_file
from metastore.index.select import file_splits
from metastore.index.status import CORRUPT, OK, OUT_OF_SYNC, index_health
from metastore.locations import local_path
from metastore.orcio import OrcWriter

TYPES = {"id": column_type("bigint")}


def _write(path: Path, ids: list[int]) -> DataFile:
    path.parent.mkdir(parents=True, exist_ok=True)
    with OrcWriter(str(path), "struct<id:bigint>", {"orc.stripe.size": "400"}) as writer:
        for start in range(0, len(ids), 50):  # stripes of about 50 rows
            writer.write_batch({"id": ids[start : start + 50]})
    return data_file(str(path))


def _index(tmp_path: Path, kind: IndexKind, level: IndexLevel, files: list[DataFile]) -> IndexRecord:
    record = IndexRecord(
        name="ix", db_name="db", table_name="t", column="id", column_type="bigint", kind=kind, level=level,
        location=f"file:{tmp_path / 'idx'}", state=IndexState.READY,
    )
    report = build_parts(record, [BuildTarget("", tuple(files))], column_position=0)
    return replace(record, parts=tuple(report.parts))


def _check(record: IndexRecord) -> None:
    def check(part: IndexPart) -> None:
        path = str(local_path(part.location))
        if os.path.getsize(path) != part.size:
            raise OSError(f"index file {part.location} is {os.path.getsize(path)} bytes, recorded {part.size}")
        PartReader(path, kind=record.kind.value, column=record.column, ctype=TYPES["id"]).verify()
    return check


def _health(record: IndexRecord, files: list[Path]) -> object:
    current = {"": [data_file(str(p)) for p in files if p.exists()]}
    return index_health(record, current, _check(record))


def _splits(paths: list[Path]) -> list[Split]:
    # listed now, as a planner would (so a changed file's new size and mtime are what the filter sees)
    return [s for p in paths for s in file_splits(data_file(str(p)), 1 << 30)]


def _equals(value: int) -> Compare:
    return Compare("id", "=", Value(ValueKind.INTEGER, str(value)))


@pytest.fixture(params=list(IndexKind), ids=lambda k: k.value)
def kind(request: pytest.FixtureRequest) -> IndexKind:
    return request.param


def test_changed_and_unknown_data_files_keep_their_splits(tmp_path: Path, kind: IndexKind) -> None:
    a, b = tmp_path / "t" / "a.orc", tmp_path / "t" / "b.orc"
    record = _index(tmp_path, kind, IndexLevel.TABLE, [_write(a, list(range(0, 200))), _write(b, list(range(200, 400)))])
    result = filter_splits(TYPES, _equals(10), _splits([a, b]), [record], cache=PartCache())
    assert result.kept == (0,) and not result.warnings  # b cannot hold 10
    assert _health(record, [a, b]).status == OK

    # touched: same bytes, new mtime
    os.utime(b, ns=(b.stat().st_atime_ns, b.stat().st_mtime_ns + 1_000_000_000))
    result = filter_splits(TYPES, _equals(10), _splits([a, b]), [record], cache=PartCache())
    assert result.kept == (0, 1)
    assert any(w.startswith(f"file:{b} changed since index ix was built") for w in result.warnings), result.warnings
    health = _health(record, [a, b])
    assert health.status == OUT_OF_SYNC and health.changed == 1

    # rewritten under the same name with the old mtime (a copy that preserves times): the size differs
    mtime = a.stat().st_mtime_ns
    _write(a, list(range(0, 300)))
    os.utime(a, ns=(mtime, mtime))
    result = filter_splits(TYPES, _equals(250), _splits([a, b]), [record], cache=PartCache())
    assert result.kept == (0, 1) and any(f"file:{a} changed since" in w for w in result.warnings)

    # a new file with a preserved, older mtime (cp -p, object stores): openLooKeng's hazard 1
    c = tmp_path / "t" / "c.orc"
    _write(c, [10])
    os.utime(c, ns=(1, 1))
    result = filter_splits(TYPES, _equals(10), _splits([a, b, c]), [record], cache=PartCache())
    assert 2 in result.kept
    assert any(w.startswith(f"file:{c} is not covered by index ix") for w in result.warnings)
    health = _health(record, [a, b, c])
    assert health.status == OUT_OF_SYNC and (health.changed, health.added) == (2, 1)

    # deleted: its splits are no longer asked for; SHOW INDEX counts it
    c.unlink()
    b.unlink()
    health = _health(record, [a])
    assert health.status == OUT_OF_SYNC and health.removed == 1
    assert any(f"file:{b}" in p for p in health.problems)


def _damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "truncated":
        path.write_bytes(bytes(data[: len(data) // 2]))
    elif how == "flipped":
        data[12] ^= 0x40  # inside the first block (the stripe table), checksummed
        path.write_bytes(bytes(data))
    elif how == "trailer":
        data[-3] ^= 0xFF
        path.write_bytes(bytes(data))
    elif how == "missing":
        path.unlink()
    elif how == "directory":
        path.unlink()
        path.mkdir()
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("how", ["truncated", "flipped", "trailer", "missing", "directory"])
def test_corrupt_index_files_keep_their_splits(tmp_path: Path, kind: IndexKind, how: str) -> None:
    a, b = tmp_path / "t" / "a.orc", tmp_path / "t" / "b.orc"
    record = _index(tmp_path, kind, IndexLevel.STRIPE, [_write(a, list(range(0, 200))), _write(b, list(range(200, 400)))])
    part_a = next(p for p in record.parts if p.key == f"file:{a}")
    _damage(local_path(part_a.location) or Path(), how)
    splits = _splits([a, b])
    # 10 is in a; the damaged part decided a, so a is kept and b is still dropped by its own part
    result = filter_splits(TYPES, _equals(10), splits, [record], cache=PartCache())
    assert result.kept == (0,)
    result = filter_splits(TYPES, _equals(300), splits, [record], cache=PartCache())
    assert result.kept == (0, 1)
    part_path = str(local_path(part_a.location))
    assert any(part_path in w and "its splits are kept" in w for w in result.warnings), result.warnings
    health = _health(record, [a, b])
    assert health.status == CORRUPT
    assert len(health.problems) == 1 and part_path in health.problems[0]


def test_an_unusable_index_record_keeps_the_splits(tmp_path: Path) -> None:
    """Not only IndexFileCorrupt: a record whose type cannot be read (the audit made one with "nonsense"),
    one whose part lies elsewhere than on a filesystem this process reads; the call still answers."""
    a = tmp_path / "t" / "a.orc"
    record = _index(tmp_path, IndexKind.MINMAX, IndexLevel.TABLE, [_write(a, list(range(100)))])
    splits = _splits([a])
    broken = replace(record, name="bad", column_type="nonsense")
    elsewhere = replace(record, name="far", parts=tuple(replace(p, location="hdfs://nn/x.idx") for p in record.parts))
    result = filter_splits(TYPES, _equals(1000), splits, [broken, elsewhere], cache=PartCache())
    assert result.kept == (0,)
    assert any("index bad records the type 'nonsense'" in w for w in result.warnings)
    assert any("index far" in w and "hdfs://nn/x.idx" in w for w in result.warnings), result.warnings
    # the good index alone still filters
    assert filter_splits(TYPES, _equals(1000), splits, [record, broken], cache=PartCache()).kept == ()


def test_bloom_false_positive_rate_holds_for_few_distinct_values() -> None:
    """Stripes of 1 to 5 distinct values (a `country` column): the measured rate of extra stripes stays
    within the configured one. ORC's filter layout (two 32-bit halves, 64-bit filters) gave about 0.9 % at a
    configured 0.1 %."""
    rng = np.random.default_rng(11)
    for fpp in (0.01, 0.001):
        for distinct in (1, 2, 3, 5):
            filters = 1000
            probes_per_filter = 200
            false = 0
            for _ in range(filters):
                keys = rng.integers(-(1 << 62), 1 << 62, size=distinct, dtype=np.int64)
                bloom = stripe_filter(Domain.INT64, np.unique(keys), fpp)
                assert isinstance(bloom, StripeBloom)
                assert bloom.test_hashes(key_hashes(Domain.INT64, keys)).all()  # never a false negative
                probes = rng.integers(-(1 << 62), 1 << 62, size=probes_per_filter, dtype=np.int64)
                probes = probes[~np.isin(probes, keys)]
                false += int(np.count_nonzero(bloom.test_hashes(key_hashes(Domain.INT64, probes))))
            rate = false / (filters * probes_per_filter)
            # 200,000 probes: the expected count at the configured rate is 200 (fpp 0.001); twice that is
            # more than ten standard deviations away
            assert rate <= 2 * fpp, (fpp, distinct, rate)


def test_bloom_false_positive_rate_holds_for_few_distinct_strings() -> None:
    """The string domain at 1 to 5 distinct values a stripe (country codes), probed with every other code of
    three capital letters or fewer: closely related short keys must not collide more than the configured rate."""
    import itertools
    import string

    codes = sorted({"".join(t) for n in (1, 2, 3) for t in itertools.product(string.ascii_uppercase, repeat=n)})
    keys = np.asarray([c.encode() for c in codes], dtype=object)
    hashes = key_hashes(Domain.BYTES, keys)
    assert len(np.unique(hashes)) == len(codes)
    rng = np.random.default_rng(13)
    for fpp in (0.01, 0.001):
        for distinct in (1, 2, 5):
            false = probes = 0
            for _ in range(60):
                chosen = rng.choice(len(codes), size=distinct, replace=False)
                bloom = stripe_filter(Domain.BYTES, np.unique(keys[chosen]), fpp)
                assert isinstance(bloom, StripeBloom)
                assert bloom.test_hashes(hashes[chosen]).all()  # never a false negative
                others = np.ones(len(codes), dtype=bool)
                others[chosen] = False
                false += int(np.count_nonzero(bloom.test_hashes(hashes[others])))
                probes += int(np.count_nonzero(others))
            # about 1.1 million probes: at fpp 0.001 the expected count is about 1,100; twice that is more than
            # thirty standard deviations away
            assert false / probes <= 2 * fpp, (fpp, distinct, false / probes)


def test_filter_size_meets_the_rate() -> None:
    for n in (1, 2, 5, 100, 10_000):
        for fpp in (0.05, 0.01, 0.001, 1e-5):
            bits, k = filter_size(n, fpp)
            assert bits % 64 == 0 and 1 <= k <= 30
            assert (1 - np.exp(-k * n / bits)) ** k <= fpp


def test_old_bloom_files_are_refused_not_misread(tmp_path: Path) -> None:
    """A BLOOM file with another probe scheme (as written before this one) is unusable: splits kept, named."""
    import json
    import zlib

    from metastore.index.container import _TRAILER, TRAILER_SIZE

    a = tmp_path / "t" / "a.orc"
    record = _index(tmp_path, IndexKind.BLOOM, IndexLevel.TABLE, [_write(a, list(range(100)))])
    path = local_path(record.parts[0].location) or Path()
    data = path.read_bytes()
    offset, length, _, version, r1, r2, magic = _TRAILER.unpack(data[-TRAILER_SIZE:])
    description = json.loads(data[offset : offset + length])
    del description["bloom_probes"]
    text = json.dumps(description, sort_keys=True, separators=(",", ":")).encode()
    path.write_bytes(data[:offset] + text + _TRAILER.pack(offset, len(text), zlib.crc32(text), version, r1, r2, magic))
    record = replace(record, parts=(replace(record.parts[0], size=path.stat().st_size),))
    result = filter_splits(TYPES, _equals(1000), _splits([a]), [record], cache=PartCache())
    assert result.kept == (0,) and any("UPDATE INDEX rebuilds it" in w for w in result.warnings)
