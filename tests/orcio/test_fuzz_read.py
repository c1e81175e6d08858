"""Fuzzing the reader: thousands of mutated and truncated small ORC files (deterministic seeds) must either
read or fail with OrcError: never another exception, never a hang, never a runaway allocation."""

from __future__ import annotations

import random
import tracemalloc
from pathlib import Path

import pytest

from metastore.orcio import OrcError
from metastore.orcio._jsonrows import format_vector
from metastore.orcio._reader import OrcReader

ORC_DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "orc"
SMALL_FILES = [
    "TestOrcFile.test1.orc",
    "TestOrcFile.testStringAndBinaryStatistics.orc",
    "TestOrcFile.testStripeLevelStats.orc",
    "TestOrcFile.testTimestamp.orc",
    "TestOrcFile.testWithoutCompressionBlockSize.orc",
    "TestOrcFile.testSargSkipPickupGroupWithoutIndexCPlusPlus.orc",
    "TestOrcFile.emptyFile.orc",
    "bad_bloom_filter_1.6.11.orc",
    "complextypes_iceberg.orc",
    "decimal64_v2.orc",
    "decimal64_v2_cplusplus.orc",
    "orc_no_format.orc",
    "orc_split_elim_cpp.orc",
    "orc_split_elim_new.orc",
    "orc_index_int_string.orc",
    "TestOrcFile.testMemoryManagementV12.orc",
    "TestOrcFile.testPredicatePushdown.orc",
    "decimal.orc",
    "TestOrcFile.testUnionAndTimestamp.orc",
    "encrypted/sample1.orc",
]
CASES_PER_FILE = 160
#: far more than any of these small files needs; a corrupt length must never get near it
ALLOCATION_CAP = 96 * 1024 * 1024
#: errors that only the reader's last-resort net turns into OrcError (they would show a missing check)
SAFETY_NET = "corrupt column data:"


def mutate(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    kind = rng.randrange(7)
    if kind == 0 and buf:  # flip a few bits anywhere
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
    elif kind == 1 and buf:  # random bytes in the tail, where the PostScript, Footer and Metadata live
        for _ in range(rng.randint(1, 4)):
            i = len(buf) - 1 - rng.randrange(min(len(buf), 400))
            buf[i] = rng.randrange(256)
    elif kind == 2:  # truncate
        buf = buf[: rng.randrange(len(buf) + 1)]
    elif kind == 3 and buf:  # overwrite a span with 0xff (huge varints, lengths and counts)
        i = rng.randrange(len(buf))
        buf[i : i + rng.randint(1, 12)] = b"\xff" * rng.randint(1, 12)
    elif kind == 4 and buf:  # delete or insert a few bytes (shifts every offset after it)
        i = rng.randrange(len(buf))
        if rng.random() < 0.5:
            del buf[i : i + rng.randint(1, 6)]
        else:
            buf[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
    elif kind == 5 and buf:  # random bytes in the stripes' data
        for _ in range(rng.randint(1, 16)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
    else:  # random garbage of the same size
        buf = bytearray(rng.randbytes(len(buf)))
    return bytes(buf)


def exercise(data: bytes) -> None:
    """Everything a user might do with a file."""
    reader = OrcReader(data)
    _ = reader.file_statistics
    _ = reader.stripe_statistics
    for s in range(min(len(reader.stripes), 2)):
        for c in range(min(len(reader.schema.flatten()), 6)):
            reader.row_index(s, c)
            reader.bloom_filters(s, c)
        batch = reader.read_stripe(s)
        # Python values of the first and last rows (all rows are decoded above; converting all is just slow)
        for part in (batch.slice(0, 1000), batch.slice(max(batch.num_rows - 300, 0), batch.num_rows)):
            format_vector(part.root)
            part.to_pylist()
        if reader.row_group_count(s) > 1:
            reader.read_row_group(s, 1).slice(0, 300).to_pylist()


@pytest.mark.parametrize("name", SMALL_FILES)
def test_mutated_files_raise_only_orc_errors(name: str) -> None:
    original = (ORC_DATA_DIR / name).read_bytes()
    exercise(original)  # the unmutated file reads
    rng = random.Random(f"orcio-fuzz-{name}")
    outcomes = {"read": 0, "error": 0}
    tracemalloc.start()
    try:
        for case in range(CASES_PER_FILE):
            data = mutate(original, rng)
            tracemalloc.reset_peak()
            try:
                exercise(data)
                outcomes["read"] += 1
            except OrcError as err:
                assert SAFETY_NET not in str(err), f"case {case}: unchecked corruption reached numpy: {err}"
                outcomes["error"] += 1
            except Exception as exc:  # noqa: BLE001 - the point of the test
                pytest.fail(f"{name} case {case}: {type(exc).__name__}: {exc}")
            _, peak = tracemalloc.get_traced_memory()
            assert peak < ALLOCATION_CAP, f"{name} case {case} allocated {peak} bytes"
    finally:
        tracemalloc.stop()
    assert outcomes["error"] > 0


def test_truncated_at_every_length_of_a_small_file() -> None:
    original = (ORC_DATA_DIR / "TestOrcFile.test1.orc").read_bytes()
    for n in range(len(original)):
        try:
            exercise(original[:n])
        except OrcError:
            continue
        # only a 0-byte file is a valid (empty) ORC file
        assert n == 0, f"a file cut to {n} bytes read without error"


def test_lengths_claiming_gigabytes_fail_before_allocating() -> None:
    from metastore.orcio._proto import orc_proto_pb2 as pb

    original = (ORC_DATA_DIR / "TestOrcFile.testWithoutCompressionBlockSize.orc").read_bytes()
    ps_len = original[-1]
    ps = pb.PostScript.FromString(original[-1 - ps_len : -1])
    for field, value in (("footer_length", 1 << 40), ("metadata_length", (1 << 62)), ("compression_block_size", 1 << 30)):
        bad = pb.PostScript()
        bad.CopyFrom(ps)
        setattr(bad, field, value)
        raw = bad.SerializeToString()
        data = original[: -1 - ps_len] + raw + bytes([len(raw)])
        tracemalloc.start()
        try:
            with pytest.raises(OrcError):
                exercise(data)
            assert tracemalloc.get_traced_memory()[1] < 16 * 1024 * 1024
        finally:
            tracemalloc.stop()
