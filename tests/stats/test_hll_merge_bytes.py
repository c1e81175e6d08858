"""Serialised HyperLogLog sketches merged without parsing each one (hll.merge_sketch_bytes, hll.check_sketch_bytes)
and the compiled register loops (metastore/stats/_hll_native.c: unpacking, dense adds) against their references: merge_hlls of the parsed
sketches gives the same bytes for every mix of encodings, widths, orders and p; from_bytes unpacks the same
registers with and without the compiled loop; the header-only check refuses what from_bytes refuses.

`pip install -e .` builds the extension; a checkout used without it skips the native comparisons here, except
under CI, where an unbuilt extension fails."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from compiled_ext import built_or_skip

from metastore.orcio import hash64_array_long
from metastore.stats import hll
from metastore.stats.harvest.partial import check_sketch, merge_partials, parse_sketch, parsed_sketches
from metastore.stats.hll import (
    HllFormatError,
    HyperLogLog,
    check_sketch_bytes,
    merge_hlls,
    merge_sketch_bytes,
)

REPO = Path(__file__).resolve().parents[2]

_compiled = hll._native
needs_native = built_or_skip(_compiled, "metastore.stats._hll_native", hll._missing)


def _sketch(start: int, n: int, p: int = 14, *, bit_packing: bool = True, step: int = 1) -> HyperLogLog:
    s = HyperLogLog(p, bit_packing=bit_packing)
    s.add_hashes(hash64_array_long(start + np.arange(n, dtype=np.int64) * step))
    return s


def _reference(blobs: list[bytes]) -> bytes:
    return merge_hlls([HyperLogLog.from_bytes(b) for b in blobs]).to_bytes()


def _cases() -> dict[str, list[bytes]]:
    rng = np.random.default_rng(7)
    dense = [_sketch(int(rng.integers(0, 10**6)), int(rng.integers(3000, 60_000))) for _ in range(12)]
    sparse = [_sketch(int(rng.integers(0, 10**6)), int(rng.integers(0, 300))) for _ in range(12)]
    small_p = [_sketch(int(rng.integers(0, 10**6)), int(rng.integers(0, 3000)), p=10) for _ in range(8)]
    cases = {
        "dense, one width": [s.to_bytes() for s in dense[:6] if s.to_bytes()[3] & 7 == dense[0].to_bytes()[3] & 7],
        "dense, several widths": [s.to_bytes() for s in dense] + [_sketch(0, 200_000).to_bytes()],
        "sparse and dense": [s.to_bytes() for s in itertools.chain(*zip(sparse[:6], dense[:6], strict=True))],
        "sparse first, then dense": [s.to_bytes() for s in sparse + dense[:2]],
        "sparse, union stays sparse": [s.to_bytes() for s in sparse],
        "sparse, overlapping keys": [_sketch(0, 200).to_bytes(), _sketch(100, 200).to_bytes(),
                                     _sketch(50, 300, step=3).to_bytes(), _sketch(0, 200).to_bytes()],
        "sparse, union turns dense": [_sketch(i * 2000, 2000).to_bytes() for i in range(3)],
        "sparse, p=10": [s.to_bytes() for s in small_p],
        "empty ones among them": [HyperLogLog(14).to_bytes(), dense[0].to_bytes(), HyperLogLog(14).to_bytes()],
        "every one empty": [HyperLogLog(14).to_bytes(), HyperLogLog(14).to_bytes()],
        "several p": [dense[0].to_bytes(), _sketch(0, 5000, p=10).to_bytes(), sparse[1].to_bytes()],
        "8-bit registers": [_sketch(0, 20_000, bit_packing=False).to_bytes(), dense[1].to_bytes()],
        "one sketch": [dense[2].to_bytes()],
        "one sparse sketch": [sparse[2].to_bytes()],
    }
    # what Hive writes for a dense sketch with no register set: a sparse header without a count
    cases["Hive's empty dense"] = [b"HLL\xe0\x01", sparse[3].to_bytes(), dense[3].to_bytes()]
    cases["Hive's empty dense, all sparse"] = [sparse[4].to_bytes(), b"HLL\xe0\x01"]
    return cases


CASES = _cases()


@pytest.mark.parametrize("name", list(CASES))
def test_merged_bytes_are_merge_hlls_bytes_in_every_order(name: str) -> None:
    blobs = CASES[name]
    rng = np.random.default_rng(len(name))
    orders = [list(range(len(blobs))), list(reversed(range(len(blobs))))]
    orders += [list(rng.permutation(len(blobs))) for _ in range(3)]
    for order in orders:
        ordered = [blobs[i] for i in order]
        assert merge_sketch_bytes(ordered) == _reference(ordered), order
        with parsed_sketches():
            assert merge_sketch_bytes(ordered, parse_sketch) == _reference(ordered), order


def test_sparse_merge_keeps_each_order() -> None:
    """All-sparse merges depend on the order (Java's HashMap keeps colliding keys in insertion order): the bytes
    follow the order given, as merge_hlls does, and the cases above do include orders that give other bytes."""
    blobs = CASES["sparse, union stays sparse"]
    forward, backward = merge_sketch_bytes(blobs), merge_sketch_bytes(blobs[::-1])
    assert forward == _reference(blobs) and backward == _reference(blobs[::-1])
    assert HyperLogLog.from_bytes(forward).registers().tolist() == HyperLogLog.from_bytes(backward).registers().tolist()


def test_merge_partials_uses_the_same_bytes() -> None:
    from metastore.stats.harvest.partial import ColumnPartial
    from metastore.stats.model import StatsKind

    blobs = CASES["sparse and dense"]
    partials = [ColumnPartial(StatsKind.LONG, 10, 0, 1, 2, sketch=b) for b in blobs]
    assert merge_partials(partials).sketch == _reference(blobs)


def test_bad_sketches_fail_as_from_bytes_does() -> None:
    good = _sketch(0, 50_000).to_bytes()
    bad = [b"", b"HL", b"XLL\xe5\x01", b"HLL\x35\x01", b"HLL\xe5\x81", good[:-1], good[:10]]
    for blob in bad:
        with pytest.raises(HllFormatError):
            HyperLogLog.from_bytes(blob)
        with pytest.raises(HllFormatError):
            check_sketch(blob)
        with pytest.raises(HllFormatError):
            merge_sketch_bytes([good, blob])
    truncated_sparse = _sketch(0, 100).to_bytes()[:-3]
    with pytest.raises(HllFormatError):
        check_sketch(truncated_sparse)
    with pytest.raises(ValueError, match="at least one"):
        merge_sketch_bytes([])


def test_check_sketch_bytes_says_which_sketches_it_checked() -> None:
    assert check_sketch_bytes(_sketch(0, 50_000).to_bytes()) is True
    assert check_sketch_bytes(_sketch(0, 50).to_bytes()) is False  # sparse: parsed instead
    assert check_sketch_bytes(_sketch(0, 20_000, bit_packing=False).to_bytes()) is False  # 8-bit registers
    # trailing bytes after the registers are ignored, as from_bytes ignores them
    padded = _sketch(0, 50_000).to_bytes() + b"\x00\x07"
    assert check_sketch_bytes(padded) is True
    assert merge_sketch_bytes([padded, padded]) == _reference([padded, padded])


def test_check_sketch_parses_only_what_a_merge_parses() -> None:
    dense, sparse = _sketch(0, 50_000).to_bytes(), _sketch(0, 50).to_bytes()
    with parsed_sketches():
        check_sketch(dense)
        check_sketch(sparse)
        from metastore.stats.harvest.partial import _PARSED

        kept = _PARSED.get()
        assert kept is not None and set(kept) == {sparse}


@needs_native
@pytest.mark.parametrize("width", range(1, 9))
def test_compiled_registers_are_numpy_registers(width: int) -> None:
    rng = np.random.default_rng(width)
    for p, count in ((4, 1), (10, 3), (14, 5)):
        m = 1 << p
        regs = rng.integers(0, 1 << width, size=(count, m), dtype=np.int64).astype(np.uint8)
        bodies = b"".join(hll._pack_registers(r, width) for r in regs) if width < 8 else regs.tobytes()
        start = rng.integers(0, 1 << width, size=m, dtype=np.int64).astype(np.uint8)
        native, numpy = start.copy(), start.copy()
        _compiled.max_packed_registers(bodies, width, native)
        if width < 8:
            hll._max_registers(bodies, width, numpy, native=False)
        else:
            np.maximum(numpy, regs.max(axis=0), out=numpy)
        assert np.array_equal(native, numpy)
        assert np.array_equal(native, np.maximum(start, regs.max(axis=0)))


@needs_native
@pytest.mark.parametrize("p", [4, 10, 14, 15])
def test_compiled_dense_adds_are_numpy_adds(p: int) -> None:
    """HyperLogLog._add_dense's compiled loop against its numpy code: random hashes, hashes whose bits above p are
    all zero (rank 65), every rank up to 64, added in several calls; the same registers and bytes."""
    rng = np.random.default_rng(p)
    special = np.array([0, 1, (1 << p) - 1, 1 << p, 1 << 63, (1 << 64) - 1], dtype=np.uint64)
    ranks = np.array([((1 << k) << p) | 5 for k in range(64 - p)], dtype=np.uint64)
    batches = [rng.integers(0, 1 << 63, 70_000, dtype=np.int64).view(np.uint64) * np.uint64(2) + np.uint64(1),
               special, ranks, hash64_array_long(np.arange(50_000)).view(np.uint64)]
    for bit_packing in (True, False):
        native, numpy = HyperLogLog(p, bit_packing=bit_packing, dense=True), HyperLogLog(p, bit_packing=bit_packing,
                                                                                          dense=True)
        for batch in batches:
            native._add_dense(batch)
            numpy._add_dense(batch, native=False)
            assert np.array_equal(native.registers(), numpy.registers())
            assert native._max_register == numpy._max_register
        assert native.to_bytes() == numpy.to_bytes() if p < 16 else True
    assert int(native.registers().max()) == 65
    # int64 hashes (add_hashes' usual input) and a strided view go the same way
    longs = hash64_array_long(np.arange(20_000))
    a, b = HyperLogLog(p), HyperLogLog(p)
    a.add_hashes(longs)
    b.add_hashes(np.ascontiguousarray(longs[::-1])[::-1])
    assert a.to_bytes() == b.to_bytes()


@needs_native
def test_compiled_dense_add_refuses_bad_arguments() -> None:
    with pytest.raises(ValueError, match="p 3"):
        _compiled.add_dense(np.zeros(4, dtype=np.uint64), 3, np.zeros(8, dtype=np.uint8))
    with pytest.raises(ValueError, match="registers"):
        _compiled.add_dense(np.zeros(4, dtype=np.uint64), 4, np.zeros(8, dtype=np.uint8))
    with pytest.raises(ValueError, match="bytes of hashes"):
        _compiled.add_dense(b"\x00" * 12, 4, np.zeros(16, dtype=np.uint8))


@needs_native
def test_compiled_loop_refuses_bad_arguments() -> None:
    out = np.zeros(16, dtype=np.uint8)
    with pytest.raises(ValueError, match="width"):
        _compiled.max_packed_registers(b"\x00" * 10, 9, out)
    with pytest.raises(ValueError, match="whole bodies"):
        _compiled.max_packed_registers(b"\x00" * 11, 5, out)
    with pytest.raises(ValueError, match="whole bodies"):
        _compiled.max_packed_registers(b"", 5, np.zeros(12, dtype=np.uint8))
    with pytest.raises(BufferError):
        _compiled.max_packed_registers(b"\x00" * 10, 5, b"\x00" * 16)  # not writable


def test_without_the_extension_numpy_runs_with_one_warning(tmp_path: Path) -> None:
    """A process where metastore.stats._hll_native cannot be imported parses and merges the same bytes."""
    blobs = CASES["dense, several widths"] + CASES["sparse and dense"]
    expected = _reference(blobs).hex()
    (tmp_path / "blobs").write_text("\n".join(b.hex() for b in blobs))
    script = textwrap.dedent(f"""
        import sys, warnings
        import numpy as np
        sys.modules["metastore.stats._hll_native"] = None  # an import of it fails
        from metastore.stats.hll import HyperLogLog, merge_sketch_bytes
        blobs = [bytes.fromhex(h) for h in open({str(tmp_path / "blobs")!r}).read().split()]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            merged = merge_sketch_bytes(blobs)
            again = merge_sketch_bytes(blobs)
            HyperLogLog.from_bytes(blobs[0]).to_bytes()
            added = HyperLogLog(14)
            added.add_hashes(np.arange(20_000, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
        assert merged == again
        print(merged.hex())
        print(added.to_bytes().hex())
        print(sum("_hll_native is not built" in str(w.message) for w in caught))
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    merged, added, warnings_seen = done.stdout.split()
    assert merged == expected
    native = HyperLogLog(14)
    native.add_hashes(np.arange(20_000, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    assert bytes.fromhex(added) == native.to_bytes()
    assert warnings_seen == "1"


def _numpy_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on hll uses none of the compiled functions looked up by name (sparse entries, register packing,
    varulong writing): their numpy references run."""
    monkeypatch.setattr(hll, "_native_function", lambda name: None)


def _sparse_bytes(p: int, entries: list[int]) -> bytes:
    """A sparse sketch's bytes with these (key << Q_PRIME | value) entries in this order, as Hive writes them."""
    deltas = np.array(entries, dtype=np.int64)
    deltas[1:] = deltas[1:] - deltas[:-1]
    deltas = ((deltas + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
    return (hll.MAGIC + bytes([p << 4]) + hll._vulong(len(entries)) + hll._vulong(len(entries))
            + hll._write_vulongs(deltas.view(np.uint64), native=False))


@needs_native
def test_compiled_sparse_reads_and_writes_are_numpy_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sparse sketches parsed and written with the compiled loops hold the same entries in the same order and
    give the same bytes as numpy's; so does every merge of the cases above."""
    blobs = [b for case in CASES.values() for b in case]
    blobs += [_sketch(k * 1000, n, p=p).to_bytes() for k, (n, p) in
              enumerate(itertools.product((0, 1, 7, 60, 250), (4, 10, 14, 15)))]
    native = [HyperLogLog.from_bytes(b) for b in blobs]
    native_bytes = [s.to_bytes() for s in native]
    merged = {name: merge_sketch_bytes(case) for name, case in CASES.items()}
    assert any(s._sparse for s in native)
    _numpy_only(monkeypatch)
    numpy = [HyperLogLog.from_bytes(b) for b in blobs]
    for a, b, written in zip(native, numpy, native_bytes, strict=True):
        assert a.p == b.p
        assert (None if a._sparse is None else list(a._sparse.items())) == (
            None if b._sparse is None else list(b._sparse.items()))
        assert written == b.to_bytes()
    for name, case in CASES.items():
        assert merged[name] == _reference(case), name


@needs_native
def test_compiled_sparse_read_leaves_odd_entries_to_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Entries the compiled loop does not take (a repeated key, which Hive never writes; a truncated list; a varint
    of more than 10 bytes) give what the numpy reference gives: the repeats merged, the same errors."""
    q = hll.Q_PRIME
    start = 6  # magic, p and encoding, the estimate, the count
    repeated = _sparse_bytes(14, [(5 << q) | 3, (9 << q) | 2, (5 << q) | 7, (1 << q) | 1, (9 << q) | 1])
    assert _compiled.read_sparse(repeated, start, 5, q) is None
    good = _sparse_bytes(14, [(5 << q) | 3, (9 << q) | 2, ((1 << 19) << q) | 30])
    found = _compiled.read_sparse(good, start, 3, q)
    assert found is not None
    entries, end = found
    assert list(entries.items()) == [(5, 3), (9, 2), (1 << 19, 30)] and end == len(good)
    assert _compiled.read_sparse(good[:-1], start, 3, q) is None
    too_long = good[:start] + b"\x81" * 10 + b"\x01" + good[start:]
    assert _compiled.read_sparse(too_long, start, 3, q) is None
    native = HyperLogLog.from_bytes(repeated)
    _numpy_only(monkeypatch)
    numpy = HyperLogLog.from_bytes(repeated)
    assert native._sparse is not None and numpy._sparse is not None
    assert list(native._sparse.items()) == list(numpy._sparse.items()) == [(5, 7), (9, 2), (1, 1)]
    for bad in (good[:-1], too_long):
        with pytest.raises(HllFormatError):
            HyperLogLog.from_bytes(bad)


@needs_native
@pytest.mark.parametrize("width", range(1, 9))
def test_compiled_packing_is_numpy_packing(width: int) -> None:
    """Registers packed by the compiled loop are numpy's bytes, also for registers wider than ``width`` (numpy's
    shifts do not mask them: neither does the loop)."""
    rng = np.random.default_rng(100 + width)
    for m in (16, 1 << 10, 1 << 14):
        regs = rng.integers(0, 1 << width, size=m, dtype=np.int64).astype(np.uint8)
        assert hll._pack_registers(regs, width) == hll._pack_registers(regs, width, native=False)
        wide = rng.integers(0, 256, size=m, dtype=np.int64).astype(np.uint8)
        assert hll._pack_registers(wide, width) == hll._pack_registers(wide, width, native=False)
    with pytest.raises(ValueError, match="registers"):
        _compiled.pack_registers(b"\x00" * 12, width)
    with pytest.raises(ValueError, match="bits"):
        _compiled.pack_registers(b"\x00" * 16, 9)


@needs_native
def test_compiled_varulongs_are_numpy_varulongs() -> None:
    rng = np.random.default_rng(3)
    edges = [0, 1, 0x7F, 0x80, 0x3FFF, 0x4000, (1 << 31) - 1, 1 << 31, (1 << 32) - 1, 1 << 63, (1 << 64) - 1]
    values = np.concatenate([np.array(edges, dtype=np.uint64),
                             rng.integers(0, 1 << 63, 5000, dtype=np.int64).view(np.uint64) << np.uint64(1),
                             (rng.integers(-(1 << 31), 1 << 31, 5000, dtype=np.int64)).view(np.uint64)])
    assert hll._write_vulongs(values) == hll._write_vulongs(values, native=False)
    assert hll._write_vulongs(values[:1]) == b"\x00"
    with pytest.raises(ValueError, match="8-byte"):
        _compiled.write_vulongs(b"\x00" * 12)


@needs_native
def test_compiled_sparse_merge_is_numpy_merge() -> None:
    """hll._merge_sparse's compiled loop against its numpy code: the same entries in the same order (Java's
    HashMap order of each map, first appearances, largest values) or None alike, for maps of every capacity, with
    colliding buckets and repeated keys, and maps built in another order than Java's."""
    rng = np.random.default_rng(11)
    cases = [[HyperLogLog.from_bytes(b) for b in CASES[name]] for name in
             ("sparse, union stays sparse", "sparse, overlapping keys", "sparse, union turns dense", "sparse, p=10")]
    made = []
    for n in (0, 1, 5, 12, 13, 24, 25, 200, 700):
        s = HyperLogLog(14)
        keys = rng.choice(1 << 20, size=n, replace=False)
        # keys 65536 apart share a bucket: Java keeps them in insertion order within it
        keys[: n // 3] = (keys[: n // 3] & 0xF) | (rng.integers(0, 16, n // 3) << 16)
        s._sparse = dict(zip(np.unique(keys).tolist(), rng.integers(1, 50, np.unique(keys).size).tolist(),
                             strict=True))
        made.append(s)
    cases += [made, made[::-1], made[3:] + made[:3]]
    for sketches in cases:
        for p in {s.p for s in sketches}:
            same_p = [s for s in sketches if s.p == p and s._sparse is not None]
            native = hll._merge_sparse(same_p, p)
            numpy = hll._merge_sparse(same_p, p, native=False)
            assert (native is None) == (numpy is None)
            if native is not None and numpy is not None:
                assert native._sparse is not None and numpy._sparse is not None
                assert list(native._sparse.items()) == list(numpy._sparse.items())
    assert any(hll._merge_sparse(c, c[0].p) is None for c in cases if len({s.p for s in c}) == 1)
    with pytest.raises(TypeError):
        _compiled.merge_sparse([{1: 2}, [3]], 100)
