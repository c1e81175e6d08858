"""BTREE, BLOOM and MINMAX index files against brute force over random stripes of keys.

BTREE answers exactly (a stripe iff it holds a matching key); BLOOM and MINMAX never miss a stripe that holds
one. Small leaves and fanout force trees of several levels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from index import tables
from metastore.index import bloom, btree
from metastore.index.bind import KeyRange, KeySet, NullTest
from metastore.index.columns import Domain, column_type
from metastore.index.coverage import DataFile, FileValues, StripeValues
from metastore.index.parts import PartReader, write_part
from metastore.index.scan import scan_column

INT_TYPE = column_type("bigint")
STRING_TYPE = column_type("string")


@pytest.fixture(autouse=True)
def small_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(btree, "LEAF_TARGET_BYTES", 64)
    monkeypatch.setattr(btree, "FANOUT", 3)


def _files(stripes: list[tuple[list, int]], string: bool) -> list[FileValues]:
    files = []
    for f in range(0, len(stripes), 3):
        group = []
        for i, (values, nulls) in enumerate(stripes[f : f + 3]):
            distinct = np.unique(np.asarray(values, dtype=np.int64)) if not string else _objects(sorted(set(values)))
            group.append(StripeValues(100 * i + 3, 100, len(values) + nulls, distinct, nulls, len(values)))
        files.append(FileValues(DataFile(f"file:/data/{f}.orc", 10_000, 1), group))
    return files


def _objects(items: list) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def _brute(stripes: list[tuple[list, int]], leaf) -> np.ndarray:
    out = []
    for values, nulls in stripes:
        if isinstance(leaf, NullTest):
            out.append(nulls > 0 if leaf.is_null else len(values) > 0)
        elif isinstance(leaf, KeySet):
            out.append(any((v in leaf.keys) != leaf.negated for v in values))
        else:
            def inside(v) -> bool:
                if leaf.low is not None and (v < leaf.low or (v == leaf.low and not leaf.low_inclusive)):
                    return False
                return not (leaf.high is not None and (v > leaf.high or (v == leaf.high and not leaf.high_inclusive)))
            out.append(any(inside(v) for v in values))
    return np.asarray(out, dtype=bool)


int_values = st.integers(-50, 50)
byte_values = st.binary(min_size=0, max_size=4)
stripe_lists = st.lists(st.tuples(st.lists(int_values, max_size=30), st.integers(0, 3)), min_size=1, max_size=10)
byte_stripe_lists = st.lists(st.tuples(st.lists(byte_values, max_size=20), st.integers(0, 3)), min_size=1, max_size=8)


def _leaves(draw_value):
    ranges = st.builds(
        lambda lo, hi, li, hi_inc: KeyRange("c", lo, li, hi, hi_inc),
        st.none() | draw_value, st.none() | draw_value, st.booleans(), st.booleans(),
    )
    points = draw_value.map(lambda v: KeyRange("c", v, True, v, True))
    sets = st.builds(lambda vs, neg: KeySet("c", tuple(sorted(set(vs))), neg), st.lists(draw_value, min_size=1, max_size=5),
                     st.booleans())
    nulls = st.builds(lambda b: NullTest("c", b), st.booleans())
    return ranges | points | sets | nulls


def _check(tmp: Path, stripes, leaf, string: bool) -> None:
    ctype = STRING_TYPE if string else INT_TYPE
    files = _files(stripes, string)
    expected = _brute(stripes, leaf)
    for kind in ("btree", "bloom", "minmax"):
        path = tmp / f"{kind}.idx"
        write_part(path, kind=kind, column="c", ctype=ctype, files=files, fpp=0.01)
        answer = PartReader(str(path), kind=kind, column="c", ctype=ctype).answer(leaf)
        if answer is None:
            assert kind != "minmax"
            if kind == "btree":  # the tree leaves only NOT IN undecided
                assert isinstance(leaf, KeySet) and leaf.negated
            continue
        assert len(answer) == len(stripes)
        assert not np.any(expected & ~answer), f"{kind} dropped a matching stripe for {leaf}"
        if kind == "bloom":  # the vectorised answer equals each stripe's filter tested on its own
            reader = PartReader(str(path), kind=kind, column="c", ctype=ctype)
            keys = (leaf.low,) if isinstance(leaf, KeyRange) else leaf.keys
            hashes = bloom.key_hashes(ctype.domain, list(keys))
            one_by_one = [f is not None and bool(f.test_hashes(hashes).any()) for f in reader._bloom.filters]
            assert answer.tolist() == one_by_one
        if kind == "btree":
            assert np.array_equal(answer, expected), f"btree is not exact for {leaf}"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stripes=stripe_lists, leaf=_leaves(int_values))
def test_int_keys(tmp_path: Path, stripes, leaf) -> None:
    _check(tmp_path, stripes, leaf, string=False)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stripes=byte_stripe_lists, leaf=_leaves(byte_values))
def test_bytes_keys(tmp_path: Path, stripes, leaf) -> None:
    _check(tmp_path, stripes, leaf, string=True)


def test_build_is_deterministic(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    stripes = [(rng.integers(0, 1000, 200).tolist(), int(rng.integers(0, 3))) for _ in range(9)]
    files = _files(stripes, False)
    for kind in ("btree", "bloom", "minmax"):
        a, b = tmp_path / f"a-{kind}.idx", tmp_path / f"b-{kind}.idx"
        write_part(a, kind=kind, column="c", ctype=INT_TYPE, files=files, fpp=0.01)
        write_part(b, kind=kind, column="c", ctype=INT_TYPE, files=files, fpp=0.01)
        assert a.read_bytes() == b.read_bytes()


def test_point_lookup_reads_only_the_path_to_one_leaf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(btree, "LEAF_TARGET_BYTES", 32 * 1024)
    monkeypatch.setattr(btree, "FANOUT", 16)
    # keys far apart (gaps up to 2**40), so the delta-encoded leaves still make a file of megabytes
    keys = np.cumsum(np.random.default_rng(4).integers(1, 1 << 40, 200_000, dtype=np.int64))
    stripes = [StripeValues(i * 10, 10, 1000, keys[i::50], 0, 4000) for i in range(50)]
    files = [FileValues(DataFile("file:/d/a.orc", 1000, 1), stripes)]
    path = tmp_path / "t.idx"
    size = write_part(path, kind="btree", column="c", ctype=INT_TYPE, files=files, fpp=0.01)
    reader = PartReader(str(path), kind="btree", column="c", ctype=INT_TYPE)
    opened = reader.bytes_read
    wanted = int(keys[123_457])
    answer = reader.answer(KeyRange("c", wanted, True, wanted, True))
    assert answer is not None and np.flatnonzero(answer).tolist() == [123_457 % 50]
    assert reader._btree is not None and reader._btree.height >= 2
    # a few blocks of a file of megabytes
    assert reader.bytes_read - opened < 64 * 1024 < size


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=tables.tables)
def test_minmax_bounds_scan_writes_the_same_file(tmp_path: Path, table) -> None:
    """A MINMAX build scans only each stripe's bounds; its file is byte-identical to one built from every
    distinct key, for every column type (nulls, all-null stripes, chars, wide decimals, NaN)."""
    import shutil
    import uuid

    work = tmp_path / uuid.uuid4().hex
    written = tables.write_table(work, table)
    try:
        for name, type_text in tables.COLUMNS.items():
            ctype = column_type(type_text, name)
            full = [scan_column(f, name, ctype, None) for f in written.files]
            bounds = [scan_column(f, name, ctype, None, bounds_only=True) for f in written.files]
            for fa, fb in zip(full, bounds, strict=True):
                for sa, sb in zip(fa.stripes, fb.stripes, strict=True):
                    assert (sa.nulls, sa.values, sa.rows) == (sb.nulls, sb.values, sb.rows)
                    expect = [] if len(sa.distinct) == 0 else sorted({sa.distinct[0], sa.distinct[-1]})
                    assert [v.item() if hasattr(v, "item") else v for v in sb.distinct] == [
                        v.item() if hasattr(v, "item") else v for v in expect
                    ], name
            a, b = work / f"{name}-a.idx", work / f"{name}-b.idx"
            write_part(a, kind="minmax", column=name, ctype=ctype, files=full, fpp=0.01)
            write_part(b, kind="minmax", column=name, ctype=ctype, files=bounds, fpp=0.01)
            assert a.read_bytes() == b.read_bytes(), name
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_bloom_bits_are_the_positions_of_the_hashes() -> None:
    """add_hashes sets exactly bit p & 63 of word p >> 6 for every probe position p (and keeps earlier bits)."""
    rng = np.random.default_rng(11)
    for n in (1, 7, 300, 20000):
        hashes = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
        built = bloom.StripeBloom.for_entries(n, 0.001)
        built.add_hashes(hashes[: n // 2])
        built.add_hashes(hashes[n // 2 :])
        expected = np.zeros_like(built.words)
        for p in built._probe_major(hashes).ravel().tolist():
            expected[p >> 6] |= np.uint64(1) << np.uint64(p & 63)
        assert np.array_equal(built.words, expected)


def test_cold_point_lookup_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening an index file reads its tail once (trailer, description and the root written last): a cold point
    lookup then reads the stripe table and one block per level below the root, nothing else."""
    import os

    from metastore.index import container

    monkeypatch.setattr(btree, "LEAF_TARGET_BYTES", 2048)
    monkeypatch.setattr(btree, "FANOUT", 16)
    keys = np.arange(200_000, dtype=np.int64) * 3
    stripes = [StripeValues(i * 10, 10, 1000, keys[i::50], 0, 4000) for i in range(50)]
    path = tmp_path / "t.idx"
    size = write_part(path, kind="btree", column="c", ctype=INT_TYPE,
                      files=[FileValues(DataFile("file:/d/a.orc", 1000, 1), stripes)], fpp=0.01)
    reads: list[tuple[int, int]] = []
    real = os.pread

    def pread(fd: int, length: int, offset: int) -> bytes:
        reads.append((offset, length))
        return real(fd, length, offset)

    monkeypatch.setattr(container.os, "pread", pread)
    reader = PartReader(str(path), kind="btree", column="c", ctype=INT_TYPE)
    assert reads[0] == (size - container.TAIL_BYTES, container.TAIL_BYTES)
    answer = reader.answer(KeyRange("c", 3 * 123_457, True, 3 * 123_457, True))
    assert answer is not None and np.flatnonzero(answer).tolist() == [123_457 % 50]
    height = reader._btree.height if reader._btree is not None else 0
    assert height >= 3
    # the tail, the stripe table, then at most the inner nodes below the root and the leaf
    assert 3 <= len(reads) <= 2 + height - 1, reads
    assert all(offset < size - container.TAIL_BYTES for offset, _ in reads[1:])
    # without the tail: trailer, description, stripe table, and every level from the root down
    reads.clear()
    monkeypatch.setattr(container, "TAIL_BYTES", 0)
    reader = PartReader(str(path), kind="btree", column="c", ctype=INT_TYPE)
    again = reader.answer(KeyRange("c", 3 * 123_457, True, 3 * 123_457, True))
    assert again is not None and np.array_equal(again, answer)
    assert len(reads) == 3 + height, reads


@pytest.mark.parametrize("string", [False, True])
def test_version_1_btree_files_are_still_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, string: bool) -> None:
    """A BTREE file of format version 1 (plain i64 keys, u32 stripe ids) gives the same postings and answers as
    the version 2 file of the same stripes (delta-encoded keys, u16 ids), which is smaller for int keys; keys at
    both ends of int64 make a gap of 2**64 - 1 (width 8)."""
    from metastore.index import container

    rng = np.random.default_rng(9)
    low, high = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    stripes: list[tuple[list, int]] = []
    for i in range(40):
        values = rng.integers(low, high, 30, dtype=np.int64).tolist() + [i * 7, low * (i == 3), high * (i == 5)]
        if string:
            values = [str(v).encode() for v in values]
        stripes.append((values, i % 4))
    files = _files(stripes, string)
    ctype = STRING_TYPE if string else INT_TYPE
    new, old = tmp_path / "v2.idx", tmp_path / "v1.idx"
    write_part(new, kind="btree", column="c", ctype=ctype, files=files, fpp=0.01)
    monkeypatch.setattr(container, "FORMAT_VERSION", 1)
    write_part(old, kind="btree", column="c", ctype=ctype, files=files, fpp=0.01)
    monkeypatch.undo()
    monkeypatch.setattr(btree, "LEAF_TARGET_BYTES", 64)
    monkeypatch.setattr(btree, "FANOUT", 3)
    readers = [PartReader(str(p), kind="btree", column="c", ctype=ctype) for p in (new, old)]
    assert [r.file.version for r in readers] == [2, 1]
    if not string:
        assert new.stat().st_size < old.stat().st_size
    postings = [r._btree.postings() for r in readers if r._btree is not None]
    assert postings[0].keys.tolist() == postings[1].keys.tolist()
    assert postings[0].offsets.tolist() == postings[1].offsets.tolist()
    assert postings[0].ids.tolist() == postings[1].ids.tolist()
    every = sorted({v for values, _ in stripes for v in values})
    for k in every[::7] + [every[0], every[-1]]:
        for leaf in (KeySet("c", (k,), False), KeyRange("c", k, True, None, False)):
            a, b = (r.answer(leaf) for r in readers)
            assert a is not None and b is not None and np.array_equal(a, b)
            assert np.array_equal(a, _brute(stripes, leaf))


def test_leaves_packed_in_threads_give_the_same_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """write_tree compresses leaves in threads from PACK_THREADS_FROM leaves on: the file is byte for byte the
    one-thread file, for unique keys (offsets not made) and repeated keys alike, and answers point lookups."""
    rng = np.random.default_rng(31)
    for repeat in (False, True):
        stripes = []
        for _ in range(12):
            keys = rng.integers(-(1 << 50), 1 << 50, size=400, dtype=np.int64)
            if repeat:
                keys = keys % 300
            stripes.append((np.unique(keys).tolist(), 0))
        files = _files(stripes, False)
        paths = []
        for threads_from in (1 << 30, 1):
            monkeypatch.setattr(btree, "PACK_THREADS_FROM", threads_from)
            path = tmp_path / f"{repeat}-{threads_from}.idx"
            write_part(path, kind="btree", column="c", ctype=INT_TYPE, files=files, fpp=0.01)
            paths.append(path)
        assert paths[0].read_bytes() == paths[1].read_bytes()
        reader = PartReader(str(paths[1]), kind="btree", column="c", ctype=INT_TYPE)
        for s, (values, _) in enumerate(stripes[:4]):
            for v in values[:20]:
                answer = reader.answer(KeyRange("c", v, True, v, True))
                assert answer is not None and answer[s]
                assert answer.tolist() == [v in set(vals) for vals, _ in stripes]


def test_int_leaves_cut_at_once_give_the_same_leaves() -> None:
    """_IntLeaves (gaps, widths and ids computed once for the tree) gives every leaf _encode_leaf's per-leaf
    bytes: unique and repeated keys, one-key leaves (also last), full-range keys whose gaps wrap."""
    rng = np.random.default_rng(41)
    cases = [
        np.unique(rng.integers(-(1 << 63), (1 << 63) - 1, size=3000, dtype=np.int64)),
        np.arange(0, 5000, dtype=np.int64) * 10 + (1 << 40),
        np.asarray([-(1 << 63), -5, 0, 7, (1 << 63) - 1], dtype=np.int64),
    ]
    for keys in cases:
        for repeat in (False, True):
            n = len(keys)
            counts = rng.integers(1, 4, size=n) if repeat else np.ones(n, dtype=np.int64)
            offsets = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(counts, out=offsets[1:])
            ids = np.concatenate([np.sort(rng.choice(900, size=c, replace=False)) for c in counts]).astype(np.uint32)
            postings = btree.Postings(Domain.INT64, keys, offsets, ids)
            for step in (1, 2, 7, 400):
                bounds = [*range(0, n, step), n]
                if n > 3:
                    bounds = sorted({*bounds, n - 1})  # a one-key last leaf
                pre = btree._IntLeaves.of(postings, bounds, True)
                for a, b in zip(bounds[:-1], bounds[1:], strict=True):
                    assert btree._encode_leaf(postings, a, b, 2, True, pre) == btree._encode_leaf(postings, a, b, 2, True)


def _leaf_refs(path: Path) -> list:
    from metastore.index.container import IndexFileReader

    reader = IndexFileReader.open_path(str(path))
    tree = btree.BTreeReader(reader, Domain.INT64)
    leaves = []

    def walk(ref, height: int) -> None:
        if height == 1:
            leaves.append(ref)
            return
        for child, _ in btree._decode_inner(Domain.INT64, reader.block(ref), str(path)).children:
            walk(child, height - 1)

    assert tree.root is not None
    walk(tree.root, tree.height)
    return leaves


@pytest.mark.parametrize("threads_from", [1 << 30, 1])
def test_leaves_compressed_only_where_it_pays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threads_from: int
) -> None:
    """Random 64-bit gaps (zstd saves ~11 %) are stored raw after their probe leaf, sorted keys (one-byte gaps)
    compressed; the file answers as the one written the previous way (every leaf compressed where smaller,
    COMPRESS_MIN_SAVING 0), which is still read, is smaller, and equals brute force."""
    monkeypatch.setattr(btree, "LEAF_TARGET_BYTES", 2048)
    monkeypatch.setattr(btree, "FANOUT", 8)
    monkeypatch.setattr(btree, "COMPRESS_PROBE_EVERY", 4)
    monkeypatch.setattr(btree, "PACK_THREADS_FROM", threads_from)
    rng = np.random.default_rng(53)
    randoms = np.unique(rng.integers(-(1 << 62), -(1 << 40), size=12_000, dtype=np.int64))
    sorted_run = np.arange(0, 12_000, dtype=np.int64)
    keys = np.concatenate([randoms, sorted_run])
    owner = rng.integers(0, 12, size=len(keys))
    stripes = [(keys[owner == s].tolist(), 0) for s in range(12)]
    files = _files(stripes, False)
    paths = {}
    for saving in (0.0, btree.COMPRESS_MIN_SAVING):
        monkeypatch.setattr(btree, "COMPRESS_MIN_SAVING", saving)
        paths[saving] = tmp_path / f"{saving}-{threads_from}.idx"
        write_part(paths[saving], kind="btree", column="c", ctype=INT_TYPE, files=files, fpp=0.01)
    old, new = paths[0.0], paths[btree.COMPRESS_MIN_SAVING]
    old_refs, new_refs = _leaf_refs(old), _leaf_refs(new)
    assert len(old_refs) == len(new_refs) > 16
    assert all(ref.codec == 1 for ref in old_refs)
    # leaves are in key order: the random keys' leaves first; each run of 4 starts with its (compressed) probe
    codecs = [ref.codec for ref in new_refs]
    n_random = sum(1 for ref in new_refs if ref.length > ref.raw_length * 0.5)
    assert n_random > 8
    raw_random = [c for i, c in enumerate(codecs[:n_random]) if i % 4 and (i // 4 + 1) * 4 <= n_random]
    assert raw_random and all(c == 0 for c in raw_random)
    assert all(c == 1 for c in codecs[(n_random // 4 + 1) * 4 :])
    assert 0 < old.stat().st_size < new.stat().st_size
    readers = [PartReader(str(p), kind="btree", column="c", ctype=INT_TYPE) for p in (old, new)]
    probes = [KeyRange("c", int(v), True, int(v), True) for v in rng.choice(keys, 60)]
    probes += [KeyRange("c", int(randoms[100]), True, int(randoms[3000]), False), KeyRange("c", 10, True, 900, True)]
    probes.append(KeySet("c", frozenset(int(v) for v in rng.choice(keys, 7)), False))
    for leaf in probes:
        a, b = (r.answer(leaf) for r in readers)
        assert a is not None and b is not None
        assert np.array_equal(a, b) and np.array_equal(a, _brute(stripes, leaf))


def test_blocks_written_in_runs_and_synced_on_the_way_give_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """add_packed_run (one writev per run of blocks, resumed after partial writes) between single blocks, and
    data syncs started in a thread every SYNC_EVERY bytes, write the bytes and references of add_packed one
    block at a time; the file reads back block by block."""
    import os

    from metastore.index import container

    rng = np.random.default_rng(61)
    blocks = [rng.integers(0, 4 if i % 3 else 256, size=int(rng.integers(0, 5000)), dtype=np.uint8).tobytes()
              for i in range(300)]
    packed = [container.pack_block(b, compress=bool(i % 2)) for i, b in enumerate(blocks)]
    between = b"between runs " * 9

    def write(path: Path, runs: bool) -> tuple[list[container.BlockRef], list[bytes]]:
        sizes = np.random.default_rng(62)
        refs: list[container.BlockRef] = []
        raw: list[bytes] = []
        with container.IndexFileWriter(path) as writer:
            at = 0
            while at < len(packed):
                n = int(sizes.integers(1, 40))
                if runs:
                    refs.extend(writer.add_packed_run(packed[at : at + n]))
                else:
                    refs.extend(writer.add_packed(p) for p in packed[at : at + n])
                raw.extend(blocks[at : at + n])
                refs.append(writer.add_block(between))
                raw.append(between)
                at += n
            writer.finish({"refs": [r.to_list() for r in refs]})
        return refs, raw

    one_by_one, raw = write(tmp_path / "one.idx", False)
    writev = os.writev
    calls = []

    def short_writev(fd: int, buffers: list) -> int:  # a partial write after at most 3,000 bytes
        calls.append(len(buffers))
        total = 0
        for b in buffers:
            part = bytes(b)[: 3000 - total]
            total += writev(fd, [part])
            if total >= 3000 or len(part) < len(b):
                break
        return total

    synced = []

    def datasync(fd: int) -> None:
        synced.append(fd)
        container.os.fsync(fd)

    monkeypatch.setattr(container, "SYNC_EVERY", 20_000)
    monkeypatch.setattr(container, "_datasync", datasync)
    monkeypatch.setattr(container.os, "writev", short_writev)
    in_runs, _ = write(tmp_path / "runs.idx", True)
    assert calls and max(calls) > 1
    assert synced  # at least one sync ran in the thread (one at a time)
    assert in_runs == one_by_one
    assert (tmp_path / "runs.idx").read_bytes() == (tmp_path / "one.idx").read_bytes()
    reader = container.IndexFileReader.open_path(str(tmp_path / "runs.idx"))
    assert [bytes(reader.block(r)) for r in in_runs] == raw


@pytest.mark.parametrize("reused", [True, False], ids=["zstandard", "cramjam"])
def test_blocks_compressed_through_a_reused_context_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reused: bool
) -> None:
    """pack_block's zstd frames (a reused zstandard context per thread, or cramjam without zstandard) decompress
    to the block with cramjam (what readers use); a context reused over blocks of other sizes and contents,
    and contexts of several threads at once, give each block the frame a fresh context gives it."""
    from concurrent.futures import ThreadPoolExecutor

    from metastore.index import container

    if reused:
        assert container.HAVE_ZSTANDARD, "zstandard is a declared dependency"
    else:
        monkeypatch.setattr(container, "HAVE_ZSTANDARD", False)
    rng = np.random.default_rng(71)
    blocks = [rng.integers(0, 3 if i % 2 else 256, size=int(rng.integers(65, 40000)), dtype=np.uint8).tobytes()
              for i in range(60)]
    fresh = [container.pack_block(b) for b in blocks]
    if reused:  # each block's frame as a context made for it alone gives it
        import zstandard

        for b, p in zip(blocks, fresh, strict=True):
            if p[3] == 1:
                assert p[0] == zstandard.ZstdCompressor(level=3).compress(b)
    with ThreadPoolExecutor(3) as pool:
        threaded = list(pool.map(container.pack_block, blocks * 3))
    assert threaded == fresh * 3
    again = [container.pack_block(b) for b in blocks]
    assert again == fresh
    assert {p[3] for p in fresh} == {0, 1}  # random bytes stay raw, the narrow ones compress
    with container.IndexFileWriter(tmp_path / "f.idx") as writer:
        refs = [writer.add_packed(p) for p in fresh]
        size = writer.finish({})
    reader = container.IndexFileReader(str(tmp_path / "f.idx"), size)
    assert [reader.block(r) for r in refs] == blocks


def test_coverage_finds_each_file_by_path_and_the_first_of_a_repeated_one() -> None:
    """Coverage.find (asked for every data file of a split filter call) answers from a map made once: every
    covered path gives its own position, a repeated path its first, anything else None; stripes_of agrees."""
    from metastore.index.coverage import Coverage, StripeSpan

    paths = [f"file:/t/part-{i:05d}.orc" for i in range(300)] + ["file:/t/part-00007.orc"]
    files = tuple(DataFile(p, 1000 + i, 5) for i, p in enumerate(paths))
    spans = tuple(StripeSpan(i, 3, 10, 1) for i in range(len(files)))
    coverage = Coverage(files, tuple(range(len(files))), spans)
    assert [coverage.find(p) for p in paths[:300]] == list(range(300))
    assert coverage.find("file:/t/part-00007.orc") == 7
    assert coverage.find("file:/t/elsewhere.orc") is None and coverage.find("/t/part-00001.orc") is None
    assert coverage.stripes_of(coverage.find(paths[42]) or 0) == range(42, 43)
