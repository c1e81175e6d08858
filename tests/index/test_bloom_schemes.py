"""BLOOM probe schemes: the blocked positions written now (``splitmix64-block512``) and the double-hashing ones
written before (``splitmix64-dh``) are their formulas, blocked filters are sized for the configured rate and
measure within it, a filter built from a stripe's raw values equals the filter of its distinct keys, and files of
the older schemes (``splitmix64-dh``, ``splitmix64``) are still read and answer the same, while a rebuild scans
their files again."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import pytest

from metastore.index import bloom
from metastore.index.bind import KeyRange, KeySet
from metastore.index.columns import Domain, column_type
from metastore.index.container import BlockRef
from metastore.index.coverage import DataFile, FileValues, StripeValues
from metastore.index.parts import PartReader, write_part

INT_TYPE = column_type("bigint")


def test_double_positions_are_the_formula() -> None:
    """From DOUBLE_MIN_BITS on: z = h + i * (mix(h) | 1), position ((z >> 32) * bits) >> 32 (z % bits from
    2**32 bits); below it the legacy positions."""
    rng = np.random.default_rng(7)
    for n in (0, 1, 5, 1000):
        hashes = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
        h = hashes.view(np.uint64)
        for bits, k in ((bloom.DOUBLE_MIN_BITS, 10), (1_027_008, 10), ((1 << 32) - 64, 7), ((1 << 33) + 64, 3)):
            with np.errstate(over="ignore"):
                step = bloom._mix(h) | np.uint64(1)
                z = h[None, :] + np.arange(k, dtype=np.uint64)[:, None] * step[None, :]
            if bits <= 1 << 32:
                # exact in Python integers: the product of two 32-bit numbers does not wrap in uint64
                expected = np.asarray([[(int(v) >> 32) * bits >> 32 for v in row] for row in z.tolist()],
                                      dtype=np.int64).reshape(k, n)
            else:
                expected = (z % np.uint64(bits)).astype(np.int64)
            got = bloom.double_positions(hashes, k, bits)
            assert got.shape == (k, n) and np.array_equal(got, expected)
            assert n == 0 or (int(got.min()) >= 0 and int(got.max()) < bits)
        small = bloom.double_positions(hashes, 5, 64 * 10)
        assert np.array_equal(small, bloom.probe_positions(hashes, 5, 640).T)


def _rate(filter_: bloom.StripeBloom, keys: np.ndarray, rng: np.random.Generator) -> float:
    probes = rng.integers(-(1 << 62), 1 << 62, size=300_000, dtype=np.int64)
    probes = probes[~np.isin(probes, keys)]
    return int(np.count_nonzero(filter_.test_hashes(bloom.key_hashes(Domain.INT64, probes)))) / len(probes)


@pytest.mark.parametrize("fpp", [0.01, 0.001])
def test_double_hashing_meets_the_rate(fpp: float) -> None:
    """Filters of 2,000 to 100,000 distinct values (double hashing): the measured false-positive rate stays
    within twice the configured one (300,000 probes: 2x is over ten standard deviations at 0.001)."""
    rng = np.random.default_rng(8)
    for n in (2000, 20_000, 100_000):
        keys = np.unique(rng.integers(-(1 << 62), 1 << 62, size=n, dtype=np.int64))
        f = bloom.stripe_filter(Domain.INT64, keys, fpp, probes=bloom.DOUBLE_PROBES)
        assert f is not None and f.num_bits >= bloom.DOUBLE_MIN_BITS and f.probes == bloom.DOUBLE_PROBES
        assert f.test_hashes(bloom.key_hashes(Domain.INT64, keys)).all()
        assert _rate(f, keys, rng) <= 2 * fpp


def test_values_filter_is_the_filter_of_the_distinct_keys() -> None:
    """Raw values in any order: all distinct (no sort) or repeated (counted exactly) give stripe_filter's
    bits; a few repeats (under DISTINCT_SLACK) give a filter at least as large, with every key in it."""
    rng = np.random.default_rng(9)
    for n in (1, 7, bloom.EXACT_BELOW - 1, bloom.EXACT_BELOW, 50_000):
        keys = np.unique(rng.integers(-(1 << 63), (1 << 63) - 1, size=n, dtype=np.int64))
        expected = bloom.stripe_filter(Domain.INT64, keys, 0.001)
        got = bloom.values_filter(rng.permutation(keys), 0.001)
        assert got is not None and expected is not None
        assert got.num_hash_functions == expected.num_hash_functions and np.array_equal(got.words, expected.words)
        repeated = rng.permutation(np.concatenate([keys, keys[: max(1, n // 3)], keys[:1]]))
        again = bloom.values_filter(repeated, 0.001)
        assert again is not None and np.array_equal(again.words, expected.words)
    keys = np.arange(0, 30_000, dtype=np.int64) * 7919
    few = rng.permutation(np.concatenate([keys, keys[:100]]))  # 0.3 % repeats
    got = bloom.values_filter(few, 0.001)
    exact = bloom.stripe_filter(Domain.INT64, keys, 0.001)
    assert got is not None and exact is not None
    assert exact.num_bits <= got.num_bits <= bloom.StripeBloom.for_entries(len(few), 0.001).num_bits
    assert got.test_hashes(bloom.key_hashes(Domain.INT64, keys)).all()
    assert bloom.values_filter(np.zeros(0, dtype=np.int64), 0.001) is None


def _legacy_files(stripes: list[np.ndarray]) -> list[FileValues]:
    out = []
    for f in range(0, len(stripes), 2):
        group = []
        for i, keys in enumerate(stripes[f : f + 2]):
            legacy = None
            if len(keys):
                bits, k = bloom.filter_size(len(keys), 0.01)
                legacy = bloom.StripeBloom(np.zeros(bits // 64, dtype=np.uint64), k, bloom.LEGACY_PROBES)
                legacy.add_hashes(bloom.key_hashes(Domain.INT64, keys))
            group.append(StripeValues(100 * i + 3, 100, len(keys), keys[:0], 0, len(keys), bloom=legacy))
        out.append(FileValues(DataFile(f"file:/data/{f}.orc", 10_000, 1), group))
    return out


def test_legacy_bloom_files_still_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file written with the splitmix64 scheme (as before splitmix64-dh) is read with that scheme: no stripe
    holding a key is dropped, and the answers are the legacy filters' own; its filters are not reused into a
    file of the new scheme (reuse gives nothing, so a rebuild scans the files again)."""
    rng = np.random.default_rng(10)
    stripes = [np.unique(rng.integers(-(1 << 40), 1 << 40, size=n, dtype=np.int64)) for n in (3, 2000, 0, 40_000)]
    path = tmp_path / "legacy.idx"
    with monkeypatch.context() as m:
        m.setattr(bloom, "PROBES", bloom.LEGACY_PROBES)
        write_part(path, kind="bloom", column="c", ctype=INT_TYPE, files=_legacy_files(stripes), fpp=0.01)
    reader = PartReader(str(path), kind="bloom", column="c", ctype=INT_TYPE)
    assert reader._bloom is not None and reader._bloom.probes == bloom.LEGACY_PROBES
    for s, keys in enumerate(stripes):
        for key in keys[:50].tolist():
            answer = reader.answer(KeyRange("c", key, True, key, True))
            assert answer is not None and answer[s]
    probes = tuple(sorted({*rng.integers(-(1 << 40), 1 << 40, size=200).tolist(), *stripes[1][:5].tolist()}))
    for key in probes:
        answer = reader.answer(KeySet("c", (key,), False))
        assert answer is not None
        h = bloom.key_hashes(Domain.INT64, [key])
        own = [f is not None and bool(f.test_hashes(h)[0]) for f in reader._bloom.filters]
        assert answer.tolist() == own
    assert reader.reuse({DataFile("file:/data/0.orc", 10_000, 1).identity}) == []
    with pytest.raises(ValueError, match="cannot go into"):
        write_part(tmp_path / "mixed.idx", kind="bloom", column="c", ctype=INT_TYPE, files=_legacy_files(stripes),
                   fpp=0.01)


def test_new_files_say_their_scheme_and_answer_like_their_filters(tmp_path: Path) -> None:
    """A file written now records splitmix64-block512; its vectorised answer equals each stripe's filter tested
    on its own, for filters of one block and of many alike."""
    rng = np.random.default_rng(12)
    stripes = [np.unique(rng.integers(-(1 << 40), 1 << 40, size=n, dtype=np.int64)) for n in (2, 900, 30_000)]
    files = [FileValues(DataFile("file:/data/a.orc", 10_000, 1),
                        [StripeValues(100 * i + 3, 100, len(k), k, 0, len(k)) for i, k in enumerate(stripes)])]
    path = tmp_path / "new.idx"
    write_part(path, kind="bloom", column="c", ctype=INT_TYPE, files=files, fpp=0.001)
    reader = PartReader(str(path), kind="bloom", column="c", ctype=INT_TYPE)
    assert reader._bloom is not None and reader._bloom.probes == bloom.PROBES == "splitmix64-block512"
    keys = [*rng.integers(-(1 << 40), 1 << 40, size=300).tolist(), *(int(s[0]) for s in stripes)]
    for key in keys:
        answer = reader.answer(KeySet("c", (key,), False))
        h = bloom.key_hashes(Domain.INT64, [key])
        assert answer is not None
        assert answer.tolist() == [f is not None and bool(f.test_hashes(h)[0]) for f in reader._bloom.filters]
        assert all(answer[i] for i, s in enumerate(stripes) if key in set(s.tolist()))


_M64 = (1 << 64) - 1


def _mix_int(z: int) -> int:
    z &= _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def test_blocked_positions_are_the_formula() -> None:
    """splitmix64-block512: probe 8r + w of hash h is bit (mix(h + (r + 1) * golden) >> 6w) & 63 of word w of
    block ((h >> 32) * blocks) >> 32, computed here in Python integers, up to 2**32 blocks and 8 rounds."""
    rng = np.random.default_rng(15)
    for n in (0, 1, 5, 300):
        hashes = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
        for blocks, rounds in ((1, 1), (7, 1), (2223, 1), (3234, 2), (1 << 32, 3), ((1 << 20) + 1, 8)):
            expected = np.zeros((8 * rounds, n), dtype=np.int64)
            for j, h in enumerate(hashes.view(np.uint64).tolist()):
                block = ((h >> 32) * blocks) >> 32
                for r in range(rounds):
                    g = _mix_int(h + (r + 1) * 0x9E3779B97F4A7C15)
                    for w in range(8):
                        expected[8 * r + w, j] = block * 512 + 64 * w + ((g >> (6 * w)) & 63)
            got = bloom.blocked_positions(hashes, rounds, blocks)
            assert got.shape == (8 * rounds, n) and np.array_equal(got, expected)


def _binomial_rate(n: int, blocks: int, rounds: int) -> float:
    """The exact expected rate of a filter of ``blocks`` blocks holding n keys (the load of the probed block
    binomial), blocked_rate's per-load chance summed by hand."""
    total = 0.0
    p = 1.0 / blocks
    for j in range(n + 1):
        if blocks == 1 and j != n:
            continue
        log_weight = (math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1)
                      + (j * math.log(p) + (n - j) * math.log1p(-p) if blocks > 1 else 0.0))
        q = 1.0 - (63.0 / 64.0) ** (j * rounds)
        counts, chances = bloom._word_match(rounds)
        word = float(sum(c * q**d for d, c in zip(counts.tolist(), chances.tolist(), strict=True)))
        total += math.exp(log_weight) * word**8
    return total


def test_blocked_size_is_the_fewest_blocks_within_the_rate() -> None:
    """blocked_size gives a load whose expected rate is within RATE_HEADROOM of the configured one, and one
    block fewer, at any number of rounds, would not be; for filters of a few blocks (the probed block's load
    binomial, not Poisson) the exact rate is within it too. At 0.1 % a 71,000-key stripe takes one round and
    about 16 bits a key (the classic filter's 14.4 and 10 probes)."""
    for fpp in (0.3, 0.01, 0.001, 1e-4, 1e-6):
        target = bloom.RATE_HEADROOM * fpp
        for n in (1, 2, 33, 1000, 71_000, 1_000_000):
            blocks, rounds = bloom.blocked_size(n, fpp)
            assert 1 <= rounds <= bloom.MAX_ROUNDS
            assert bloom.blocked_rate(n / blocks, rounds) <= target
            if blocks > 1:
                assert all(bloom.blocked_rate(n / (blocks - 1), r) > target for r in range(1, bloom.MAX_ROUNDS + 1))
        for rounds in (1, 2):
            load = bloom._max_load(target, rounds)
            for blocks in (1, 2, 3, 5, 8):
                n = math.floor(load * blocks)
                if n:
                    assert _binomial_rate(n, blocks, rounds) <= target, (fpp, rounds, blocks)
    blocks, rounds = bloom.blocked_size(71_000, 0.001)
    assert rounds == 1 and 15.5 < blocks * 512 / 71_000 < 16.1
    with pytest.raises(ValueError, match="reaches"):
        bloom.blocked_size(10, 1e-200)


@pytest.mark.parametrize("fpp", [0.01, 0.001, 1e-4])
def test_blocked_filters_measure_within_the_configured_rate(fpp: float) -> None:
    """The false-positive rate measured on random keys not in the filter (the keys even, the probes odd), over at
    least 2,000 / fpp probes (at the expected 0.9 fpp the configured rate is over four standard deviations away)
    and over several filters where they are small, is at most the configured rate, for filters of 1 to 71,000
    keys (1e-4: two rounds). Every key added passes (no false negative)."""
    rng = np.random.default_rng(16)
    probes_wanted = math.ceil(2000 / fpp)
    for n in ((1_000, 71_000) if fpp < 0.001 else (1, 10, 100, 1_000, 20_000, 71_000)):
        count = max(1, min(100, 100_000 // n))
        per_filter = math.ceil(probes_wanted / count)
        false = probes = 0
        for _ in range(count):
            keys = np.unique(rng.integers(-(1 << 62), 1 << 62, size=n, dtype=np.int64)) * 2
            f = bloom.stripe_filter(Domain.INT64, keys, fpp)
            assert f is not None and f.probes == bloom.BLOCKED_PROBES
            assert f.test_hashes(bloom.key_hashes(Domain.INT64, keys)).all()
            for start in range(0, per_filter, 1 << 20):
                others = rng.integers(-(1 << 62), 1 << 62, size=min(1 << 20, per_filter - start), dtype=np.int64) * 2 + 1
                false += int(np.count_nonzero(f.test_hashes(bloom.key_hashes(Domain.INT64, others))))
                probes += len(others)
        assert false / probes <= fpp, (n, false / probes)


def test_blocked_filters_are_whole_blocks() -> None:
    with pytest.raises(ValueError, match="blocked"):
        bloom.StripeBloom(np.zeros(12, dtype=np.uint64), 8)
    with pytest.raises(ValueError, match="blocked"):
        bloom.StripeBloom(np.zeros(16, dtype=np.uint64), 10)
    assert bloom.StripeBloom(np.zeros(16, dtype=np.uint64), 16).num_bits == 1024


def _double_hashing_files() -> tuple[list[np.ndarray], list[FileValues]]:
    """Two data files of five stripes (one without values, one whose filter is made from raw values with
    repeats, as a scan makes it), for a file of the double-hashing scheme."""
    rng = np.random.default_rng(14)
    sizes = (2, 900, 0, 30_000, 5_000)
    stripes = [np.unique(rng.integers(-(1 << 40), 1 << 40, size=n, dtype=np.int64)) for n in sizes]
    raw = rng.permutation(np.concatenate([stripes[4], stripes[4][:40]]))
    files = []
    for f, group in enumerate((stripes[:3], stripes[3:])):
        values = []
        for i, keys in enumerate(group):
            made = bloom.values_filter(raw, 0.001) if f == 1 and i == 1 else None
            values.append(StripeValues(1000 * i + 3, 1000, len(keys), keys if made is None else keys[:0], 0,
                                       len(keys), bloom=made))
        files.append(FileValues(DataFile(f"file:/data/{f}.orc", 50_000, 7), values))
    return stripes, files


#: SHA-256 of the scheme name and the raw filter and index blocks of _double_hashing_files' part, as main at
#: b6ac8db (when splitmix64-dh was the scheme written) wrote it
_DOUBLE_HASHING_DIGEST = "cfb94fbd49d4c5c24095511ccd14c037a7689e2ebd02ad9c88b502ff1958f5fa"


def test_double_hashing_files_written_before_are_still_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of the splitmix64-dh scheme, written by this code with that scheme chosen (the same filter bytes as
    the code that wrote it by default, checked by digest), is read with its scheme: every key of every stripe is
    found in its stripe, each answer is the stripe filters' own, and its filters are not reused into a file of
    the blocked scheme (a rebuild scans the files again)."""
    stripes, _ = _double_hashing_files()
    path = tmp_path / "double.idx"
    with monkeypatch.context() as m:
        m.setattr(bloom, "PROBES", bloom.DOUBLE_PROBES)
        _, files = _double_hashing_files()  # the raw-values filter made with the chosen scheme too
        write_part(path, kind="bloom", column="c", ctype=INT_TYPE, files=files, fpp=0.001)
    reader = PartReader(str(path), kind="bloom", column="c", ctype=INT_TYPE)
    d = reader.file.description
    digest = hashlib.sha256(d["bloom_probes"].encode())
    for key in ("bloom_words_block", "bloom_index_block"):
        digest.update(reader.file.block(BlockRef.from_list(d[key], str(path)), key))
    assert digest.hexdigest() == _DOUBLE_HASHING_DIGEST
    assert reader._bloom is not None and reader._bloom.probes == bloom.DOUBLE_PROBES
    assert [f is None for f in reader._bloom.filters] == [len(s) == 0 for s in stripes]
    for s, keys in enumerate(stripes):
        for key in keys[:60].tolist():
            answer = reader.answer(KeyRange("c", key, True, key, True))
            assert answer is not None and answer[s]
    rng = np.random.default_rng(17)
    probes = tuple(sorted({*rng.integers(-(1 << 40), 1 << 40, size=300).tolist(), *stripes[3][:5].tolist()}))
    for key in probes:
        answer = reader.answer(KeySet("c", (key,), False))
        h = bloom.key_hashes(Domain.INT64, [key])
        assert answer is not None
        assert answer.tolist() == [f is not None and bool(f.test_hashes(h)[0]) for f in reader._bloom.filters]
    assert reader.reuse({DataFile("file:/data/1.orc", 50_000, 7).identity}) == []
    _, files = _double_hashing_files()
    blocked = tmp_path / "blocked.idx"
    write_part(blocked, kind="bloom", column="c", ctype=INT_TYPE, files=files, fpp=0.001)
    now = PartReader(str(blocked), kind="bloom", column="c", ctype=INT_TYPE)
    assert now._bloom is not None and now._bloom.probes == bloom.BLOCKED_PROBES
    for key in probes:
        assert now.answer(KeySet("c", (key,), False)) is not None
    for s, keys in enumerate(stripes):
        answer = now.answer(KeySet("c", tuple(keys[:40].tolist()), False))
        assert answer is not None and (answer[s] or len(keys) == 0)
