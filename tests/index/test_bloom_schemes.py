"""BLOOM probe schemes: the double-hashing positions written now (``splitmix64-dh``) are their formula, a filter
built from a stripe's raw values equals the filter of its distinct keys, and files of the older scheme
(``splitmix64``) are still read and answer the same, while a rebuild scans their files again."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from metastore.index import bloom
from metastore.index.bind import KeyRange, KeySet
from metastore.index.columns import Domain, column_type
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
        f = bloom.stripe_filter(Domain.INT64, keys, fpp)
        assert f is not None and f.num_bits >= bloom.DOUBLE_MIN_BITS
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
    assert exact.num_bits <= got.num_bits <= bloom.filter_size(len(few), 0.001)[0]
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
    """A file written now records splitmix64-dh; its vectorised answer equals each stripe's filter tested on
    its own, for small (legacy positions) and large (double hashing) filters alike."""
    rng = np.random.default_rng(12)
    stripes = [np.unique(rng.integers(-(1 << 40), 1 << 40, size=n, dtype=np.int64)) for n in (2, 900, 30_000)]
    files = [FileValues(DataFile("file:/data/a.orc", 10_000, 1),
                        [StripeValues(100 * i + 3, 100, len(k), k, 0, len(k)) for i, k in enumerate(stripes)])]
    path = tmp_path / "new.idx"
    write_part(path, kind="bloom", column="c", ctype=INT_TYPE, files=files, fpp=0.001)
    reader = PartReader(str(path), kind="bloom", column="c", ctype=INT_TYPE)
    assert reader._bloom is not None and reader._bloom.probes == bloom.PROBES == "splitmix64-dh"
    keys = [*rng.integers(-(1 << 40), 1 << 40, size=300).tolist(), *(int(s[0]) for s in stripes)]
    for key in keys:
        answer = reader.answer(KeySet("c", (key,), False))
        h = bloom.key_hashes(Domain.INT64, [key])
        assert answer is not None
        assert answer.tolist() == [f is not None and bool(f.test_hashes(h)[0]) for f in reader._bloom.filters]
        assert all(answer[i] for i, s in enumerate(stripes) if key in set(s.tolist()))
