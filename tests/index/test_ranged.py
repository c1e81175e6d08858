"""B+tree leaves made by key range in forked workers (metastore.index.ranged): the bytes write_tree writes over
the whole part (random, dense and compressible, skewed, null-heavy keys; ranges smaller than a leaf; empty
ranges), write_tree itself where a key has several stripes (duplicate-heavy, a single value, one repeat in a
late range), and no file left behind when a worker dies or the build fails."""

from __future__ import annotations

import multiprocessing
import os
import signal
import uuid
from pathlib import Path

import numpy as np
import pytest

from metastore.index import btree, ranged
from metastore.index.bind import KeyRange, KeySet, NullTest
from metastore.index.columns import Domain, column_type
from metastore.index.container import IndexFileWriter
from metastore.index.coverage import Coverage, DataFile, FileValues, StripeValues
from metastore.index.parts import PartReader, write_part

INT_TYPE = column_type("bigint")


@pytest.fixture
def ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    """Leaves of 100 keys, probe runs of 4 leaves, ranges of about 700 pairs from 2,000 pairs on, two workers."""
    monkeypatch.setattr(btree, "LEAF_TARGET_BYTES", 1200)
    monkeypatch.setattr(btree, "COMPRESS_PROBE_EVERY", 4)
    monkeypatch.setattr(btree, "FANOUT", 8)
    monkeypatch.setattr(ranged, "RANGE_MIN_PAIRS", 2000)
    monkeypatch.setattr(ranged, "RANGE_PAIRS", 700)
    monkeypatch.setattr(ranged, "WORKERS", 2)
    monkeypatch.setattr(ranged, "SAMPLE_PER_RUN", 16)


def _values(name: str, stripes: list[tuple[np.ndarray, int]]) -> FileValues:
    out = []
    for j, (keys, nulls) in enumerate(stripes):
        distinct = np.unique(np.asarray(keys, dtype=np.int64))
        out.append(StripeValues(100 * j + 3, 100, len(keys) + nulls, distinct, nulls, len(keys)))
    return FileValues(DataFile(f"file:/data/{name}.orc", 10_000, 1), out)


def _files(keys: np.ndarray, rng: np.random.Generator, files: int = 6, stripes: int = 5,
           nulls: bool = False) -> list[FileValues]:
    """``keys`` dealt at random to files' stripes (some stripes null-only when ``nulls``), each file's stripes
    merged into one run as a pooled worker sends them (and, for one file, left per stripe)."""
    owner = rng.integers(0, files * stripes, len(keys))
    out = []
    for f in range(files):
        per = []
        for s in range(stripes):
            chosen = keys[owner == f * stripes + s]
            if nulls and s % 2:
                chosen = chosen[: len(chosen) // 20]
            per.append((chosen, int(rng.integers(0, 3)) if nulls else 0))
        values = _values(f"f{f}", per)
        out.append(values if f == 0 else values.merge_stripes())
    return out


def _whole(path: Path, files: list[FileValues]) -> None:
    with IndexFileWriter(path) as writer:
        description = {"kind": "btree", "column": "c", "type": INT_TYPE.hive, "domain": "int64"}
        description.update(Coverage.of(files).write(writer))
        description.update(btree.write_tree(writer, btree.postings_of(files, Domain.INT64)))
        description.update(btree.write_stripe_sets(writer, files))
        writer.finish(description)


def _ranged_entries(path: Path, files: list[FileValues]) -> dict | None:
    """write_ranged's own answer for the files (None: not applied, and nothing written)."""
    with IndexFileWriter(path) as writer:
        before = writer.offset
        entries = ranged.write_ranged(writer, files)
        if entries is None:
            assert writer.offset == before
        writer.abort()
    return entries


def _check(tmp_path: Path, files: list[FileValues], *, applies: bool) -> None:
    assert (_ranged_entries(tmp_path / "probe.idx", files) is not None) == applies
    here = tmp_path / f"{uuid.uuid4().hex}.idx"
    write_part(here, kind="btree", column="c", ctype=INT_TYPE, files=files, fpp=0.01)
    whole = tmp_path / f"{uuid.uuid4().hex}.idx"
    _whole(whole, files)
    assert here.read_bytes() == whole.read_bytes()
    _lookups_are_exact(here, files)
    assert not _shared_left()


def _lookups_are_exact(path: Path, files: list[FileValues]) -> None:
    reader = PartReader(str(path), kind="btree", column="c", ctype=INT_TYPE)
    assert reader._btree is not None
    stripes = []
    for f in files:
        run = f.merged
        for j, s in enumerate(f.stripes):
            keys = set(run[0][run[1] == j].tolist()) if run is not None else set(s.distinct.tolist())
            stripes.append((keys, s.nulls))
    present = sorted(set().union(*(k for k, _ in stripes)))
    rng = np.random.default_rng(len(present))
    leaves: list = [NullTest("c", True), NullTest("c", False)]
    for v in rng.choice(present, min(20, len(present))).tolist():
        leaves.append(KeyRange("c", v, True, v, True))
        leaves.append(KeyRange("c", v + 1, True, v + 1, True))
    leaves.append(KeySet("c", frozenset(rng.choice(present, 5).tolist()), False))
    a, b = sorted(rng.choice(present, 2).tolist())
    leaves.append(KeyRange("c", a, True, a + (b - a) // 50, True))
    for leaf in leaves:
        if isinstance(leaf, NullTest):
            expected = [(n > 0) if leaf.is_null else bool(k) for k, n in stripes]
        elif isinstance(leaf, KeySet):
            expected = [bool(k & leaf.keys) for k, _ in stripes]
        else:
            expected = [any(leaf.low <= v <= leaf.high for v in k) for k, _ in stripes]
        answer = reader.answer(leaf)
        assert answer is not None
        assert answer.tolist() == expected, leaf


def _shared_left() -> list[str]:
    prefix = f"metastore-index-{os.getpid()}-"
    return [n for n in os.listdir("/dev/shm") if n.startswith(prefix)] if os.path.isdir("/dev/shm") else []


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_unique_keys_give_write_trees_bytes(tmp_path: Path, ranges: None, seed: int) -> None:
    rng = np.random.default_rng(seed)
    keys = rng.choice(np.iinfo(np.int64).max, 5000 + 137 * seed, replace=False) * rng.choice([-1, 1], 5000 + 137 * seed)
    _check(tmp_path, _files(np.unique(keys), rng), applies=True)


def test_dense_keys_compress_across_ranges(tmp_path: Path, ranges: None) -> None:
    """Consecutive keys (leaves that compress, so probe decisions cross ranges), a stretch of random ones."""
    rng = np.random.default_rng(7)
    keys = np.concatenate([np.arange(10_000, 16_000), rng.choice(1 << 60, 1500, replace=False) + (1 << 61)])
    _check(tmp_path, _files(np.unique(keys), rng), applies=True)


def test_skewed_and_small_ranges(tmp_path: Path, ranges: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Most keys in a narrow band (ranges of a few keys and empty ones next to big ones), many ranges."""
    monkeypatch.setattr(ranged, "RANGE_PAIRS", 90)
    rng = np.random.default_rng(11)
    keys = np.unique(np.concatenate([rng.integers(0, 4000, 3000), rng.integers(-(1 << 62), 1 << 62, 400)]))
    _check(tmp_path, _files(keys, rng, files=4, stripes=3), applies=True)


def test_null_heavy_stripes(tmp_path: Path, ranges: None) -> None:
    rng = np.random.default_rng(13)
    keys = np.unique(rng.integers(-(1 << 40), 1 << 40, 9000))
    _check(tmp_path, _files(keys, rng, nulls=True), applies=True)


def test_more_than_65536_stripes_use_wide_ids_where_needed(tmp_path: Path, ranges: None) -> None:
    """Stripe ids past 16 bits: leaves holding one are written with 32-bit ids, the others with 16-bit ones."""
    rng = np.random.default_rng(17)
    files = _files(np.unique(rng.integers(0, 1 << 50, 4000)), rng, files=3)
    empty = [StripeValues(j, 1, 0, np.zeros(0, dtype=np.int64), 0, 0) for j in range(70_000)]
    files.insert(1, FileValues(DataFile("file:/data/empty.orc", 1 << 30, 1), empty))
    _check(tmp_path, files, applies=True)


def test_duplicate_heavy_keys_are_left_to_write_tree(tmp_path: Path, ranges: None) -> None:
    rng = np.random.default_rng(19)
    _check(tmp_path, _files(rng.integers(0, 900, 30_000), rng), applies=False)


def test_a_single_value_is_left_to_write_tree(tmp_path: Path, ranges: None) -> None:
    rng = np.random.default_rng(23)
    _check(tmp_path, _files(np.full(3000, -5, dtype=np.int64), rng), applies=False)


def test_one_repeated_key_in_a_late_range(tmp_path: Path, ranges: None) -> None:
    """Unique keys but one, near the top: the ranges written so far are dropped and write_tree writes the part."""
    rng = np.random.default_rng(29)
    keys = np.unique(rng.integers(0, 1 << 50, 8000))
    files = _files(keys, rng)
    files.append(_values("late", [(keys[-3:-2], 0)]))
    _check(tmp_path, files, applies=False)


def test_below_the_minimum_or_on_one_cpu_write_tree_writes(tmp_path: Path, ranges: None,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(31)
    files = _files(np.unique(rng.integers(0, 1 << 50, 1500)), rng)
    _check(tmp_path, files, applies=False)
    monkeypatch.setattr(ranged, "WORKERS", 1)
    _check(tmp_path, _files(np.unique(rng.integers(0, 1 << 50, 5000)), rng), applies=False)
    monkeypatch.undo()
    monkeypatch.setattr(ranged, "RANGE_MIN_PAIRS", 2000)
    # a platform whose processes are spawned, not forked (not this one): they would not see the runs
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    _check(tmp_path, _files(np.unique(rng.integers(0, 1 << 50, 5000)), rng), applies=False)


def test_killed_workers_leave_the_tree_to_this_process(tmp_path: Path, ranges: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The workers killed after the first range arrived: what was written is dropped, write_tree writes the
    same bytes, and the ranges' files in shared memory are gone."""
    rng = np.random.default_rng(37)
    files = _files(np.unique(rng.integers(0, 1 << 50, 9000)), rng)
    add = ranged._Collector.add
    killed = []

    def add_then_kill(self: ranged._Collector, result: ranged.RangeLeaves) -> None:
        add(self, result)
        if not killed:
            for child in multiprocessing.active_children():
                os.kill(child.pid, signal.SIGKILL)
                killed.append(child.pid)

    monkeypatch.setattr(ranged._Collector, "add", add_then_kill)
    _check(tmp_path, files, applies=False)
    assert killed


def test_a_failed_build_leaves_no_files(tmp_path: Path, ranges: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error while the ranges are written: no index file, no temporary file, no range left in /dev/shm."""
    rng = np.random.default_rng(41)
    files = _files(np.unique(rng.integers(0, 1 << 50, 9000)), rng)
    add = ranged._Collector.add

    def add_then_fail(self: ranged._Collector, result: ranged.RangeLeaves) -> None:
        add(self, result)
        if result.index == 1:
            raise RuntimeError("disk gone")

    monkeypatch.setattr(ranged._Collector, "add", add_then_fail)
    target = tmp_path / "out"
    with pytest.raises(RuntimeError, match="disk gone"):
        write_part(target / "part.idx", kind="btree", column="c", ctype=INT_TYPE, files=files, fpp=0.01)
    assert list(target.iterdir()) == []
    assert not _shared_left()


def test_builds_in_threads_keep_their_own_ranges(tmp_path: Path, ranges: None) -> None:
    """Two parts written at once from two threads (a server's builds): each forks its own workers over its own
    keys, and each file is write_tree's bytes for its own files."""
    import threading

    rng = np.random.default_rng(53)
    sets = [_files(np.unique(rng.integers(0, 1 << 50, n)), rng) for n in (6000, 9000, 7000, 8000)]
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            write_part(tmp_path / f"part{i}.idx", kind="btree", column="c", ctype=INT_TYPE, files=sets[i], fpp=0.01)
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(len(sets))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for i, files in enumerate(sets):
        whole = tmp_path / f"whole{i}.idx"
        _whole(whole, files)
        assert (tmp_path / f"part{i}.idx").read_bytes() == whole.read_bytes(), i
    assert not _shared_left()


def test_ranges_whose_pairs_do_not_pack_are_merged(tmp_path: Path, ranges: None,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a range's keys and ids do not fit one 64-bit number (no sorted buckets), its pairs are merged and
    encode_range takes the merged keys and ids: the same bytes."""
    marks = tmp_path / "marks"
    marks.mkdir()

    def unpackable(*args: object) -> None:
        (marks / str(os.getpid())).touch()  # in a forked worker: seen here through the file system
        return None

    monkeypatch.setattr(ranged, "sorted_buckets", unpackable)
    rng = np.random.default_rng(43)
    keys = np.unique(np.concatenate([np.arange(3000, 6000), rng.integers(-(1 << 62), 1 << 62, 4000)]))
    _check(tmp_path, _files(keys, rng), applies=True)
    assert list(marks.iterdir())


def test_workers_write_the_leaves_into_the_index_file(tmp_path: Path, ranges: None,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """No leaf passes through this process: the workers write them into the file being written (its temporary
    name), this process only the inner nodes above them (add_packed, one block each)."""
    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("leaves written by the build's own process")

    inner = []
    add_packed = IndexFileWriter.add_packed

    def counted(self: IndexFileWriter, packed: tuple) -> object:
        inner.append(packed[1])
        return add_packed(self, packed)

    rng = np.random.default_rng(47)
    files = _files(np.unique(rng.integers(-(1 << 62), 1 << 62, 7000)), rng)
    with monkeypatch.context() as patched:
        for name in ("add_file_range", "add_stored", "add_packed_run"):
            patched.setattr(IndexFileWriter, name, refused)
        patched.setattr(IndexFileWriter, "add_packed", counted)
        assert _ranged_entries(tmp_path / "ranged.idx", files) is not None
    leaves = -(-7000 // btree.single_step())
    assert 0 < len(inner) <= -(-leaves // btree.FANOUT) + 3  # the inner nodes only
    _check(tmp_path, files, applies=True)


def test_without_a_tmpfs_workers_write_from_their_own_memory(tmp_path: Path, ranges: None,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """No usable SHARED_DIR: each worker encodes its leaves into its own memory and writes them with pwrite
    instead of sendfile from a tmpfs file; the same bytes (probes compressed between raw spans included)."""
    monkeypatch.setattr(ranged, "SHARED_DIR", str(tmp_path / "missing"))
    rng = np.random.default_rng(59)
    keys = np.concatenate([np.arange(10_000, 15_000), rng.choice(1 << 60, 2000, replace=False) + (1 << 61)])
    _check(tmp_path, _files(np.unique(keys), rng), applies=True)
