"""The per-file statistics cache: validity by size and mtime, updates, format versions, sharing between
processes, the default location and clear errors."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from metastore.stats import filecache
from metastore.stats.filecache import CACHE_ENV, FileStatsCache, FileStatsCacheError, default_cache_path


def test_entries_are_valid_only_for_the_size_and_mtime_they_were_stored_for(tmp_path: Path):
    cache = FileStatsCache(tmp_path / "c.sqlite")
    cache.put("/data/a.orc", 100, 5, b"info", {"x": b"1", "y": b"2"})
    got = cache.get("/data/a.orc", 100, 5)
    assert got is not None and got.info == b"info" and got.entries == {"x": b"1", "y": b"2"}
    assert cache.get("/data/a.orc", 101, 5) is None
    # the stale version is gone now, even for the old key
    assert cache.get("/data/a.orc", 100, 5) is None
    assert len(cache) == 0
    cache.close()


def test_put_adds_entries_to_the_same_version_and_replaces_other_versions(tmp_path: Path):
    with FileStatsCache(tmp_path / "c.sqlite") as cache:
        cache.put("a.orc", 1, 1, b"i1", {"x": b"1"})
        cache.put("a.orc", 1, 1, b"i2", {"y": b"2"})
        got = cache.get("a.orc", 1, 1)
        assert got is not None and got.entries == {"x": b"1", "y": b"2"} and got.info == b"i2"
        # relative paths are keyed absolutely
        assert got.path == str(Path("a.orc").absolute())
        cache.put_many([("a.orc", 2, 1, b"i3", {"z": b"3"}), ("b.orc", 7, 7, b"b", {})])
        got = cache.get("a.orc", 2, 1)
        assert got is not None and got.entries == {"z": b"3"}
        assert cache.get("b.orc", 7, 7) is not None
        cache.forget("b.orc")
        assert cache.get("b.orc", 7, 7) is None
        cache.clear()
        assert len(cache) == 0


def test_lookup_many_answers_as_lookup_per_partition_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from metastore.storage import FileRef

    # small statements: the batching is exercised with a handful of files
    monkeypatch.setattr(filecache, "_LOOKUP_BATCH", 2)
    with FileStatsCache(tmp_path / "c.sqlite") as cache:
        cache.put_many([
            (str(tmp_path / f"f{i}.orc"), 10 + i, 5, f"i{i}".encode(), {"x": bytes([i]), "y": b"y"}, "")
            for i in range(5)
        ])
        cache.put(str(tmp_path / "s3.orc"), 3, 3, b"s", {}, "etag-1")
        refs = {
            "ds=1": [FileRef(str(tmp_path / "f0.orc"), 10, 5), FileRef(str(tmp_path / "f1.orc"), 11, 5),
                     FileRef(str(tmp_path / "f2.orc"), 99, 5)],  # f2 changed size: stale
            "ds=2": [FileRef(str(tmp_path / "f3.orc"), 13, 5), FileRef(str(tmp_path / "f4.orc"), 14, 6),  # mtime
                     FileRef(str(tmp_path / "missing.orc"), 1, 1), FileRef(str(tmp_path / "s3.orc"), 3, 3, "etag-2")],
        }
        got = cache.lookup_many(refs)
        assert sorted(got) == [str(tmp_path / "f0.orc"), str(tmp_path / "f1.orc"), str(tmp_path / "f3.orc")]
        f3 = got[str(tmp_path / "f3.orc")]
        assert (f3.partition, f3.size, f3.mtime_ns, f3.info, f3.entries) == ("ds=2", 13, 5, b"i3",
                                                                             {"x": b"\x03", "y": b"y"})
        # the stale versions were forgotten, as get forgets them; what lookup finds is the same
        assert len(cache) == 3
        per_partition = {}
        for partition, files in refs.items():
            per_partition.update(cache.lookup(files, partition))
        assert per_partition == got


def test_a_cache_of_another_format_version_starts_empty(tmp_path: Path):
    path = tmp_path / "c.sqlite"
    with FileStatsCache(path) as cache:
        cache.put("/a", 1, 1, b"i", {"x": b"1"})
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version={filecache.FORMAT_VERSION + 1}")
    conn.commit()
    conn.close()
    with FileStatsCache(path) as cache:
        assert cache.get("/a", 1, 1) is None
    with FileStatsCache(path) as cache:  # and it is usable again afterwards
        cache.put("/a", 1, 1, b"i", {"x": b"1"})
        assert cache.get("/a", 1, 1) is not None


def _writer(path: str, worker: int) -> None:
    cache = FileStatsCache(path)
    for k in range(40):
        cache.put(f"/f{worker}-{k}", k, k, b"info", {"c": bytes([worker, k])})
    cache.close()


def test_several_processes_share_one_cache(tmp_path: Path):
    path = str(tmp_path / "shared.sqlite")
    FileStatsCache(path).close()
    context = multiprocessing.get_context("spawn")
    procs = [context.Process(target=_writer, args=(path, w)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with FileStatsCache(path) as cache:
        assert len(cache) == 120
        got = cache.get("/f2-39", 39, 39)
        assert got is not None and got.entries == {"c": bytes([2, 39])}


def test_default_location_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    target = tmp_path / "sub" / "stats.sqlite"
    monkeypatch.setenv(CACHE_ENV, str(target))
    assert default_cache_path() == target
    with FileStatsCache.open_default() as cache:
        assert cache.path == target
    assert target.exists()
    monkeypatch.delenv(CACHE_ENV)
    assert default_cache_path().name == "analyze-cache.sqlite"
    assert "metastore" in str(default_cache_path())


def test_an_unusable_location_is_a_clear_error(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(FileStatsCacheError, match=f"cannot open the statistics cache {blocker}/c.sqlite"):
        FileStatsCache(blocker / "c.sqlite")
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database" * 100)
    with pytest.raises(FileStatsCacheError, match="garbage.sqlite"):
        FileStatsCache(garbage)
