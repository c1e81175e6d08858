"""metastore/locations.py: Hive's qualified locations, local paths, the store a location is on."""

from __future__ import annotations

from pathlib import Path

import pytest

from metastore import locations
from metastore.errors import InvalidObject
from metastore.locations import local_path, qualify


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


def test_store_of_names_one_store_per_scheme_and_bucket() -> None:
    assert locations.store_of("/x") == locations.store_of("file:///y") == ("file", "")
    assert locations.store_of("s3a://Bkt/x") == locations.store_of("s3://bkt/y") == ("s3", "bkt")
    assert locations.store_of("s3://other/x") != locations.store_of("s3://bkt/x")
    assert locations.store_of("gs://bkt/x") == ("gs", "bkt")
