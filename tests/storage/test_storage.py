"""metastore/storage: listing, range reads and options over local paths and a real S3 server (moto_server)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as pa_orc
import pytest

from metastore import storage
from metastore.orcio import OrcReader
from metastore.storage import FileRef, StorageError, StorageOptions


def _tree(root: Path) -> None:
    (root / "ds=1" / "_tmp").mkdir(parents=True)
    (root / "ds=1" / ".staging").mkdir()
    (root / "ds=2").mkdir()
    (root / "ds=1" / "b.orc").write_bytes(b"bb")
    (root / "ds=1" / "a.orc").write_bytes(b"a")
    (root / "ds=1" / "_SUCCESS").write_bytes(b"")
    (root / "ds=1" / ".a.orc.crc").write_bytes(b"c")
    (root / "ds=1" / "_tmp" / "x.orc").write_bytes(b"x")
    (root / "ds=1" / ".staging" / "y.orc").write_bytes(b"y")
    (root / "ds=2" / "c.orc").write_bytes(b"ccc")


# ------------------------------------------------------------------------------------------------- local


def test_local_listing_skips_hidden_names_at_any_depth_in_name_order(tmp_path: Path) -> None:
    _tree(tmp_path / "t")
    refs = storage.list_files(str(tmp_path / "t"))
    assert [r.url for r in refs] == [str(tmp_path / "t" / p) for p in ("ds=1/a.orc", "ds=1/b.orc", "ds=2/c.orc")]
    for ref in refs:
        st = os.stat(ref.url)
        assert (ref.size, ref.mtime_ns, ref.version) == (st.st_size, st.st_mtime_ns, "")
    assert storage.list_files(f"file:{tmp_path / 't'}") == refs
    assert storage.list_files(f"file://{tmp_path / 't'}") == refs
    assert storage.list_files(str(tmp_path / "missing")) == []
    assert storage.list_dirs(str(tmp_path / "t")) == ["ds=1", "ds=2"]
    assert storage.list_dirs(str(tmp_path / "missing")) == []


def test_local_range_reads_count_what_they_read(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(256)) * 4)
    with storage.open_file(str(path)) as f:
        assert f.seek(0, os.SEEK_END) == 1024
        f.seek(1000)
        assert f.read(100) == (bytes(range(256)) * 4)[1000:]
        f.seek(10)
        assert f.read(5) == bytes(range(10, 15))
        assert (f.bytes_read, f.requests) == (29, 2)
    with pytest.raises(StorageError, match=r"cannot read .*missing\.orc"):
        storage.open_file(str(tmp_path / "missing.orc"))
    with pytest.raises(StorageError, match=r"cannot read .*missing\.orc"):
        storage.stat(str(tmp_path / "missing.orc"))


def test_publish_moves_a_finished_file_into_place(tmp_path: Path) -> None:
    target = str(tmp_path / "t" / "ds=1" / "f.orc")
    temporary = storage.temporary_file(target)
    assert temporary.parent == tmp_path / "t" / "ds=1" and temporary.name.startswith(".")
    temporary.write_bytes(b"ORC")
    storage.publish(temporary, target)
    assert Path(target).read_bytes() == b"ORC" and not temporary.exists()


def test_file_refs_pickle() -> None:
    ref = FileRef("s3://b/k/f.orc", 10, 123, "etag")
    options = StorageOptions.parse(["endpoint_url=http://127.0.0.1:9", "secret=s"])
    assert pickle.loads(pickle.dumps(ref)) == ref and ref.name == "f.orc"
    assert pickle.loads(pickle.dumps(options)) == options


def test_local_use_imports_no_fsspec(tmp_path: Path) -> None:
    _tree(tmp_path / "t")
    code = (
        "import sys; from metastore import storage; "
        f"refs = storage.list_files({str(tmp_path / 't')!r}); storage.open_file(refs[0]).read(); "
        "print([m for m in sys.modules if m.split('.')[0] in ('fsspec', 's3fs', 'botocore', 'aiobotocore')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ------------------------------------------------------------------------------------------------ options


def test_make_dir_creates_once_and_refuses_a_file(tmp_path: Path) -> None:
    assert storage.make_dir(f"{tmp_path}/new") is True
    assert storage.make_dir(f"file:{tmp_path}/new") is False  # exists already
    (tmp_path / "f").write_text("x")
    with pytest.raises(StorageError, match="is not a directory$"):
        storage.make_dir(f"{tmp_path}/f")
    with pytest.raises(StorageError, match="unable to create one"):
        storage.make_dir(f"{tmp_path}/f/sub")


def test_new_directories_inherit_the_nearest_ancestors_mode(tmp_path: Path) -> None:
    (tmp_path / "db").mkdir()
    (tmp_path / "db").chmod(0o750)
    storage.make_dir(f"file:{tmp_path}/db/t/p=1")
    assert (tmp_path / "db" / "t").stat().st_mode & 0o777 == 0o750
    assert (tmp_path / "db" / "t" / "p=1").stat().st_mode & 0o777 == 0o750


def test_no_mode_is_taken_from_a_world_writable_folder(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    old = os.umask(0o022)
    try:
        storage.make_dir(f"{shared}/d")
    finally:
        os.umask(old)
    assert (shared / "d").stat().st_mode & 0o777 == 0o755


def test_move_dir_moves_a_tree_within_one_store(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_text("x")
    assert storage.move_dir(f"{tmp_path}/a", f"file:{tmp_path}/b/c")
    assert (tmp_path / "b" / "c" / "f").read_text() == "x" and not (tmp_path / "a").exists()
    assert storage.exists(f"{tmp_path}/b/c") and not storage.exists(f"{tmp_path}/a")
    assert not storage.move_dir(f"{tmp_path}/missing", f"{tmp_path}/d"), "nothing to move"
    (tmp_path / "e").mkdir()
    with pytest.raises(StorageError, match="the target exists"):
        storage.move_dir(f"{tmp_path}/b/c", f"{tmp_path}/e")
    with pytest.raises(StorageError, match="different file systems"):
        storage.move_dir(f"{tmp_path}/b/c", "s3a://bucket/c")
    storage.delete(f"{tmp_path}/b")
    assert not (tmp_path / "b").exists()
    storage.delete(f"{tmp_path}/b")  # missing: nothing to do


def test_options_parse_types_nesting_and_hadoop_names() -> None:
    options = StorageOptions.parse([
        "anon=false", "client_kwargs.region_name=eu-west-1", "max_concurrency=4", 'config_kwargs={"a": 1}',
        "fs.s3a.access.key=AK", "fs.s3a.secret.key=SK", "fs.s3a.endpoint=minio:9000",
        "fs.s3a.connection.ssl.enabled=false", "fs.s3a.path.style.access=true",
    ])
    assert options.for_protocol("s3") == {
        "endpoint_url": "http://minio:9000",
        "config_kwargs": {"a": 1},
        "anon": False,
        "client_kwargs": {"region_name": "eu-west-1"},
        "max_concurrency": 4,
        "key": "AK",
        "secret": "SK",
    }
    # Hadoop's S3A names mean nothing to other stores
    assert "key" not in options.for_protocol("gs")


def test_options_never_show_secrets() -> None:
    options = StorageOptions.parse(["key=AKIAEXAMPLE", "secret=hunter2", "endpoint_url=http://h:1", "token=tkn"])
    text = repr(options)
    assert "hunter2" not in text and "AKIAEXAMPLE" not in text and "tkn" not in text and "http://h:1" in text
    with pytest.raises(StorageError) as err:
        StorageOptions.parse(["secret"])
    assert "not KEY=VALUE" in str(err.value)
    with pytest.raises(StorageError) as err:
        StorageOptions.parse(["secret={not json"])
    assert "{not json" not in str(err.value) and "secret" in str(err.value)
    with pytest.raises(StorageError, match="'endpoint' is not KEY=VALUE"):
        StorageOptions.parse(["endpoint"])


# ------------------------------------------------------------------------------------------------ S3


def _put(bucket: str, key: str, data: bytes) -> None:
    import fsspec

    fsspec.filesystem("s3").pipe_file(f"{bucket}/{key}", data)


def test_s3_listing_is_recursive_skips_hidden_names_and_maps_s3a(s3_bucket: str) -> None:
    for key, data in [("t/ds=1/b.orc", b"bb"), ("t/ds=1/a.orc", b"a"), ("t/ds=1/_SUCCESS", b""),
                      ("t/ds=1/_tmp/x.orc", b"x"), ("t/ds=1/.a.orc.crc", b"c"), ("t/ds=2/c.orc", b"ccc"),
                      ("t2/other.orc", b"o")]:
        _put(s3_bucket, key, data)
    refs = storage.list_files(f"s3a://{s3_bucket}/t/")
    assert [(r.url, r.size) for r in refs] == [
        (f"s3://{s3_bucket}/t/ds=1/a.orc", 1), (f"s3://{s3_bucket}/t/ds=1/b.orc", 2),
        (f"s3://{s3_bucket}/t/ds=2/c.orc", 3),
    ]
    assert all(r.mtime_ns > 0 and r.version for r in refs)
    assert storage.list_files(f"s3://{s3_bucket}/missing") == []
    assert storage.list_dirs(f"s3://{s3_bucket}/t") == ["ds=1", "ds=2"]
    assert storage.is_dir(f"s3://{s3_bucket}/t/ds=2") and not storage.is_dir(f"s3://{s3_bucket}/t/ds=3")
    assert storage.stat(f"s3a://{s3_bucket}/t/ds=2/c.orc") == refs[2]


def test_s3_rewrite_of_the_same_size_changes_the_version(s3_bucket: str) -> None:
    _put(s3_bucket, "t/f.orc", b"one")
    before = storage.stat(f"s3://{s3_bucket}/t/f.orc")
    _put(s3_bucket, "t/f.orc", b"two")
    after = storage.list_files(f"s3://{s3_bucket}/t")[0]  # a fresh listing, not s3fs's cached one
    assert after.size == before.size and after.version != before.version


def test_s3_orc_reads_are_ranged(s3_bucket: str, tmp_path: Path) -> None:
    n = 200_000
    rng = np.random.default_rng(7)
    table = pa.table({"a": rng.integers(0, 1 << 40, n), "b": rng.random(n), "c": [f"s{i}" for i in range(n)]})
    local = tmp_path / "f.orc"
    pa_orc.write_table(table, local, compression="uncompressed")
    import fsspec

    fsspec.filesystem("s3").put_file(str(local), f"{s3_bucket}/t/f.orc")
    (ref,) = storage.list_files(f"s3://{s3_bucket}/t")
    assert ref.size == local.stat().st_size
    with storage.open_file(ref) as f:
        reader = OrcReader(f)
        assert reader.num_rows == n and list(reader.schema.field_names) == ["a", "b", "c"]
        tail_bytes = f.bytes_read
        assert tail_bytes < 64 * 1024 and f.requests <= 2
        column = reader.read(columns=["b"])
        assert np.array_equal(column.column("b").to_numpy(), table["b"].to_numpy())
        # the other columns' streams were never fetched
        assert f.bytes_read < ref.size / 2


def test_s3_options_reach_the_store_without_the_environment(s3_server, s3_bucket: str, monkeypatch) -> None:
    _put(s3_bucket, "t/f.orc", b"abc")
    for key in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(key)
    options = StorageOptions.parse([f"fs.s3a.endpoint={s3_server.endpoint}", "fs.s3a.access.key=k",
                                    "fs.s3a.secret.key=s"])
    (ref,) = storage.list_files(f"s3a://{s3_bucket}/t", options)
    with storage.open_file(ref, options) as f:
        f.seek(1)
        assert f.read(2) == b"bc"


def test_unreachable_store_is_one_line_naming_the_location(monkeypatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with pytest.raises(StorageError) as err:
        storage.list_files("s3a://nowhere-bucket/t")
    message = str(err.value)
    assert message.startswith("cannot list s3a://nowhere-bucket/t: ") and "\n" not in message
    assert "127.0.0.1:9" in message


def test_unknown_scheme_is_a_clear_error() -> None:
    with pytest.raises(StorageError, match="no filesystem serves nosuchfs:// locations"):
        storage.list_files("nosuchfs://x/y")


def test_s3_directories_are_prefixes_made_moved_and_deleted_with_their_objects(s3_bucket: str) -> None:
    # Object stores have no directories: making one costs nothing and creates nothing (no bucket either).
    assert storage.make_dir(f"s3a://{s3_bucket}/t/p=1") is False
    assert storage.make_dir("s3a://no-such-bucket-here/t") is False
    assert not storage.exists(f"s3a://{s3_bucket}/t")
    for key in ("t/p=1/a.orc", "t/p=1/sub/b.orc", "t/p=10/c.orc"):
        _put(s3_bucket, key, b"x")
    assert storage.exists(f"s3a://{s3_bucket}/t/p=1") and storage.exists(f"s3://{s3_bucket}/t/p=1/a.orc")
    assert storage.move_dir(f"s3a://{s3_bucket}/t/p=1", f"s3a://{s3_bucket}/t/p=2")
    assert [r.url for r in storage.list_files(f"s3://{s3_bucket}/t")] == [
        f"s3://{s3_bucket}/t/p=10/c.orc", f"s3://{s3_bucket}/t/p=2/a.orc", f"s3://{s3_bucket}/t/p=2/sub/b.orc",
    ]
    assert not storage.move_dir(f"s3a://{s3_bucket}/t/p=1", f"s3a://{s3_bucket}/t/p=3"), "nothing left to move"
    with pytest.raises(StorageError, match="the target exists"):
        storage.move_dir(f"s3a://{s3_bucket}/t/p=2", f"s3a://{s3_bucket}/t/p=10")
    storage.delete(f"s3a://{s3_bucket}/t/p=2")
    assert [r.url for r in storage.list_files(f"s3://{s3_bucket}/t")] == [f"s3://{s3_bucket}/t/p=10/c.orc"]


def test_s3_gives_up_on_an_unreachable_store_within_bounded_retries_and_options_override_them(monkeypatch) -> None:
    # botocore's own default (legacy mode, 5 attempts with growing sleeps, each under s3fs's 5 retries) kept a
    # user waiting 8-20 s for "connection refused"; the defaults bound that, and --storage-option still wins.
    from metastore.storage import _remote

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    default = _remote.filesystem("s3", storage.StorageOptions())
    assert default.config_kwargs["retries"] == {"mode": "standard", "max_attempts": 2}
    assert default.config_kwargs["connect_timeout"] == 10
    given = storage.StorageOptions.parse(
        ['config_kwargs.retries={"max_attempts": 7}', "config_kwargs.connect_timeout=3", "config_kwargs.read_timeout=9"]
    )
    fs = _remote.filesystem("s3", given)
    assert fs.config_kwargs == {"retries": {"max_attempts": 7}, "connect_timeout": 3, "read_timeout": 9}
