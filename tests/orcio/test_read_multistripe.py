"""Whole-file reads of multi-stripe files: each top-level field's stripes are decoded and joined one field at a
time; the result must be what reading stripe by stripe and joining gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from metastore.orcio import OrcError, OrcReader
from metastore.orcio._vectors import concat

FILES = [
    "TestOrcFile.testSeek.orc",
    "TestOrcFile.testUnionAndTimestamp.orc",
    "orc_split_elim.orc",
    "TestOrcFile.testDate1900.orc",
    "over1k_bloom.orc",
    "TestOrcFile.testStripeLevelStats.orc",
]


def _stripe_by_stripe(reader: OrcReader, columns=None):
    return concat([reader.read_stripe(i, columns).root for i in range(len(reader.stripes))])


@pytest.mark.parametrize("name", FILES)
def test_whole_file_read_equals_stripes_joined(orc_examples: Path, name: str) -> None:
    reader = OrcReader(orc_examples / name)
    assert len(reader.stripes) > 1
    whole = reader.read()
    joined = _stripe_by_stripe(reader)
    assert whole.num_rows == joined.length == reader.num_rows
    assert whole.root.to_pylist() == joined.to_pylist()
    for got, want in zip(whole.root.children, joined.children, strict=True):
        assert type(got) is type(want)
        assert np.array_equal(got.null_mask(), want.null_mask())


def test_projection_of_a_multi_stripe_file(orc_examples: Path) -> None:
    reader = OrcReader(orc_examples / "TestOrcFile.testSeek.orc")
    names = reader.schema.field_names
    picked = [names[5], names[1], names[7]]
    batch = reader.read(picked)
    assert batch.schema.field_names == tuple(n for n in names if n in picked)
    assert batch.to_pylist() == _stripe_by_stripe(reader, picked).to_pylist()


def test_batches_pickle(orc_examples: Path) -> None:
    import pickle

    # one stripe of a ZLIB file: string data is a memoryview of the decompression buffer
    batch = OrcReader(orc_examples / "TestOrcFile.testSeek.orc").read_stripe(0)
    assert isinstance(batch.column("bytes1").data, memoryview)
    again = pickle.loads(pickle.dumps(batch))
    assert again.to_pylist() == batch.to_pylist()
    assert isinstance(again.column("bytes1").data, bytes)


@pytest.mark.parametrize("name", FILES)
def test_a_reader_sharing_another_readers_tail_reads_the_same(orc_examples: Path, name: str) -> None:
    # tail_of: the footer, statistics and stripe footers parsed by another reader of the file (closed since)
    first = OrcReader(orc_examples / name)
    want_stats = first.file_statistics
    first.writer_timezone(0)
    first.close()
    shared = OrcReader(orc_examples / name, tail_of=first)
    assert shared.file_statistics == want_stats and shared.stripes == first.stripes
    assert str(shared.schema) == str(first.schema) and shared.user_metadata == first.user_metadata
    assert shared.read().root.to_pylist() == OrcReader(orc_examples / name).read().root.to_pylist()
    assert shared.stripe_statistics == OrcReader(orc_examples / name).stripe_statistics
    # its containers are its own
    shared.stripes.clear()
    assert first.stripes


def test_a_reader_refuses_the_tail_of_a_file_of_another_size(orc_examples: Path) -> None:
    other = OrcReader(orc_examples / FILES[0])
    with pytest.raises(OrcError, match="bytes, not the"):
        OrcReader(orc_examples / FILES[1], tail_of=other)
