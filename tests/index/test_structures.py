"""BTREE, BLOOM and MINMAX index files against brute force over random stripes of keys.

BTREE answers exactly (a stripe iff it holds a matching key); BLOOM and MINMAX never miss a stripe that holds
one. Small leaves and fanout force trees of several levels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metastore.index import bloom, btree
from metastore.index.bind import KeyRange, KeySet, NullTest
from metastore.index.columns import column_type
from metastore.index.coverage import DataFile, FileValues, StripeValues
from metastore.index.parts import PartReader, write_part

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
    keys = np.arange(200_000, dtype=np.int64) * 3
    stripes = [StripeValues(i * 10, 10, 1000, keys[i::50], 0, 4000) for i in range(50)]
    files = [FileValues(DataFile("file:/d/a.orc", 1000, 1), stripes)]
    path = tmp_path / "t.idx"
    size = write_part(path, kind="btree", column="c", ctype=INT_TYPE, files=files, fpp=0.01)
    reader = PartReader(str(path), kind="btree", column="c", ctype=INT_TYPE)
    opened = reader.bytes_read
    answer = reader.answer(KeyRange("c", 3 * 123_457, True, 3 * 123_457, True))
    assert answer is not None and np.flatnonzero(answer).tolist() == [123_457 % 50]
    assert reader._btree is not None and reader._btree.height >= 2
    # a few blocks of a file of megabytes
    assert reader.bytes_read - opened < 64 * 1024 < size
