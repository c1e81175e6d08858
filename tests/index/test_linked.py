"""B+trees of files whose key ranges do not overlap, written from per-file leaves (metastore.index.linked):
the same keys and stripes as the whole part's tree, exact lookups, the same bytes whether the leaves were cut
where the files were scanned (pooled workers) or in the parent, and the whole part's tree where ranges touch
or overlap."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metastore.index import btree, build, linked, parts
from metastore.index.bind import KeyRange, KeySet, NullTest
from metastore.index.build import BuildTarget, build_parts
from metastore.index.columns import Domain, column_type
from metastore.index.container import IndexFileWriter
from metastore.index.coverage import DataFile, FileValues, StripeValues
from metastore.index.model import IndexKind, IndexLevel, IndexRecord, IndexState
from metastore.index.parts import PartReader, write_part
from metastore.index.scan import data_file
from metastore.locations import local_path
from metastore.orcio import OrcWriter

INT_TYPE = column_type("bigint")


@pytest.fixture
def small_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    """Leaves of five keys, inner nodes of three children, files linked from three pairs on."""
    monkeypatch.setattr(btree, "LEAF_TARGET_BYTES", 64)
    monkeypatch.setattr(btree, "FANOUT", 3)
    monkeypatch.setattr(btree, "COMPRESS_PROBE_EVERY", 4)
    monkeypatch.setattr(linked, "LINK_MIN_KEYS", 3)


def _file_values(name: str, stripes: list[tuple[list[int], int]]) -> FileValues:
    out = []
    for j, (values, nulls) in enumerate(stripes):
        distinct = np.unique(np.asarray(values, dtype=np.int64))
        out.append(StripeValues(100 * j + 3, 100, len(values) + nulls, distinct, nulls, len(values)))
    return FileValues(DataFile(f"file:/data/{name}.orc", 10_000, 1), out)


def _brute(files: list[list[tuple[list[int], int]]], leaf) -> np.ndarray:
    out = []
    for stripes in files:
        for values, nulls in stripes:
            if isinstance(leaf, NullTest):
                out.append(nulls > 0 if leaf.is_null else len(values) > 0)
            elif isinstance(leaf, KeySet):
                out.append(any(v in leaf.keys for v in values))
            else:
                out.append(any(leaf.low <= v <= leaf.high for v in values))
    return np.asarray(out, dtype=bool)


@st.composite
def sorted_files(draw, touching: bool = False):
    """Files of stripes of int64 keys whose ranges follow each other (a key may repeat inside a file, across
    its stripes), some stripes null-only, some files empty, listed in a shuffled order; ``touching``: one file's
    smallest key equal to the largest key of the file before it."""
    count = draw(st.integers(1, 5))
    files: list[list[tuple[list[int], int]]] = []
    low = draw(st.integers(-(1 << 63), (1 << 63) - 5000))
    for _ in range(count):
        if low > (1 << 63) - 1 - 400:
            break  # the next file's keys would pass int64's largest (a file may hold keys up to low + 400)
        if draw(st.integers(0, 5)) == 0:
            files.append([([], draw(st.integers(0, 2))) for _ in range(draw(st.integers(1, 2)))])
            continue
        width = draw(st.integers(3, 400))
        keys = [low + k for k in sorted(draw(st.sets(st.integers(0, width), min_size=3, max_size=60)))]
        stripes = []
        at = 0
        while at < len(keys):
            n = draw(st.integers(1, 25))
            chunk = keys[at : at + n]
            at += n
            repeat = draw(st.sampled_from([[], chunk[-1:]]))  # the next stripe repeats this one's last key
            if repeat and at < len(keys):
                keys.insert(at, repeat[0])
            stripes.append((chunk, draw(st.integers(0, 2))))
            if draw(st.integers(0, 6)) == 0:
                stripes.append(([], 1))
        files.append(stripes)
        low = max(max(s) for s, _ in stripes if s) + (0 if touching else draw(st.integers(1, 1 << 40)))
    order = draw(st.permutations(range(len(files))))
    return [files[i] for i in order]


def _leaves_for(files: list[list[tuple[list[int], int]]], rng: np.random.Generator):
    present = sorted({v for stripes in files for values, _ in stripes for v in values})
    out: list = [NullTest("c", True), NullTest("c", False)]
    if present:
        for v in rng.choice(present, min(len(present), 12)).tolist():
            out.append(KeyRange("c", v, True, v, True))
        a, b = sorted(rng.choice(present, 2).tolist())
        out.append(KeyRange("c", a, True, b, True))
        out.append(KeySet("c", frozenset(rng.choice(present, 3).tolist()), False))
        out.append(KeyRange("c", present[-1] + 1, True, present[-1] + 1, True))
    return out


def _postings(path: Path):
    reader = PartReader(str(path), kind="btree", column="c", ctype=INT_TYPE)
    assert reader._btree is not None
    return reader, reader._btree.postings()


def _whole(path: Path, files: list[FileValues]) -> None:
    """The part written with the whole part's tree (write_tree over all postings), as before linking."""
    with IndexFileWriter(path) as writer:
        description = {"kind": "btree", "column": "c", "type": INT_TYPE.hive, "domain": "int64"}
        from metastore.index.coverage import Coverage

        description.update(Coverage.of(files).write(writer))
        description.update(btree.write_tree(writer, btree.postings_of(files, Domain.INT64)))
        description.update(btree.write_stripe_sets(writer, files))
        writer.finish(description)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=sorted_files(), touching=st.booleans(), data=st.data())
def test_linked_tree_holds_the_whole_trees_postings(tmp_path: Path, small_tree: None, files, touching: bool,
                                                    data) -> None:
    """Per-file leaves linked (in the parent, or made per file as workers make them, with right or wrong
    first stripe ids) hold the keys and stripes of the whole part's tree, answer every lookup exactly, and are
    the same bytes each way; files whose ranges touch get the whole part's tree itself."""
    if touching:
        files = data.draw(sorted_files(touching=True))
    values = [_file_values(f"f{i}", stripes) for i, stripes in enumerate(files)]
    holding = [f for f in files if any(v for v, _ in f)]
    spans = sorted((min(v for s, _ in f for v in s), max(v for s, _ in f for v in s)) for f in holding)
    disjoint = all(a[1] < b[0] for a, b in zip(spans[:-1], spans[1:], strict=True))
    order = linked.link_order(values, 2)
    assert (order is not None) == disjoint
    if order is not None:
        assert [values[i] for i in order] == sorted((values[i] for i, f in enumerate(files) if any(v for v, _ in f)),
                                                    key=lambda fv: min(int(s.distinct[0]) for s in fv.stripes
                                                                       if len(s.distinct)))
    here = tmp_path / f"{uuid.uuid4().hex}.idx"
    write_part(here, kind="btree", column="c", ctype=INT_TYPE, files=values, fpp=0.01)
    whole = tmp_path / f"{uuid.uuid4().hex}.idx"
    _whole(whole, values)
    if not disjoint or len(holding) < 2:  # the whole tree, or one file's leaves that are the whole part's
        assert here.read_bytes() == whole.read_bytes()
    reader, got = _postings(here)
    _, expected = _postings(whole)
    assert got.keys.tolist() == expected.keys.tolist()
    assert got.offsets.tolist() == expected.offsets.tolist() and got.ids.tolist() == expected.ids.tolist()
    for leaf in _leaves_for(files, np.random.default_rng(len(got.keys))):
        answer = reader.answer(leaf)
        assert answer is not None
        assert np.array_equal(answer, _brute(files, leaf)), leaf
    # leaves made per file as a worker makes them (right first stripe ids, or shifted ones the parent redoes)
    bases = np.cumsum([0, *(len(v.stripes) for v in values)]).tolist()
    shift = data.draw(st.sampled_from([0, 0, 1]))
    from_workers = [linked.with_leaves(v.merge_stripes(), bases[i] + shift) for i, v in enumerate(values)]
    for v, w in zip(values, from_workers, strict=True):
        assert w.distinct_counts() == v.distinct_counts()
        back = linked.restored(w)
        assert btree.postings_of([back], Domain.INT64).keys.tolist() == btree.postings_of([v], Domain.INT64
                                                                                         ).keys.tolist()
    there = tmp_path / f"{uuid.uuid4().hex}.idx"
    write_part(there, kind="btree", column="c", ctype=INT_TYPE, files=from_workers, fpp=0.01)
    assert there.read_bytes() == here.read_bytes()


def test_one_file_links_to_the_whole_trees_bytes(tmp_path: Path, small_tree: None) -> None:
    """A part of one file: its leaves are the whole part's leaves, so linking writes write_tree's bytes, from
    the parent's leaves and from a worker's."""
    rng = np.random.default_rng(5)
    keys = np.sort(rng.choice(1 << 40, 700, replace=False)).tolist()
    stripes = [(keys[a : a + 90], a % 3) for a in range(0, 700, 90)]
    values = [_file_values("one", stripes)]
    assert linked.link_order(values, 2) == [0]
    here, whole, there = (tmp_path / f"{n}.idx" for n in ("here", "whole", "there"))
    write_part(here, kind="btree", column="c", ctype=INT_TYPE, files=values, fpp=0.01)
    _whole(whole, values)
    write_part(there, kind="btree", column="c", ctype=INT_TYPE, files=[linked.with_leaves(values[0], 0)], fpp=0.01)
    assert here.read_bytes() == whole.read_bytes() == there.read_bytes()


def test_files_below_the_link_minimum_are_written_whole(tmp_path: Path) -> None:
    """Two or more files holding keys, one of them fewer than LINK_MIN_KEYS pairs: the whole part's tree (no
    short leaves per tiny file); leaves a worker made for them are decoded back first."""
    big = _file_values("big", [(list(range(0, 5000)), 0)])
    tiny = _file_values("tiny", [([6000, 6001], 1)])
    empty = _file_values("empty", [([], 4)])
    values = [tiny, empty, big]
    assert linked.link_order(values, 2) is None
    assert linked.link_order([empty, big], 2) == [1]
    assert linked.link_order(values, 1) is None  # leaves of format 2 only
    here, whole, there = (tmp_path / f"{n}.idx" for n in ("here", "whole", "there"))
    write_part(here, kind="btree", column="c", ctype=INT_TYPE, files=values, fpp=0.01)
    _whole(whole, values)
    made = [linked.with_leaves(v, b) for v, b in zip(values, (0, 1, 2), strict=True)]
    write_part(there, kind="btree", column="c", ctype=INT_TYPE, files=made, fpp=0.01)
    assert here.read_bytes() == whole.read_bytes() == there.read_bytes()


# ---------------------------------------------------------------------------------------------- pooled builds


def _write_sorted(directory: Path, ranges: list[tuple[int, int] | None | str], nulls: bool = True,
                  ) -> list[DataFile]:
    """One ORC file per range (keys low..high step 3, every 37th row null; None: a file of nulls only; "empty":
    a file without rows), stripes of a few thousand rows, named so the listing order is not the key order."""
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for f, span in enumerate(ranges):
        path = directory / f"part-{(7 * f) % len(ranges):03d}-{f}.orc"
        with OrcWriter(str(path), "struct<k:bigint>", {"orc.stripe.size": "20000"}) as writer:
            if span is None:
                writer.write_batch({"k": [None] * 50})
            elif isinstance(span, str):
                pass  # no rows
            else:
                keys = list(range(span[0], span[1] + 1, 3))
                writer.write_batch({"k": [None if nulls and i % 37 == 5 else k for i, k in enumerate(keys)]})
        out.append(data_file(str(path)))
    return sorted(out, key=lambda d: d.path)


def _pooled_and_single(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: list[DataFile],
                       level: IndexLevel = IndexLevel.TABLE) -> tuple[list[bytes], list[list[bool]]]:
    """A BTREE built in one process and in two workers: the pooled parts' bytes (asserted equal to the
    single's) and, per written part, which files came from the workers as leaves."""
    came: list[list[bool]] = []
    real = parts.write_btree

    def spy(writer, values, domain):
        came.append([v.leaves is not None for v in values])
        return real(writer, values, domain)

    monkeypatch.setattr(parts, "write_btree", spy)
    monkeypatch.setattr(build, "WORKERS", 2)
    out = {}
    for mode, threshold in (("single", 1 << 62), ("pooled", 0)):
        monkeypatch.setattr(build, "PARALLEL_MIN_BYTES", threshold)
        record = IndexRecord(name="ix", db_name="db", table_name="t", column="k", column_type="bigint",
                             kind=IndexKind.BTREE, level=level, location=f"file:{tmp_path / uuid.uuid4().hex}",
                             state=IndexState.READY)
        report = build_parts(record, [BuildTarget("", tuple(files))], column_position=0)
        out[mode] = [(local_path(p.location) or Path()).read_bytes() for p in report.parts]
        if mode == "single":
            came.clear()
    assert out["pooled"] == out["single"]
    return out["pooled"], came


def test_pooled_sorted_files_send_leaves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files of a sorted column (out of listing order, nulls, a file of nulls only): the footers plan every
    file, the workers send finished leaves, the part is their leaves linked, byte for byte what one process
    writes, with exact answers."""
    ranges: list[tuple[int, int] | None | str] = [(30_000, 59_999), None, (0, 29_999), "empty", (60_000, 99_000)]
    files = _write_sorted(tmp_path / "t", ranges)
    plan = linked.plan_file_leaves([files], "k", INT_TYPE, 0)
    assert sorted(plan) == sorted(f.identity for f in files)
    assert sorted(plan.values())[0][0] == 0 and sum(n for _, n in plan.values()) > len(files)
    (part,), came = _pooled_and_single(tmp_path, monkeypatch, files)
    assert came == [[True] * len(files)]
    path = tmp_path / "check.idx"
    path.write_bytes(part)
    reader = PartReader(str(path), kind="btree", column="k", ctype=INT_TYPE)
    stripe_keys = []
    for f in files:
        scanned = build.scan_file(f, "k", INT_TYPE, 0)
        stripe_keys.extend(set(s.distinct.tolist()) for s in scanned.stripes)
    for probe in (0, 3, 29_997, 30_000, 30_001, 59_999, 60_000, 99_000, 99_001, -3, 45_003):
        expected = [probe in keys for keys in stripe_keys]
        assert reader.answer(KeyRange("k", probe, True, probe, True)).tolist() == expected, probe
    low, high = 29_900, 30_100  # across two files, few keys (a wide range is left undecided)
    expected = [any(low <= k <= high for k in keys) for keys in stripe_keys]
    assert reader.answer(KeyRange("k", low, True, high, True)).tolist() == expected


def test_pooled_files_touching_at_a_boundary_are_merged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One file's largest key equal to the next file's smallest (a shared boundary key): the footers see the
    overlap, no leaves are made in the workers, and the part is the whole part's tree (same bytes as one
    process; the shared key's stripes in both files)."""
    files = _write_sorted(tmp_path / "t", [(0, 30_000), (30_000, 60_000)], nulls=False)
    assert linked.plan_file_leaves([files], "k", INT_TYPE, 0) == {}
    (part,), came = _pooled_and_single(tmp_path, monkeypatch, files)
    assert came == [[False, False]]
    path = tmp_path / "check.idx"
    path.write_bytes(part)
    reader = PartReader(str(path), kind="btree", column="k", ctype=INT_TYPE)
    answer = reader.answer(KeyRange("k", 30_000, True, 30_000, True))
    first = len(build.scan_file(files[0], "k", INT_TYPE, 0).stripes)
    assert answer is not None and answer.sum() == 2 and answer[first - 1] and answer[first]


def test_pooled_stripe_level_and_single_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """STRIPE level (a part per file, overlapping files): every file's leaves come from its worker and each
    part is one process's bytes; a lone file of a TABLE part too."""
    files = _write_sorted(tmp_path / "t", [(0, 30_000), (15_000, 45_000)])
    _, came = _pooled_and_single(tmp_path, monkeypatch, files, IndexLevel.STRIPE)
    assert came == [[True], [True]]
    lone = _write_sorted(tmp_path / "lone", [(5, 40_000)])
    _, came = _pooled_and_single(tmp_path, monkeypatch, lone)
    assert came == [[False]]  # one file: scanned in this process (no pool for one file)


def test_footers_of_remote_or_repeated_files_are_not_read(tmp_path: Path) -> None:
    """Parts with a file on an object store (a ranged read per footer, one after the other) or a file listed
    twice are not planned, and their footers are not opened."""
    local = _write_sorted(tmp_path / "t", [(0, 30_000), (40_000, 70_000)])
    remote = DataFile("s3://bucket/t/part-9.orc", 1000, 1)
    opened: list[str] = []

    def opener(file: DataFile, options: object) -> object:
        opened.append(file.path)
        raise AssertionError("no footer should be read")

    assert linked.plan_file_leaves([[local[0], remote]], "k", INT_TYPE, 0, opener=opener) == {}
    assert linked.plan_file_leaves([[local[0]], [local[0], local[1]]], "k", INT_TYPE, 0, opener=opener) == {}
    assert opened == []
    plan = linked.plan_file_leaves([[local[0]], [local[1]]], "k", INT_TYPE, 0)
    assert {f.identity for f in local} == set(plan) and all(base == 0 for base, _ in plan.values())
