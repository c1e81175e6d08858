"""The compiled kernels (metastore/index/_kernels.c) against their numpy references: the same bloom bits for
every probe scheme and filter size, the same index file bytes for a whole build, and the numpy fallback (with
one warning) when the extension cannot be imported.

`pip install -e .` builds the extension; a checkout used without it skips the comparisons here, except under CI,
where an unbuilt extension fails."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from compiled_ext import built_or_skip

from metastore.index import bloom, btree, kernels, pairsort
from metastore.index.columns import Domain
from metastore.index.coverage import DataFile, FileValues, StripeValues

REPO = Path(__file__).resolve().parents[2]

_compiled = kernels._native
needs_kernels = built_or_skip(_compiled, "metastore.index._kernels", kernels._missing)


def _same(a: bloom.StripeBloom | None, b: bloom.StripeBloom | None) -> bool:
    assert a is not None and b is not None
    return a.num_hash_functions == b.num_hash_functions and a.probes == b.probes and np.array_equal(a.words, b.words)


@needs_kernels
@pytest.mark.parametrize("probes", [bloom.BLOCKED_PROBES, bloom.DOUBLE_PROBES])
@pytest.mark.parametrize("fpp", [0.001, 0.01, 0.3, 1e-5])
def test_values_filter_kernel_is_the_numpy_filter(fpp: float, probes: str) -> None:
    """values_filter from raw int64 values: all distinct, with a few repeats (kept at the larger size) and with
    many (counted exactly), on both sides of EXACT_BELOW; blocked (one round, and two or more at 1e-5) and by
    double hashing (on both sides of DOUBLE_MIN_BITS: SplitMix64 positions below it, double hashing from it
    on): the kernel's filter is the numpy filter, bit for bit."""
    rng = np.random.default_rng(31)
    for n in (1, 2, 7, 500, 1_200, bloom.EXACT_BELOW - 1, bloom.EXACT_BELOW, 20_000, 71_000):
        values = rng.integers(-(1 << 63), (1 << 63) - 1, size=n, dtype=np.int64)
        few = np.concatenate([values, values[: n // 200]])  # under DISTINCT_SLACK repeated
        many = np.concatenate([values, values[: n // 3 + 1], values[:1]])
        for keys in (values, rng.permutation(few), rng.permutation(many), np.sort(values)):
            native = bloom.values_filter(keys, fpp, probes=probes)
            assert native is not None and native.probes == probes
            assert _same(native, bloom.values_filter(keys, fpp, native=False, probes=probes)), (n, fpp)
    if probes == bloom.BLOCKED_PROBES and fpp == 1e-5:
        assert bloom.StripeBloom.for_entries(71_000, fpp).num_hash_functions >= 16


@needs_kernels
def test_stripe_filter_kernel_is_the_numpy_filter() -> None:
    """stripe_filter of sorted distinct keys: int64 keys (hashed in the kernel) and bytes keys (hashed by numpy,
    bits set in the kernel) give the numpy filter's bits."""
    rng = np.random.default_rng(32)
    for n in (1, 3, 1_000, 2_000, 40_000):
        ints = np.unique(rng.integers(-(1 << 40), 1 << 40, size=n, dtype=np.int64))
        assert _same(bloom.stripe_filter(Domain.INT64, ints, 0.001),
                     bloom.stripe_filter(Domain.INT64, ints, 0.001, native=False))
        items = sorted({bytes(rng.integers(0, 256, size=int(rng.integers(0, 24)), dtype=np.uint8)) for _ in range(n)})
        keys = np.empty(len(items), dtype=object)
        keys[:] = items
        assert _same(bloom.stripe_filter(Domain.BYTES, keys, 0.01),
                     bloom.stripe_filter(Domain.BYTES, keys, 0.01, native=False))


@needs_kernels
def test_legacy_scheme_kernel_is_the_numpy_filter() -> None:
    """A filter of the older splitmix64 scheme (SplitMix64 positions at every size) gets the same bits from the
    kernel as from numpy, added to in two steps."""
    rng = np.random.default_rng(33)
    for n, k in ((5, 22), (3_000, 10), (60_000, 7)):
        bits, _ = bloom.filter_size(n, 0.01)
        a = bloom.StripeBloom(np.zeros(bits // 64, dtype=np.uint64), k, bloom.LEGACY_PROBES)
        b = bloom.StripeBloom(np.zeros(bits // 64, dtype=np.uint64), k, bloom.LEGACY_PROBES)
        hashes = bloom.key_hashes(Domain.INT64, rng.integers(-(1 << 62), 1 << 62, size=n, dtype=np.int64))
        for part in (hashes[: n // 2], hashes[n // 2 :]):
            a.add_hashes(part)
            b.add_hashes(part, native=False)
        assert _same(a, b)


@needs_kernels
def test_kernel_positions_at_and_past_two_to_the_32_bits() -> None:
    """Filters of exactly 2**32 bits (the scaled position is z >> 32) and past it (z % bits): the bits set are
    those of double_positions, and the kernel's count is the filter's set bits. The words are calloc'd zeros:
    only the touched pages become memory."""
    assert _compiled is not None
    rng = np.random.default_rng(34)
    hashes = rng.integers(-(1 << 63), (1 << 63) - 1, size=2_000, dtype=np.int64)
    for bits, k in ((1 << 32, 9), ((1 << 32) + 64 * 3, 5)):
        words = np.zeros(bits // 64, dtype=np.uint64)
        count = _compiled.bloom_add(words, hashes, k, True, True)
        positions = np.unique(bloom.double_positions(hashes, k, bits))
        assert count == len(positions)
        touched = np.unique(positions >> 6)
        expected = np.zeros(len(touched), dtype=np.uint64)
        np.bitwise_or.at(expected, np.searchsorted(touched, positions >> 6),
                         np.left_shift(np.uint64(1), (positions & 63).astype(np.uint64)))
        assert np.array_equal(words[touched], expected)


@needs_kernels
@pytest.mark.parametrize("setter", ["plain", "avx2", "avx512"])
def test_blocked_kernel_adds_to_a_filter_and_counts_its_bits(setter: str) -> None:
    """bloom_add_blocked on a filter with bits set already, by hashes (``hashed``) and by keys: the bits of
    blocked_positions added, the count the filter's set bits, for 1 to 8 rounds and up to 2**20 blocks, with
    each of its bit setters this processor has (the vector ones chosen at import where it has them)."""
    assert _compiled is not None
    if not _compiled.use_bloom_setter(setter):
        pytest.skip(f"no {setter} on this processor")
    try:
        _check_blocked_kernel()
    finally:
        assert any(_compiled.use_bloom_setter(best) for best in ("avx512", "avx2", "plain"))


def _check_blocked_kernel() -> None:
    assert _compiled is not None
    rng = np.random.default_rng(37)
    for blocks, rounds in ((1, 1), (3, 2), (1 << 20, 3), (77, 8)):
        words = rng.integers(0, 1 << 62, size=8 * blocks, dtype=np.int64).view(np.uint64) & np.uint64(0x1111111111111111)
        keys = rng.integers(-(1 << 63), (1 << 63) - 1, size=3_000, dtype=np.int64)
        expected = words.copy()
        positions = bloom.blocked_positions(bloom.key_hashes(Domain.INT64, keys), rounds, blocks).ravel()
        np.bitwise_or.at(expected, positions >> 6, np.left_shift(np.uint64(1), (positions & 63).astype(np.uint64)))
        by_keys, by_hashes = words.copy(), words.copy()
        count = _compiled.bloom_add_blocked(by_keys, keys, rounds, False)
        assert _compiled.bloom_add_blocked(by_hashes, bloom.key_hashes(Domain.INT64, keys), rounds, True) == count
        assert np.array_equal(by_keys, expected) and np.array_equal(by_hashes, expected)
        assert count == int(np.unpackbits(expected.view(np.uint8)).sum())


@needs_kernels
def test_kernel_refuses_bad_arguments() -> None:
    assert _compiled is not None
    words = np.zeros(4, dtype=np.uint64)
    keys = np.arange(10, dtype=np.int64)
    assert _compiled.bloom_add(words, keys, 3, False, False) == int(np.unpackbits(words.view(np.uint8)).sum())
    with pytest.raises(ValueError, match="items of 8 bytes"):
        _compiled.bloom_add(words, keys.astype(np.int32), 3, False, False)
    with pytest.raises(ValueError, match="probes"):
        _compiled.bloom_add(words, keys, 0, False, False)
    with pytest.raises(ValueError, match="no bits"):
        _compiled.bloom_add(np.zeros(0, dtype=np.uint64), keys, 3, False, False)
    readonly = np.zeros(4, dtype=np.uint64)
    readonly.flags.writeable = False
    with pytest.raises((BufferError, TypeError, ValueError)):
        _compiled.bloom_add(readonly, keys, 3, False, False)
    with pytest.raises((BufferError, TypeError, ValueError)):
        _compiled.bloom_add(np.zeros((4, 2), dtype=np.uint64)[:, 0], keys, 3, False, False)  # not contiguous
    blocks = np.zeros(16, dtype=np.uint64)
    assert _compiled.bloom_add_blocked(blocks, keys, 1, False) == int(np.unpackbits(blocks.view(np.uint8)).sum()) > 0
    for bad_rounds in (0, 9):
        with pytest.raises(ValueError, match="rounds"):
            _compiled.bloom_add_blocked(blocks, keys, bad_rounds, False)
    with pytest.raises(ValueError, match="blocks of 8 words"):
        _compiled.bloom_add_blocked(np.zeros(12, dtype=np.uint64), keys, 1, False)
    with pytest.raises(ValueError, match="blocks of 8 words"):
        _compiled.bloom_add_blocked(np.zeros(0, dtype=np.uint64), keys, 1, False)
    with pytest.raises(ValueError, match="items of 8 bytes"):
        _compiled.bloom_add_blocked(blocks, keys.astype(np.int32), 1, False)
    readonly_blocks = np.zeros(16, dtype=np.uint64)
    readonly_blocks.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        _compiled.bloom_add_blocked(readonly_blocks, keys, 1, False)


def _stable_merge(runs: list[np.ndarray], ids: list[np.ndarray | None], bases: list[int]):
    keys = np.concatenate([*runs, np.zeros(0, dtype=np.int64)])
    parts = [np.full(len(r), b, dtype=np.uint32) if i is None else i.astype(np.uint32) + np.uint32(b)
             for r, i, b in zip(runs, ids, bases, strict=True)]
    order = np.argsort(keys, kind="stable")
    return keys[order], np.concatenate([*parts, np.zeros(0, dtype=np.uint32)])[order]


@needs_kernels
def test_merge_runs_is_the_stable_sort() -> None:
    """k-way merges of sorted runs (empty runs, repeated keys within and across runs, INT64 extremes, runs already
    in order, ids as uint16, uint32 or none) give the stable sort of their concatenation and its ids."""
    assert _compiled is not None
    rng = np.random.default_rng(36)
    extremes = np.asarray([np.iinfo(np.int64).min, np.iinfo(np.int64).max], dtype=np.int64)
    for trial in range(400):
        low, high = [(-6, 6), (-(1 << 63), (1 << 63) - 1), (0, 1000)][trial % 3]
        runs, ids, bases = [], [], []
        for r in range(int(rng.integers(0, 14))):
            run = np.sort(np.concatenate([rng.integers(low, high, size=int(rng.integers(0, 40)), dtype=np.int64),
                                          extremes[: int(trial % 5 == 0) * 2]]))
            if trial % 11 == 0:  # runs in order: each after the previous one
                run = np.sort(rng.integers(0, 50, size=len(run), dtype=np.int64)) + 100 * r
            runs.append(run)
            kind = (trial + r) % 3
            local = np.sort(rng.integers(0, 9, size=len(run)))
            ids.append(None if kind == 0 else local.astype(np.uint16 if kind == 1 else np.uint32))
            bases.append(10 * r)
        _check_merge(runs, ids, bases, trial)
    with pytest.raises(ValueError, match="hold every key"):
        _compiled.merge_runs([np.arange(3)], [None], [0], np.empty(2, dtype=np.int64), np.empty(2, dtype=np.uint32))
    with pytest.raises(ValueError, match="uint16 or uint32"):
        _compiled.merge_runs([np.arange(3)], [np.arange(3, dtype=np.uint8)], [0], np.empty(3, dtype=np.int64),
                             np.empty(3, dtype=np.uint32))
    with pytest.raises(ValueError, match="differ in length"):
        _compiled.merge_runs([np.arange(3)], [], [0], np.empty(3, dtype=np.int64), np.empty(3, dtype=np.uint32))


def _check_merge(runs: list[np.ndarray], ids: list[np.ndarray | None], bases: list[int], trial: int) -> int:
    """The compiled merge of ``runs`` into uint32 and into uint16 ids equals the stable sort's keys and ids, and
    counts the repeated keys; returns that count."""
    assert _compiled is not None
    keys, expected = _stable_merge(runs, ids, bases)
    repeats = int(np.count_nonzero(keys[1:] == keys[:-1]))
    for out_type in (np.uint32, np.uint16):
        out_keys = np.empty(len(keys), dtype=np.int64)
        out_ids = np.empty(len(keys), dtype=out_type)
        assert _compiled.merge_runs(runs, ids, bases, out_keys, out_ids) == repeats, trial
        assert np.array_equal(out_keys, keys) and np.array_equal(out_ids, expected.astype(out_type)), trial
    _check_sort_pairs(runs, ids, bases, keys, expected, repeats, trial)
    return repeats


def _check_sort_pairs(runs: list[np.ndarray], ids: list[np.ndarray | None], bases: list[int], keys: np.ndarray,
                      expected: np.ndarray, repeats: int, trial: object) -> None:
    """pairsort.sort_pairs (pack_runs, numpy's sort, unpack_runs) gives merge_runs's keys, ids and repeats where the
    runs' ids ascend along their equal keys and with the runs (what btree.int_runs gives); with too few id bits
    for the packing to fit, merge_runs itself."""
    assert _compiled is not None
    widest = [b + int(i.max()) if i is not None and len(i) else b for b, i in zip(bases, ids, strict=True)]
    if any(b < a for a, b in zip(widest[:-1], bases[1:], strict=True)):
        return  # a run's ids pass the next run's base: not int_runs's runs
    if any(i is not None and bool(np.any((r[1:] == r[:-1]) & (i[1:] < i[:-1]))) for r, i in zip(runs, ids,
                                                                                               strict=True)):
        return  # ids not ascending along equal keys
    id_bits = max(1, max(widest, default=0).bit_length())
    for buckets in (1, 64, 4096):
        out_keys = np.full(len(keys), 7, dtype=np.int64)
        out_ids = np.full(len(keys), 7, dtype=np.uint32)
        saved = pairsort.BUCKET_PAIRS
        pairsort.BUCKET_PAIRS = buckets
        try:
            assert pairsort.sort_pairs(_compiled, runs, ids, bases, id_bits, out_keys, out_ids) == repeats, trial
        finally:
            pairsort.BUCKET_PAIRS = saved
        assert np.array_equal(out_keys, keys) and np.array_equal(out_ids, expected), (trial, buckets)
        _check_encode_range(runs, ids, bases, id_bits, keys, expected, repeats, (trial, buckets))


def _check_encode_range(runs: list[np.ndarray], ids: list[np.ndarray | None], bases: list[int], id_bits: int,
                        keys: np.ndarray, expected: np.ndarray, repeats: int, trial: object) -> None:
    """encode_range over pack_runs's buckets (each sorted) gives the pairs in order: as head and tail, and, where
    the keys are distinct, as leaves of encode_int_leaf's bytes with zlib's CRC-32 (a short last leaf, wide ids);
    the same from merged keys and ids (no buckets)."""
    import zlib

    assert _compiled is not None
    n = len(keys)
    bits = min(20, max(0, (n // pairsort.BUCKET_PAIRS).bit_length()))
    packed = np.empty(n, dtype=np.uint64)
    starts = np.empty((1 << bits) + 1, dtype=np.int64)
    got = _compiled.pack_runs(runs, ids, bases, packed, starts, bits, id_bits)
    if got is None:
        return
    edges = starts.tolist()
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        packed[a:b].sort()
    step = 97
    lead = min(n, 5)
    leaves = (n - lead) // step if repeats == 0 else 0
    last_size = step - 13 if leaves and n - lead - leaves * step < 13 else step
    inside = (leaves - 1) * step + last_size if leaves else 0
    sources = [(packed, starts, got[0], got[1], id_bits, None, None), (None, None, 0, 0, 0, keys, expected)]
    for source in sources:
        out = np.zeros(leaves * 14 + inside * 12, dtype=np.uint8)
        table = np.zeros((leaves, 5), dtype=np.int64)
        head = (np.zeros(lead, dtype=np.int64), np.zeros(lead, dtype=np.uint32))
        tail = (np.zeros(n - lead - inside, dtype=np.int64), np.zeros(n - lead - inside, dtype=np.uint32))
        found = _compiled.encode_range(*source, lead, leaves, step, last_size, False, out, table, *head, *tail)
        assert found == repeats, trial
        assert np.array_equal(head[0], keys[:lead]) and np.array_equal(head[1], expected[:lead]), trial
        assert np.array_equal(tail[0], keys[lead + inside :]), trial
        assert np.array_equal(tail[1], expected[lead + inside :]), trial
        for leaf in range(leaves):
            a = lead + leaf * step
            b = a + (last_size if leaf == leaves - 1 else step)
            small = int(expected[a:b].max()) <= 0xFFFF
            data = _compiled.encode_int_leaf(keys, expected, None, a, b, a, b, small)
            at, length, crc, first, count = table[leaf].tolist()
            assert out[at : at + length].tobytes() == data, (trial, leaf)
            assert (crc, first, count) == (zlib.crc32(data), int(keys[a]), b - a), (trial, leaf)


@needs_kernels
def test_unpacking_kernels_refuse_bad_bucket_starts() -> None:
    """unpack_runs and encode_range read pack_runs's buckets through one check of their starts: starts that do not
    span the packed numbers or that decrease are refused with a ValueError naming the kernel, before any read."""
    assert _compiled is not None
    packed = np.arange(4, dtype=np.uint64)
    keys, ids = np.zeros(4, dtype=np.int64), np.zeros(4, dtype=np.uint32)
    none_k, none_i = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint32)
    for starts, why in [([0, 3], "span"), ([1, 4], "span"), ([0, 3, 2, 4], "decrease")]:
        bad = np.asarray(starts, dtype=np.int64)
        with pytest.raises(ValueError, match=f"unpack_runs: starts must.*{why}"):
            _compiled.unpack_runs(packed, bad, 0, 60, 4, keys, ids)
        with pytest.raises(ValueError, match=f"encode_range: starts must.*{why}"):
            _compiled.encode_range(packed, bad, 0, 60, 4, None, None, 0, 0, 1, 1, False,
                                   np.zeros(0, dtype=np.uint8), np.zeros((0, 5), dtype=np.int64),
                                   none_k, none_i, keys, ids)
    # the same numbers with good starts: two buckets of two pairs each, keys (the bucket's top bits) repeated
    good = np.asarray([0, 2, 4], dtype=np.int64)
    assert _compiled.unpack_runs(packed, good, 0, 60, 4, keys, ids) == 2
    low = np.iinfo(np.int64).min
    assert keys.tolist() == [low, low, low + (1 << 60), low + (1 << 60)] and ids.tolist() == [0, 1, 2, 3]


@needs_kernels
def test_pack_runs_sorts_many_keys_and_refuses_what_does_not_fit() -> None:
    """sort_pairs on thousands of keys: random 64-bit keys (some buckets dense, some empty), a narrow band with a
    few far keys (skewed buckets), many repeats, one value only, INT64's extremes, hundreds of runs; pack_runs
    says None when the keys' span and the ids take more than 64 bits, and refuses an id past id_bits."""
    assert _compiled is not None
    rng = np.random.default_rng(47)
    extremes = np.asarray([np.iinfo(np.int64).min, np.iinfo(np.int64).max], dtype=np.int64)
    for trial, shape in enumerate(["random", "band", "repeats", "one", "many", "extremes"]):
        runs, ids, bases = [], [], []
        base = 0
        for r in range(300 if shape == "many" else 7):
            n = int(rng.integers(0, 300 if shape == "many" else 6000))
            run = {"random": lambda n: rng.integers(-(1 << 63), (1 << 63) - 1, size=n, dtype=np.int64),
                   "band": lambda n: np.concatenate([rng.integers(1000, 1300, size=n, dtype=np.int64),
                                                     rng.integers(1 << 50, 1 << 51, size=n // 50, dtype=np.int64)]),
                   "repeats": lambda n: rng.integers(-40, 40, size=n, dtype=np.int64),
                   "one": lambda n: np.full(n, -7, dtype=np.int64),
                   "many": lambda n: rng.integers(-(1 << 40), 1 << 40, size=n, dtype=np.int64),
                   "extremes": lambda n: np.concatenate([rng.integers(-(1 << 63), (1 << 63) - 1, size=n,
                                                                      dtype=np.int64), extremes]),
                   }[shape](n)
            run = np.sort(run)
            stripes = int(rng.integers(1, 9))
            local = rng.integers(0, stripes, size=len(run))
            local = local[np.lexsort((local, run))]  # ascending along equal keys, as a file's merged run
            runs.append(run)
            ids.append(local.astype(np.uint16) if r % 2 else None)
            bases.append(base)
            base += stripes
        _check_merge(runs, ids, bases, (trial, shape))
    packed = np.empty(2, dtype=np.uint64)
    starts = np.empty(2, dtype=np.int64)
    wide = [np.asarray([-(1 << 62), 1 << 62], dtype=np.int64)]
    assert _compiled.pack_runs(wide, [None], [1], packed, starts, 0, 2) is None  # 64 key bits and 2 id bits
    assert _compiled.pack_runs(wide, [None], [1], packed, np.empty(3, dtype=np.int64), 1, 1) is not None
    with pytest.raises(ValueError, match="id_bits"):
        _compiled.pack_runs([np.arange(2)], [None], [4], packed, starts, 0, 2)


@needs_kernels
@pytest.mark.parametrize("joint", ["apart", "touching", "overlapping"])
def test_merge_runs_of_runs_in_order(joint: str) -> None:
    """Runs one after the other (a sorted column's files) are copied, not merged: longer than the copy's pieces
    of 8,192 keys, with repeated keys inside a run, the next run starting above the last key (apart), at it
    (touching: the equal keys in run order, and counted as repeats) or one key below it (overlapping: the
    loser tree's path); ids as uint16, uint32 or none, written as uint16 or uint32: the stable sort's keys and
    ids, and the repeats counted."""
    assert _compiled is not None
    rng = np.random.default_rng(39)
    for trial in range(12):
        runs, ids, bases = [], [], []
        start = -(1 << 40)
        for r in range(int(rng.integers(2, 6))):
            n = int(rng.integers(1, 30_000))
            steps = rng.integers(0 if trial % 2 else 1, 4, size=n)
            steps[0] = 1  # the first key one above start
            run = start + np.cumsum(steps).astype(np.int64)
            runs.append(run)
            kind = (trial + r) % 3
            local = np.sort(rng.integers(0, 7, size=n))
            ids.append(None if kind == 0 else local.astype(np.uint16 if kind == 1 else np.uint32))
            bases.append(7 * r)
            start = int(run[-1]) + {"apart": 1, "touching": 0, "overlapping": -1}[joint] - 1
        repeats = _check_merge(runs, ids, bases, trial)
        if joint != "overlapping":  # runs apart have repeats inside only; touching ones at every joint
            assert (repeats > 0) == (trial % 2 == 1 or joint == "touching"), trial


def _files(rng: np.random.Generator, count: int, stripes: int, keys: int, low: int, high: int) -> list[FileValues]:
    out = []
    for f in range(count):
        values = []
        for s in range(stripes):
            n = int(rng.integers(0, keys + 1))
            distinct = np.unique(rng.integers(low, high, size=n, dtype=np.int64))
            values.append(StripeValues(10 * s, 10, n, distinct, int(n == 0), len(distinct)))
        out.append(FileValues(DataFile(f"file:/d/{f}.orc", 100, 1), values))
    return out


def _same_postings(a: btree.Postings, b: btree.Postings) -> bool:
    return (a.single == b.single and np.array_equal(a.keys, b.keys) and np.array_equal(a.ids, b.ids)
            and np.array_equal(a.offsets, b.offsets))


@needs_kernels
@pytest.mark.parametrize(("split_from", "sort_from"), [(btree.MERGE_SPLIT_FROM, 200), (50, 200), (50, 2),
                                                       (btree.MERGE_SPLIT_FROM, 1)])
def test_int_postings_and_merged_stripes_kernel_are_numpy(monkeypatch: pytest.MonkeyPatch, split_from: int,
                                                          sort_from: int) -> None:
    """A worker's merged run of a file (merge_stripes) and the parent's postings over plain stripes, merged runs
    or a mix (the merge cut into key ranges merged in threads when split_from is small, the runs sorted by
    pairsort.sort_pairs instead of merged from sort_from runs on) are numpy's."""
    monkeypatch.setattr(btree, "MERGE_SPLIT_FROM", split_from)
    monkeypatch.setattr(btree, "SORT_FROM_RUNS", sort_from)
    rng = np.random.default_rng(37)
    for trial in range(40):
        low, high = [(-30, 30), (-(1 << 63), (1 << 63) - 1), (0, 3)][trial % 3]
        files = _files(rng, int(rng.integers(1, 7)), int(rng.integers(1, 5)), 60, low, high)
        merged = [f.merge_stripes() for f in files]
        for plain, run in zip(files, merged, strict=True):
            reference = plain.merge_stripes(native=False)
            if run.merged is None:  # stripes in order already: kept as they are, by both
                assert run is plain and reference is plain
                continue
            assert reference.merged is not None
            assert np.array_equal(run.merged[0], reference.merged[0])
            assert run.merged[1].dtype == reference.merged[1].dtype
            assert np.array_equal(run.merged[1], reference.merged[1])
            assert run.merged_counts == reference.merged_counts
            assert list(run.merged_counts or ()) == np.bincount(run.merged[1], minlength=len(run.stripes)).tolist()
            assert run.distinct_counts() == plain.distinct_counts()
        for variant in (files, merged, [m if i % 2 else f for i, (f, m) in enumerate(zip(files, merged, strict=True))]):
            assert _same_postings(btree._int_postings(variant), btree._int_postings(variant, native=False)), trial


def _tree_bytes(tmp_path: Path, postings: btree.Postings, native: bool) -> bytes:
    from metastore.index.container import IndexFileWriter

    path = tmp_path / f"tree-{native}.idx"
    with IndexFileWriter(path) as writer:
        writer.finish(btree.write_tree(writer, postings, native=native))
    return path.read_bytes()


@needs_kernels
def test_int_leaves_kernel_are_numpy_leaves(tmp_path: Path) -> None:
    """Whole trees (one leaf to hundreds, leaves packed in threads from PACK_THREADS_FROM) of int64 keys: unique
    keys with one stripe each, keys in several stripes (offsets), stripe ids past 16 bits (u32 ids), gaps from
    one byte to eight: the kernel's leaves give the numpy tree's bytes."""
    rng = np.random.default_rng(38)
    cases = [
        (np.arange(5, dtype=np.int64), np.arange(5, dtype=np.uint32)),
        (np.asarray([7], dtype=np.int64), np.asarray([3], dtype=np.uint32)),
        (np.asarray([7, 1 << 40], dtype=np.int64), np.asarray([3, 1], dtype=np.uint32)),
        (np.asarray([7, 7, 9], dtype=np.int64), np.asarray([3, 4, 1], dtype=np.uint32)),
        (np.asarray([np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max], dtype=np.int64), np.zeros(3, np.uint32)),
    ]
    for n, high_id in ((200_000, 700), (30_000, 70_000), (3_000, 40)):
        cases.append((np.unique(rng.integers(-(1 << 63), (1 << 63) - 1, size=n, dtype=np.int64)), None))
        cases.append((rng.integers(0, n // 3, size=n, dtype=np.int64), high_id))
    for keys, ids in cases:
        if ids is None or isinstance(ids, int):
            ids = rng.integers(0, ids or 700, size=len(keys)).astype(np.uint32)
        pairs = np.unique(np.stack([keys, ids.astype(np.int64)]), axis=1)
        postings = btree.Postings.from_pairs(Domain.INT64, pairs[0], pairs[1].astype(np.uint32))
        assert _tree_bytes(tmp_path, postings, True) == _tree_bytes(tmp_path, postings, False)
    assert _compiled is not None
    with pytest.raises(ValueError, match="outside"):
        _compiled.encode_int_leaf(np.arange(3), np.zeros(3, dtype=np.uint32), None, 0, 4, 0, 3, True)
    with pytest.raises(ValueError, match="need offsets"):
        _compiled.encode_int_leaf(np.arange(3), np.zeros(5, dtype=np.uint32), None, 0, 3, 0, 5, True)


_BUILD = textwrap.dedent("""
    import sys, uuid, warnings
    from pathlib import Path
    if sys.argv[2] == "numpy":
        sys.modules["metastore.index._kernels"] = None  # the import fails as when the extension is not built
    import numpy as np
    from metastore.index import build
    from metastore.index.build import BuildTarget, build_parts
    from metastore.index.model import IndexKind, IndexLevel, IndexRecord, IndexState
    from metastore.index.scan import data_file
    from metastore.index import kernels
    from metastore.locations import local_path

    root = Path(sys.argv[1])
    files = tuple(data_file(str(p)) for p in sorted(root.glob("*.orc")))
    out = []
    build.PARALLEL_MIN_BYTES = 0  # the pool on: a BTREE's workers merge each file's stripes into one run
    build.WORKERS = 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for kind in (IndexKind.BLOOM, IndexKind.BTREE):
            for column, ctype in (("k", "bigint"), ("s", "string")):
                for level in (IndexLevel.STRIPE, IndexLevel.TABLE):
                    record = IndexRecord(name="ix", db_name="db", table_name="t", column=column, column_type=ctype,
                                         kind=kind, level=level, properties={"bloom.fpp": "0.001"},
                                         location=f"file:{root / sys.argv[2] / uuid.uuid4().hex}",
                                         state=IndexState.READY)
                    report = build_parts(record, [BuildTarget("", files)], column_position=None)
                    out.extend(str(local_path(p.location)) for p in report.parts)
    print(sum("is not built" in str(w.message) for w in caught), kernels._native is not None)
    print("\\n".join(out))
""")


def _write_orc(directory: Path) -> None:
    """Two files of int64 keys (a few repeated, a few null) and strings: stripes of about 10,000 rows (double
    hashing) and a last stripe of a few hundred (SplitMix64 positions)."""
    from metastore.orcio import OrcWriter

    rng = np.random.default_rng(35)
    directory.mkdir(parents=True)
    for f, n in enumerate((30_300, 700)):
        keys = rng.integers(-(1 << 63), (1 << 63) - 1, size=n, dtype=np.int64)
        keys[: n // 50] = keys[n // 2 : n // 2 + n // 50]
        with OrcWriter(str(directory / f"part-{f}.orc"), "struct<k:bigint,s:string>",
                       {"orc.stripe.size": str(200_000)}) as w:
            w.write_batch({"k": [None if i % 97 == 3 else int(v) for i, v in enumerate(keys)],
                           "s": [f"s{int(v) % 5000}" for v in keys]})


def test_build_without_the_extension_writes_the_same_files(tmp_path: Path) -> None:
    """BLOOM and BTREE builds (int64 and string columns, stripe and table level, files scanned in two worker
    processes) in a process where the extension cannot be imported fall back to numpy, warn once, and write
    index files byte-identical to the kernels' builds."""
    _write_orc(tmp_path / "t")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    runs = {}
    for mode in ("numpy", "native"):
        done = subprocess.run([sys.executable, "-c", _BUILD, str(tmp_path / "t"), mode], capture_output=True,
                              text=True, env=env, timeout=300, check=True)
        head, *paths = done.stdout.strip().splitlines()
        runs[mode] = (head, [Path(p).read_bytes() for p in paths])
    assert runs["numpy"][0] == "1 False"  # one warning for the whole process, the numpy code ran
    if _compiled is None:
        pytest.skip("metastore.index._kernels not built: only the fallback was checked")
    assert runs["native"][0] == "0 True"
    # per kind and column 2 STRIPE parts and 1 TABLE part
    assert len(runs["native"][1]) == len(runs["numpy"][1]) == 2 * 2 * (2 + 1)
    assert runs["native"][1] == runs["numpy"][1]
