"""metastore/locations.py: Hive's qualified locations, the local filesystem, filesystems by scheme."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metastore import locations
from metastore.errors import InvalidObject
from metastore.locations import FileInfo, LocalFileSystem, LocationError, local_path, qualify


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        # What the reference HMS 2.3.10 stored for the same input (Hadoop's Path + Warehouse.getDnsPath).
        ("/tmp/db.db", "file:/tmp/db.db"),
        ("/tmp/db.db/", "file:/tmp/db.db"),
        ("/tmp//x/./t/", "file:/tmp/x/t"),
        ("file:///tmp/x", "file:/tmp/x"),
        ("file:/tmp/x/", "file:/tmp/x"),
        ("file://localhost/tmp/x", "file:/tmp/x"),
        ("/a/b/../c", "file:/a/c"),
        ("/x/ds=2024%2F02", "file:/x/ds=2024%2F02"),  # taken literally: Hive's escaped partition directory
        ("/", "file:/"),
        ("s3a://bucket/some/path/", "s3a://bucket/some/path/"),
        ("hdfs://nn:8020/w", "hdfs://nn:8020/w"),
        (None, None),
        ("", ""),
    ],
)
def test_qualify(given: str | None, stored: str | None) -> None:
    assert qualify(given) == stored


@pytest.mark.parametrize("bad", ["relative/dir", "file:relative", "a\x00b"])
def test_qualify_refuses_what_has_no_place(bad: str) -> None:
    with pytest.raises(InvalidObject, match="relative path|NUL"):
        qualify(bad)


def test_qualify_directory_resolves_a_relative_warehouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert locations.qualify_directory("warehouse/") == f"file:{tmp_path}/warehouse"
    assert locations.qualify_directory("file:///w/") == "file:/w"


def test_local_path_reads_locations_literally() -> None:
    assert local_path("file:/x/ds=a%2Fb/h#1?q") == Path("/x/ds=a%2Fb/h#1?q")
    assert local_path("file:///x") == Path("/x")
    assert local_path("/x") == Path("/x")
    assert local_path("s3://b/x") is None
    assert local_path(None) is None


def test_same_location() -> None:
    assert locations.same_location("/x/", "file:///x")
    assert not locations.same_location("/x", "/y")
    assert locations.same_location(None, None)


def test_local_filesystem(tmp_path: Path) -> None:
    fs = LocalFileSystem()
    root = f"file:{tmp_path}/t"
    fs.make_dir(f"{root}/p=1")
    (tmp_path / "t" / "p=1" / "b.orc").write_bytes(b"0123456789")
    (tmp_path / "t" / "a.orc").write_bytes(b"xy")
    files = fs.list_files(root)
    assert [(Path(f.location).relative_to(tmp_path / "t").as_posix(), f.size) for f in files] == [
        ("a.orc", 2),
        ("p=1/b.orc", 10),
    ]
    assert all(isinstance(f, FileInfo) and f.mtime > 0 for f in files)
    with fs.open(f"{root}/p=1/b.orc") as fh:
        fh.seek(4)
        assert fh.read(3) == b"456"
    assert fs.list_files(f"{root}/missing") == []
    fs.rename(f"{root}/p=1", f"{root}/q/p=2")
    assert (tmp_path / "t" / "q" / "p=2" / "b.orc").exists()
    fs.delete(root)
    assert not fs.exists(root)
    fs.delete(root)  # missing: nothing to do


def test_new_directories_inherit_the_nearest_ancestors_mode(tmp_path: Path) -> None:
    (tmp_path / "db").mkdir()
    (tmp_path / "db").chmod(0o750)
    LocalFileSystem().make_dir(f"file:{tmp_path}/db/t/p=1")
    assert (tmp_path / "db" / "t").stat().st_mode & 0o777 == 0o750
    assert (tmp_path / "db" / "t" / "p=1").stat().st_mode & 0o777 == 0o750


def test_no_mode_is_taken_from_a_world_writable_folder(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    old = os.umask(0o022)
    try:
        LocalFileSystem().make_dir(f"{shared}/d")
    finally:
        os.umask(old)
    assert (shared / "d").stat().st_mode & 0o777 == 0o755


def test_ensure_dir(tmp_path: Path) -> None:
    assert locations.ensure_dir(f"{tmp_path}/new") is True
    assert locations.ensure_dir(f"file:{tmp_path}/new") is False  # exists already
    (tmp_path / "f").write_text("x")
    with pytest.raises(LocationError, match="is not a directory"):
        locations.ensure_dir(f"{tmp_path}/f")
    with pytest.raises(LocationError, match="unable to create"):
        locations.ensure_dir(f"{tmp_path}/f/sub")
    assert locations.ensure_dir("s3a://bucket/x") is False  # no filesystem for it here: left alone


def test_move_dir(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_text("x")
    assert locations.move_dir(f"{tmp_path}/a", f"file:{tmp_path}/b/c")
    assert (tmp_path / "b" / "c" / "f").read_text() == "x"
    assert not locations.move_dir(f"{tmp_path}/missing", f"{tmp_path}/d")
    (tmp_path / "e").mkdir()
    assert not locations.move_dir(f"{tmp_path}/b/c", f"{tmp_path}/e"), "never onto an existing target"
    assert not locations.move_dir(f"{tmp_path}/b/c", "s3a://bucket/c"), "not across filesystems"


def test_register_filesystem_serves_another_scheme(tmp_path: Path) -> None:
    class Prefixed(LocalFileSystem):
        """A stand-in for an fsspec filesystem: memtest://x is tmp_path/x."""

        @staticmethod
        def _path(location: str) -> Path:
            return tmp_path / location.removeprefix("memtest://")

    assert locations.filesystem_for("memtest://x") is None
    locations.register_filesystem("memtest", lambda _loc: Prefixed())
    try:
        locations.make_dir("memtest://bucket/d")
        assert (tmp_path / "bucket" / "d").is_dir()
        assert locations.exists("memtest://bucket/d")
        locations.delete_dir("memtest://bucket/d")
        assert not (tmp_path / "bucket" / "d").exists()
    finally:
        locations._FACTORIES.pop("memtest")
