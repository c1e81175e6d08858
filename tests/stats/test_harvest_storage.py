"""Harvest over object storage (a real S3 server on 127.0.0.1): the same answers and the same byte ranges as
over local files, in worker processes too; per-file results keyed by object version; corrupt objects named."""

from __future__ import annotations

from pathlib import Path

import fsspec
import pyarrow.orc as po
import pytest
from test_harvest_incremental import FILE_TYPES, _same, _table

from metastore import storage
from metastore.stats.filecache import FileStatsCache
from metastore.stats.harvest import HarvestError, analyze_files, basic_stats


def _upload(tmp_path: Path, bucket: str, count: int) -> tuple[list[Path], str]:
    fs = fsspec.filesystem("s3")
    local = []
    for k in range(count):
        path = tmp_path / "local" / f"ds={k % 2}" / f"part-{k}.orc"
        path.parent.mkdir(parents=True, exist_ok=True)
        po.write_table(_table(k).drop(["code"]), path, compression="zstd", stripe_size=64 * 1024)
        fs.put_file(str(path), f"{bucket}/t/ds={k % 2}/part-{k}.orc")
        local.append(path)
    return sorted(local), f"s3a://{bucket}/t"


@pytest.mark.parametrize("workers", [1, 2])
def test_s3_files_give_the_local_answer_reading_the_same_bytes(tmp_path: Path, s3_bucket: str, workers: int):
    local, root = _upload(tmp_path, s3_bucket, 4)
    refs = storage.list_files(root)
    assert [r.name for r in refs] == [p.name for p in local]
    remote = analyze_files(refs, list(FILE_TYPES), hive_types=FILE_TYPES, workers=workers)
    here = analyze_files(local, list(FILE_TYPES), hive_types=FILE_TYPES, workers=1)
    _same(remote, here)
    assert remote.files_read == 4 and remote.bytes_read == here.bytes_read
    # only what the analysis needs travels, never whole files twice over
    assert remote.bytes_read <= sum(r.size for r in refs) + 4 * 16 * 1024
    assert basic_stats(refs) == basic_stats(local)
    # URLs work as well as listed refs (each is stat'ed)
    assert basic_stats([r.url.replace("s3://", "s3a://") for r in refs]).num_rows == basic_stats(local).num_rows


def test_s3_results_are_reused_until_the_object_changes(tmp_path: Path, s3_bucket: str):
    local, root = _upload(tmp_path, s3_bucket, 3)
    with FileStatsCache(tmp_path / "cache.sqlite") as cache:
        first = analyze_files(storage.list_files(root), list(FILE_TYPES), hive_types=FILE_TYPES, cache=cache)
        assert (first.files_read, first.files_reused) == (3, 0)
        again = analyze_files(storage.list_files(root), list(FILE_TYPES), hive_types=FILE_TYPES, cache=cache)
        assert (again.files_read, again.files_reused, again.bytes_read) == (0, 3, 0)
        # rewrite one object with other rows
        changed = tmp_path / "changed.orc"
        po.write_table(_table(99).drop(["code"]), changed, compression="zstd")
        target = [r for r in storage.list_files(root) if r.name == "part-1.orc"][0]
        fsspec.filesystem("s3").put_file(str(changed), target.url)
        refs = storage.list_files(root)
        assert [r for r in refs if r.name == "part-1.orc"][0].version != target.version
        third = analyze_files(refs, list(FILE_TYPES), hive_types=FILE_TYPES, cache=cache)
        assert (third.files_read, third.files_reused) == (1, 2)
        fresh = [p for p in local if p.name != "part-1.orc"] + [changed]
        _same(third, analyze_files(fresh, list(FILE_TYPES), hive_types=FILE_TYPES, workers=1))


def test_a_corrupt_object_is_named(tmp_path: Path, s3_bucket: str):
    fsspec.filesystem("s3").pipe_file(f"{s3_bucket}/t/bad.orc", b"ORC" + b"\x07" * 200)
    refs = storage.list_files(f"s3://{s3_bucket}/t")
    with pytest.raises(HarvestError, match=rf"cannot analyze s3://{s3_bucket}/t/bad\.orc: not a readable ORC file"):
        analyze_files(refs, ["id"], hive_types=FILE_TYPES)
    with pytest.raises(HarvestError, match=rf"cannot analyze s3://{s3_bucket}/t/missing\.orc"):
        basic_stats([f"s3://{s3_bucket}/t/missing.orc"])
