"""Local index builds that scan files in worker processes write the same bytes as builds in one process, and
the build paths' faster steps (grouping postings, bloom probe positions) give what the plain formulas give."""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from index import tables
from metastore.index import bloom, btree, build, coverage
from metastore.index.build import BuildTarget, build_parts
from metastore.index.columns import Domain
from metastore.index.errors import IndexBuildError
from metastore.index.model import DataFile, IndexKind, IndexLevel, IndexRecord, IndexState
from metastore.locations import local_path
from metastore.stats.harvest import runner

COLUMNS = list(tables.COLUMNS)
#: an int64 key column, a sorted one, strings, wide decimals (bytes keys) and doubles
CHECKED = ["i", "seq", "s", "wd", "f"]


def _build(root: Path, table: tables.WrittenTable, column: str, kind: IndexKind, level: IndexLevel) -> list[bytes]:
    record = IndexRecord(
        name=f"ix_{column}_{kind.value}", db_name="db", table_name="t", column=column,
        column_type=tables.COLUMNS[column], kind=kind, level=level, properties={"bloom.fpp": "0.01"},
        location=f"file:{root / uuid.uuid4().hex}", state=IndexState.READY,
    )
    report = build_parts(record, [BuildTarget("", tuple(table.files))], column_position=COLUMNS.index(column))
    return [(local_path(p.location) or Path()).read_bytes() for p in report.parts]


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Pools the builds start (sizes), through the harvest runner's worker_pool."""
    started: list[int] = []
    real = runner.worker_pool

    def counting(size: int):
        started.append(size)
        return real(size)

    monkeypatch.setattr(runner, "worker_pool", counting)
    return started


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=tables.tables)
def test_pooled_build_writes_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pools: list[int],
                                            table) -> None:
    """The pool forced on for a small table (threshold 0, two workers): every part of every kind at STRIPE and
    TABLE level is byte-identical to the one-process build."""
    work = tmp_path / uuid.uuid4().hex
    written = tables.write_table(work, table)
    try:
        for column in CHECKED:
            for kind in IndexKind:
                for level in (IndexLevel.STRIPE, IndexLevel.TABLE):
                    monkeypatch.setattr(build, "PARALLEL_MIN_BYTES", 1 << 62)
                    monkeypatch.setattr(build, "WORKERS", 2)
                    before = len(pools)
                    single = _build(work, written, column, kind, level)
                    assert len(pools) == before  # under the threshold: no pool
                    monkeypatch.setattr(build, "PARALLEL_MIN_BYTES", 0)
                    monkeypatch.setattr(build, "POOLED_KINDS", frozenset(IndexKind))
                    pooled = _build(work, written, column, kind, level)
                    if len(written.files) > 1:
                        assert pools[-1] == 2 and len(pools) == before + 1
                    assert pooled == single, (column, kind, level)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.parametrize("kind", [IndexKind.BLOOM, IndexKind.MINMAX])
def test_parts_written_where_files_are_scanned_are_the_parts_written_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pools: list[int], kind: IndexKind
) -> None:
    """BLOOM and MINMAX parts of one data file (STRIPE level) are written by the pool's workers (the files come
    back with their part staged, FileValues.written) or, under the pool's threshold, by the scan in this process:
    both byte-identical to the parts this process writes from the files' values (WORKER_WRITTEN_KINDS empty),
    and no staged file is left beside them."""
    rng = np.random.default_rng(72)
    empty = dict.fromkeys(tables.COLUMNS)
    table = [[[dict(empty, i=int(v), s=str(v % 97)) for v in rng.integers(-(1 << 31), 1 << 31, size=150)]
              for _ in range(2)] for _ in range(4)]
    written = tables.write_table(tmp_path / "t", table)
    monkeypatch.setattr(build, "WORKERS", 2)
    staged: list[bool] = []
    real = build._pooled

    def pooled(*args, **kwargs):
        for fv in real(*args, **kwargs):
            staged.append(fv.written is not None)
            yield fv

    monkeypatch.setattr(build, "_pooled", pooled)
    for column in ("i", "s"):
        with monkeypatch.context() as m:
            m.setattr(build, "WORKER_WRITTEN_KINDS", frozenset())
            here = _build(tmp_path / "here", written, column, kind, IndexLevel.STRIPE)
        assert len(here) == len(written.files)
        monkeypatch.setattr(build, "PARALLEL_MIN_BYTES", 1 << 62)
        assert _build(tmp_path / "serial", written, column, kind, IndexLevel.STRIPE) == here
        monkeypatch.setattr(build, "PARALLEL_MIN_BYTES", 0)
        staged.clear()
        assert _build(tmp_path / "pooled", written, column, kind, IndexLevel.STRIPE) == here
        assert staged == [True] * len(written.files) and pools[-1] == 2
    for root in ("here", "serial", "pooled"):
        assert all(not p.name.endswith(".tmp") for p in (tmp_path / root).rglob("*"))


@pytest.mark.parametrize("parallel_min_bytes", [0, 1 << 62])
def test_a_failed_build_leaves_no_part_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            parallel_min_bytes: int) -> None:
    """A STRIPE-level BLOOM build whose third file cannot be read fails naming it, and leaves no part file, staged
    or published, of the files scanned before it (in the pool's workers or in this process)."""
    empty = dict.fromkeys(tables.COLUMNS)
    table = [[[dict(empty, i=i + 1000 * f) for i in range(50)] for _ in range(2)] for f in range(5)]
    written = tables.write_table(tmp_path / "t", table)
    bad = local_path(written.files[2].path)
    assert bad is not None
    bad.write_bytes(b"not an orc file at all" * 10)
    files = list(written.files)
    files[2] = DataFile(files[2].path, bad.stat().st_size, bad.stat().st_mtime_ns)
    monkeypatch.setattr(build, "PARALLEL_MIN_BYTES", parallel_min_bytes)
    monkeypatch.setattr(build, "WORKERS", 2)
    with pytest.raises(IndexBuildError, match="part-002.orc"):
        _build(tmp_path / "idx", tables.WrittenTable(files, written.rows, written.stripe_rows), "i",
               IndexKind.BLOOM, IndexLevel.STRIPE)
    assert [p for p in (tmp_path / "idx").rglob("*") if p.is_file()] == []


def test_pooled_build_names_an_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               pools: list[int]) -> None:
    """A file that fails in a worker fails the build with the error naming it, as in one process."""
    table = [[[{c: None for c in tables.COLUMNS if c != "seq"}]] for _ in range(3)]
    written = tables.write_table(tmp_path / "t", table)
    bad = local_path(written.files[1].path)
    assert bad is not None
    bad.write_bytes(b"not an orc file at all" * 10)
    files = list(written.files)
    files[1] = DataFile(files[1].path, bad.stat().st_size, bad.stat().st_mtime_ns)
    monkeypatch.setattr(build, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(build, "WORKERS", 2)
    with pytest.raises(IndexBuildError, match="part-001.orc"):
        _build(tmp_path, tables.WrittenTable(files, written.rows, written.stripe_rows), "i", IndexKind.BLOOM,
               IndexLevel.TABLE)
    assert pools == [2]


def test_every_kind_builds_in_the_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pools: list[int]) -> None:
    """Above the threshold every kind's build starts the pool (POOLED_KINDS); BTREE's workers send merged
    sorted runs of int64 keys (the pooled BTREE's bytes are checked by test_pooled_build_writes_the_same_bytes)."""
    table = [[[{c: None for c in tables.COLUMNS if c != "seq"}]] for _ in range(3)]
    written = tables.write_table(tmp_path / "t", table)
    monkeypatch.setattr(build, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(build, "WORKERS", 2)
    for kind in IndexKind:
        before = len(pools)
        _build(tmp_path, written, "i", kind, IndexLevel.TABLE)
        assert len(pools) - before == 1, kind


@pytest.mark.parametrize("groups", [1, 7, 5000])
def test_int_postings_match_the_lexsort(groups: int) -> None:
    """from_pairs over int64 pairs (unique keys, keys in several stripes, pairs in and out of stripe order)
    gives the postings of a lexsort by (key, id)."""
    rng = np.random.default_rng(groups)
    for n in (0, 1, 2, 1000, 30_000):
        keys = rng.integers(0, groups, n, dtype=np.int64) if groups < 5000 else rng.permutation(n).astype(np.int64)
        ids = rng.integers(0, 300, n).astype(np.uint32)
        pairs = sorted(set(zip(keys.tolist(), ids.tolist(), strict=True)))
        keys = np.asarray([k for k, _ in pairs], dtype=np.int64)
        ids = np.asarray([i for _, i in pairs], dtype=np.uint32)
        for shuffled in (False, True):
            order = rng.permutation(len(keys)) if shuffled else np.argsort(ids, kind="stable")
            got = btree.Postings.from_pairs(Domain.INT64, keys[order], ids[order])
            lex = np.lexsort((ids, keys))
            k, i = keys[lex], ids[lex]
            starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1]))) if len(k) else np.zeros(0, int)
            assert got.keys.tolist() == k[starts].tolist()
            assert got.ids.tolist() == i.tolist()
            assert got.offsets.tolist() == [*starts.tolist(), len(k)]
            assert got.keys.dtype == np.int64 and got.ids.dtype == np.uint32 and got.offsets.dtype == np.int64


@pytest.mark.parametrize("stripes", [2, 9, 300])
def test_int_postings_of_sorted_runs_match_the_lexsort(stripes: int) -> None:
    """Pairs as a scan gives them (stripe after stripe, each stripe's keys sorted), in few runs and in many, unique
    keys and repeated ones, given as grouped or found to be in id order (a stable sort), give the lexsort's
    pairs."""
    rng = np.random.default_rng(stripes)
    for high in (50, 1 << 62):
        keys = rng.integers(-high, high, 20_000, dtype=np.int64)
        ids = rng.integers(0, stripes, len(keys)).astype(np.uint32)
        pairs = sorted(set(zip(ids.tolist(), keys.tolist(), strict=True)))  # by stripe, then key: sorted runs
        ids = np.asarray([i for i, _ in pairs], dtype=np.uint32)
        keys = np.asarray([k for _, k in pairs], dtype=np.int64)
        lex = np.lexsort((ids, keys))
        k, i = keys[lex], ids[lex]
        starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
        for grouped in (False, True):
            got = btree.Postings.from_pairs(Domain.INT64, keys, ids, grouped=grouped)
            assert got.keys.tolist() == k[starts].tolist()
            assert got.ids.tolist() == i.tolist()
            assert got.offsets.tolist() == [*starts.tolist(), len(k)]


def test_probe_positions_are_the_formula() -> None:
    """probe_positions (chunked, in place, remainder by division) equals mix(h + i * golden) % bits."""
    rng = np.random.default_rng(3)
    for n in (0, 1, 5, bloom._POSITION_CHUNK - 1, bloom._POSITION_CHUNK + 1, 3 * bloom._POSITION_CHUNK):
        hashes = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
        for bits, k in ((64, 1), (143_808, 10), ((1 << 40) + 448, bloom.MAX_HASH_FUNCTIONS)):
            with np.errstate(over="ignore"):
                seeds = hashes.view(np.uint64)[:, None] + np.arange(1, k + 1, dtype=np.uint64)[None, :] * bloom._GOLDEN
            expected = (bloom._mix(seeds) % np.uint64(bits)).astype(np.int64)
            got = bloom.probe_positions(hashes, k, bits)
            assert got.shape == (n, k) and np.array_equal(got, expected)


def test_merged_runs_give_the_same_postings_and_stripe_sets() -> None:
    """postings_of over files whose keys come as one merged run each (a pooled BTREE's workers), over the plain
    per-stripe files, and over a mix of both, equals the lexsort of every (key, stripe id) pair; distinct_counts
    (what the value-stripe set is written from) is the same either way, empty stripes included. A file whose
    stripes are in order (a sorted column) is kept as its stripes; one whose stripes touch (a stripe's first
    key equal to the last key of the one before) is merged."""
    from metastore.index.coverage import FileValues, StripeValues
    from metastore.index.model import DataFile

    rng = np.random.default_rng(21)
    files = []
    for f in range(4):
        stripes = []
        for s in range(int(rng.integers(1, 6))):
            n = int(rng.integers(0, 40))
            distinct = np.unique(rng.integers(-50, 50, n, dtype=np.int64))
            stripes.append(StripeValues(10 * s, 10, n, distinct, int(n == 0), len(distinct)))
        files.append(FileValues(DataFile(f"file:/d/{f}.orc", 100, 1), stripes))
    for f, starts in ((4, (60, 70, 80, 90)), (5, (100, 110, 119, 130))):  # in order; touching at 119
        stripes = [StripeValues(10 * s, 10, 10, np.arange(a, a + 10, dtype=np.int64), 0, 10)
                   for s, a in enumerate(starts)]
        stripes.insert(2, StripeValues(99, 1, 3, np.zeros(0, dtype=np.int64), 3, 0))  # all null
        files.append(FileValues(DataFile(f"file:/d/{f}.orc", 100, 1), stripes))
    merged = [f.merge_stripes() for f in files]
    assert merged[4] is files[4] and merged[5].merged is not None
    keys = np.concatenate([s.distinct for f in files for s in f.stripes])
    ids = np.repeat(np.arange(sum(len(f.stripes) for f in files)),
                    [len(s.distinct) for f in files for s in f.stripes]).astype(np.uint32)
    lex = np.lexsort((ids, keys))
    for variant in (files, merged, [merged[0], files[1], merged[2], files[3], merged[4], files[5]]):
        got = btree.postings_of(variant, Domain.INT64)
        pairs = [(int(k), int(i)) for k, a, b in zip(got.keys, got.offsets[:-1], got.offsets[1:], strict=True)
                 for i in got.ids[a:b]]
        assert pairs == list(zip(keys[lex].tolist(), ids[lex].tolist(), strict=True))
    for plain, run in zip(files, merged, strict=True):
        assert run.distinct_counts() == plain.distinct_counts() == [len(s.distinct) for s in plain.stripes]
        if run.merged is None:
            assert run is plain
        else:
            assert all(len(s.distinct) == 0 for s in run.stripes)


def test_packed_values_unpack_to_the_same_stripes() -> None:
    """FileValues.packed (a pooled worker's values for the trip to the parent) and unpacked give back every
    stripe's int64 keys, counts, nulls and spans: gaps of one, two and four bytes, keys whose differences wrap
    modulo 2**64 (INT64_MAX next to INT64_MIN), empty and all-null stripes, one key; values whose gaps need
    eight bytes, merged runs and bytes keys travel as they are."""
    from metastore.index.coverage import FileValues, StripeValues
    from metastore.index.model import DataFile

    big = np.iinfo(np.int64)

    def file_of(*stripes: np.ndarray) -> FileValues:
        return FileValues(DataFile("file:/d/x.orc", 100, 1),
                          [StripeValues(10 * j, 10, len(d) + 2, d, 2, len(d)) for j, d in enumerate(stripes)])

    def arr(*values: int) -> np.ndarray:
        return np.asarray(values, dtype=np.int64)

    ts = 1_600_000_000_000 + np.arange(3000, dtype=np.int64) * 10
    cases = {
        np.uint8: file_of(ts[:1000], arr(), ts[1000:2000], ts[2000:]),
        np.uint16: file_of(arr(-5, 1000), arr(60_000, 60_001)),
        np.uint32: file_of(arr(0, 1 << 31), arr((1 << 32) + 7)),
        "wrap": file_of(arr(big.max - 1, big.max), arr(big.min, big.min + 3)),
        "descending": file_of(arr(10, 11), arr(3, 4)),  # differences wrap to ~2**64: sent as they are
        "wide": file_of(arr(0, 1 << 40)),
        # one difference above 32 bits among small ones (the span alone does not tell): sent as they are
        "one wide": file_of(arr(0, 1), arr(2, 3 + (1 << 32))),
        # every difference the largest four bytes hold: the span at its bound, still packed
        "edge": file_of(arr(-(1 << 33), -(1 << 33) + 0xFFFFFFFF), arr(-(1 << 33) + 2 * 0xFFFFFFFF)),
        "one": file_of(arr(7)),
        "empty": file_of(arr(), arr()),
    }
    for name, values in cases.items():
        packed = values.packed()
        if name in ("descending", "wide", "one wide", "one", "empty"):
            assert packed is values, name
            continue
        assert packed.gaps is not None and all(len(s.distinct) == 0 for s in packed.stripes), name
        if name not in ("wrap", "edge"):
            assert packed.gaps[1].dtype == name, name
        if name == "edge":
            assert packed.gaps[1].dtype == np.uint32, name
        unpacked = packed.unpacked()
        assert unpacked.merged is None and unpacked.gaps is None
        assert unpacked.distinct_counts() == values.distinct_counts() == packed.distinct_counts()
        for a, b in zip(unpacked.stripes, values.stripes, strict=True):
            assert a.distinct.dtype == np.int64 and np.array_equal(a.distinct, b.distinct), name
            assert (a.offset, a.length, a.rows, a.nulls, a.values) == (b.offset, b.length, b.rows, b.nulls, b.values)
    run = file_of(arr(1, 5), arr(2, 3)).merge_stripes()
    assert run.merged is not None and run.packed() is run and run.unpacked() is run
    words = np.empty(2, dtype=object)
    words[:] = [b"a", b"b"]
    strings = FileValues(DataFile("file:/d/s.orc", 100, 1), [StripeValues(0, 10, 2, words, 0, 2)])
    assert strings.packed() is strings


def test_runs_through_shared_memory_give_the_same_bytes_and_leave_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pools: list[int]
) -> None:
    """Pooled BTREE workers leave every merged run in the shared directory (SHARED_MIN_BYTES 0) for the parent
    to map: the parts are the one-process parts byte for byte and no run file stays behind; nor when a file
    fails (the runs already written are removed), and runs of a build whose process is gone are swept by the
    next build."""
    rng = np.random.default_rng(71)
    empty = dict.fromkeys(tables.COLUMNS)
    table = [[[dict(empty, i=int(v)) for v in rng.integers(-(1 << 31), 1 << 31, size=300)] for _ in range(2)]
             for _ in range(4)]
    written = tables.write_table(tmp_path / "t", table)
    shared = tmp_path / "shm"
    shared.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    stale = shared / f"metastore-index-{dead.stdout.strip()}-old"
    stale.write_bytes(b"x" * 100)
    monkeypatch.setattr(build, "WORKERS", 2)
    seen: list[str] = []
    real = coverage.FileValues.unpacked

    def unpacked(self: coverage.FileValues) -> coverage.FileValues:
        if self.shared is not None:
            seen.append(self.shared[0])
        return real(self)

    monkeypatch.setattr(coverage.FileValues, "unpacked", unpacked)
    for column in ("i", "seq"):
        monkeypatch.setattr(build, "PARALLEL_MIN_BYTES", 1 << 62)
        single = _build(tmp_path, written, column, IndexKind.BTREE, IndexLevel.TABLE)
        monkeypatch.setattr(build, "PARALLEL_MIN_BYTES", 0)
        monkeypatch.setattr(build, "SHARED_DIR", str(shared))
        monkeypatch.setattr(build, "SHARED_MIN_BYTES", 0)
        seen.clear()
        assert _build(tmp_path, written, column, IndexKind.BTREE, IndexLevel.TABLE) == single
        assert list(shared.iterdir()) == []  # the stale run swept, every run mapped and removed
        if column == "i":
            assert len(seen) == len(written.files)
    # a build stopped after its first file: the runs finished meanwhile are removed, not mapped
    discarded = []
    real_discard = coverage.FileValues.discard

    def discard(self: coverage.FileValues) -> None:
        discarded.append(self.shared)
        real_discard(self)

    monkeypatch.setattr(coverage.FileValues, "discard", discard)
    from metastore.index.columns import column_type

    scan = build._pooled(written.files, 2, "i", column_type("int", "i"), COLUMNS.index("i"), None, False, None, True)
    first = next(scan)
    assert first.shared is None and any(len(s.distinct) for s in first.stripes)  # mapped: the stripes' keys
    scan.close()
    assert discarded and all(d is not None for d in discarded)
    assert list(shared.iterdir()) == []
    bad = local_path(written.files[2].path)
    assert bad is not None
    bad.write_bytes(b"not an orc file at all" * 10)
    files = list(written.files)
    files[2] = DataFile(files[2].path, bad.stat().st_size, bad.stat().st_mtime_ns)
    with pytest.raises(IndexBuildError, match="part-002.orc"):
        _build(tmp_path, tables.WrittenTable(files, written.rows, written.stripe_rows), "i", IndexKind.BTREE,
               IndexLevel.TABLE)
    assert list(shared.iterdir()) == []


def test_shared_run_round_trip(tmp_path: Path) -> None:
    """to_shared writes a merged run (uint16 or uint32 ids), or the stripes' int64 keys, to a file that unpacked
    maps and removes, the same keys, ids and counts; discard removes a file never unpacked; values without int64
    keys stay as they are; a file of the wrong size is refused."""
    from metastore.index.coverage import FileValues, StripeValues

    rng = np.random.default_rng(72)
    for stripes in (3, 70_000):
        values = [StripeValues(10 * s, 10, 5, np.sort(rng.choice(1 << 40, size=int(rng.integers(0, 6)),
                                                                  replace=False)).astype(np.int64), 0, 5)
                  for s in range(stripes if stripes < 10 else 3)]
        plain = FileValues(DataFile("file:/d/x.orc", 100, 1), values)
        run = plain.merge_stripes()
        if run.merged is None:
            continue
        if stripes > 10:  # stripe numbers past 16 bits
            run = FileValues(run.file, run.stripes, (run.merged[0], run.merged[1].astype(np.uint32)),
                             run.merged_counts)
        sent = run.to_shared(str(tmp_path), "metastore-index-1-")
        assert sent.merged is None and sent.shared is not None and Path(sent.shared[0]).exists()
        back = sent.unpacked()
        assert not Path(sent.shared[0]).exists() and back.merged is not None
        assert np.array_equal(back.merged[0], run.merged[0]) and back.merged[1].dtype == run.merged[1].dtype
        assert np.array_equal(back.merged[1], run.merged[1])
        assert back.distinct_counts() == plain.distinct_counts()
        again = run.to_shared(str(tmp_path), "metastore-index-1-")
        again.discard()
        again.discard()
        assert list(tmp_path.iterdir()) == []
    # stripes' keys (not merged) go one stripe after the other, and come back as the same stripes
    plain = FileValues(DataFile("file:/d/x.orc", 100, 1), [
        StripeValues(0, 10, 1, np.arange(3, dtype=np.int64), 0, 3),
        StripeValues(10, 10, 2, np.zeros(0, dtype=np.int64), 2, 0),
        StripeValues(20, 10, 1, np.asarray([-5, 9], dtype=np.int64), 0, 2)])
    sent = plain.to_shared(str(tmp_path), "p")
    assert sent.shared is not None and all(len(s.distinct) == 0 for s in sent.stripes)
    back = sent.unpacked()
    assert [s.distinct.tolist() for s in back.stripes] == [[0, 1, 2], [], [-5, 9]]
    assert back.distinct_counts() == [3, 0, 2] and back.merged is None
    assert [(s.offset, s.nulls) for s in back.stripes] == [(0, 0), (10, 2), (20, 0)]
    assert list(tmp_path.iterdir()) == []
    strings = FileValues(plain.file, [StripeValues(0, 10, 1, np.asarray([b"a"], dtype=object), 0, 1)])
    assert strings.to_shared(str(tmp_path), "p") is strings
    nothing = FileValues(plain.file, [StripeValues(0, 10, 1, np.zeros(0, dtype=np.int64), 1, 0)])
    assert nothing.to_shared(str(tmp_path), "p") is nothing
    run = FileValues(plain.file, plain.stripes, (np.arange(4, dtype=np.int64), np.zeros(4, np.uint16)), (4,))
    sent = run.to_shared(str(tmp_path), "p")
    assert sent.shared is not None
    with open(sent.shared[0], "ab") as f:
        f.write(b"\0")
    with pytest.raises(ValueError, match="not 4 keys"):
        sent.unpacked()
    assert list(tmp_path.iterdir()) == []
