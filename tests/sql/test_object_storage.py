"""The shell on tables in object storage (issue 10 s3), against a real S3 server on 127.0.0.1 (moto_server):
LOAD DATA / INSERT write ORC into the bucket, MSCK REPAIR finds partition prefixes, ANALYZE reads files with
range reads and gives exactly what the same files give on local disk; `metastore orc meta|cat` read s3:// files;
an unreachable store is one clear line and exit 1, a corrupt object is named."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import fsspec
import numpy as np
import pyarrow as pa

from metastore import storage
from metastore.client.embedded import EmbeddedMetastoreClient
from sql.ground_truth import COLUMNS, CREATE_COLUMNS, expected, make_table, write_csv, write_pyarrow_orc
from sql.session import SqlSession
from sql.test_analyze import check

HIVE_TYPES = {name: hive for name, hive, _ in COLUMNS}
NAMES = list(HIVE_TYPES)


def _stats(client: EmbeddedMetastoreClient, table: str) -> tuple[dict, dict]:
    names = client.list_partition_names("s", table)
    parts = {n: {e.column: e.stats for e in es}
             for n, es in client.partition_statistics("s", table, names, NAMES).items()}
    return parts, {e.column: e.stats for e in client.table_statistics("s", table, NAMES)}


def _basic(client: EmbeddedMetastoreClient, table: str) -> dict[str, tuple[str, str, str]]:
    return {
        "/".join(p.values): (p.parameters["numRows"], p.parameters["numFiles"], p.parameters["rawDataSize"])
        for p in client.list_partitions("s", table)
    }


def test_tables_in_s3_written_by_our_writer_and_pyarrow(s3_bucket: str, embedded, tmp_path: Path) -> None:
    session = SqlSession(embedded, None)  # no cache: every ANALYZE reads
    local_root = tmp_path / "local"
    s3_root = f"s3a://{s3_bucket}/warehouse/s.db"
    session.run(
        "CREATE DATABASE s; USE s;"
        f"CREATE TABLE remote ({CREATE_COLUMNS}) PARTITIONED BY (ds string) STORED AS ORC LOCATION '{s3_root}/remote' "
        "TBLPROPERTIES ('orc.compress'='ZSTD');"
        f"CREATE TABLE here ({CREATE_COLUMNS}) PARTITIONED BY (ds string) STORED AS ORC LOCATION '{local_root}' "
        "TBLPROPERTIES ('orc.compress'='ZSTD');"
    )
    rng = np.random.default_rng(5)
    ours, theirs, copied = make_table(rng, 6000, 4000), make_table(rng, 5000, 3000), make_table(rng, 800, 700)
    write_csv(ours, tmp_path / "ours.csv")
    write_pyarrow_orc(theirs, tmp_path / "theirs.orc")
    write_pyarrow_orc(copied, tmp_path / "copied.orc")
    fs = fsspec.filesystem("s3")
    for table in ("remote", "here"):
        # our writer: LOAD DATA from CSV, and an ORC file copied in as it is
        session.run(f"LOAD DATA LOCAL INPATH '{tmp_path / 'ours.csv'}' INTO TABLE {table} PARTITION (ds='ours')")
        session.run(f"LOAD DATA LOCAL INPATH '{tmp_path / 'copied.orc'}' INTO TABLE {table} PARTITION (ds='copied')")
    # pyarrow's file placed in a partition folder (prefix), found by MSCK REPAIR
    fs.put_file(str(tmp_path / "theirs.orc"), f"{s3_bucket}/warehouse/s.db/remote/ds=pyarrow/part-0.orc")
    fs.pipe_file(f"{s3_bucket}/warehouse/s.db/remote/ds=pyarrow/_SUCCESS", b"")
    write_pyarrow_orc(theirs, local_root / "ds=pyarrow" / "part-0.orc")
    for table in ("remote", "here"):
        assert session.one(f"MSCK REPAIR TABLE {table}").message == "1 partition(s) added"
    remote_part = embedded.get_partition("s", "remote", ["pyarrow"])
    assert remote_part.sd.location == f"{s3_root}/remote/ds=pyarrow"

    # (that the object store is read with exactly the byte ranges of a local read is checked on identical files
    # in tests/stats/test_harvest_storage.py; our writer's files differ in their KLL metadata between tables)
    for table in ("remote", "here"):
        session.one(f"ANALYZE TABLE {table} COMPUTE STATISTICS FOR ALL COLUMNS")
    remote_parts, remote_table = _stats(embedded, "remote")
    here_parts, here_table = _stats(embedded, "here")
    assert remote_parts == here_parts and remote_table == here_table
    assert _basic(embedded, "remote") == _basic(embedded, "here")
    for name, data in (("ds=ours", ours), ("ds=pyarrow", theirs), ("ds=copied", copied)):
        for column, hive in HIVE_TYPES.items():
            check(remote_parts[name][column], expected(data.column(column), hive), 0.02, f"{name} {column}")
    whole = pa.concat_tables([ours, theirs, copied])
    for column, hive in HIVE_TYPES.items():
        check(remote_table[column], expected(whole.column(column), hive), 0.04, f"table {column}")


def test_insert_overwrite_and_msck_sync_on_s3(s3_bucket: str, embedded) -> None:
    session = SqlSession(embedded, None)
    root = f"s3://{s3_bucket}/t"
    session.run(f"CREATE DATABASE s; USE s; CREATE TABLE t (k string, v int) PARTITIONED BY (p int) LOCATION '{root}';")
    session.run("INSERT INTO t PARTITION (p=1) VALUES ('a', 1), ('b', 2); INSERT INTO t PARTITION (p=1) VALUES ('c', 3)")
    session.run("INSERT INTO t PARTITION (p=2) VALUES ('z', 26)")
    assert len(storage.list_files(f"{root}/p=1")) == 2
    part = embedded.get_partition("s", "t", ["1"])
    assert (part.parameters["numRows"], part.parameters["numFiles"]) == ("3", "2")
    session.run("INSERT OVERWRITE TABLE t PARTITION (p=1) VALUES ('only', 9)")
    (left,) = storage.list_files(f"{root}/p=1")
    part = embedded.get_partition("s", "t", ["1"])
    assert (part.parameters["numRows"], part.parameters["numFiles"], part.parameters["totalSize"]) == (
        "1", "1", str(left.size))
    rows = session.rows("ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS")
    assert [(r["partition"], r["num_rows"], r["num_files"]) for r in rows] == [("p=1", 1, 1), ("p=2", 1, 1)]
    # the objects of p=2 go; MSCK sees the prefix is gone
    fsspec.filesystem("s3").rm(f"{s3_bucket}/t/p=2", recursive=True)
    result = session.one("MSCK REPAIR TABLE t SYNC PARTITIONS")
    assert result.rows == [["t:p=2", "dropped"]]
    assert embedded.list_partition_names("s", "t") == ["p=1"]


def test_a_corrupt_object_fails_its_partition_naming_it(s3_bucket: str, embedded) -> None:
    session = SqlSession(embedded, None)
    session.run(f"CREATE DATABASE s; USE s; CREATE TABLE t (k string) PARTITIONED BY (p int) "
                f"LOCATION 's3a://{s3_bucket}/t'; INSERT INTO t PARTITION (p=1) VALUES ('a');"
                "INSERT INTO t PARTITION (p=2) VALUES ('b');")
    fsspec.filesystem("s3").pipe_file(f"{s3_bucket}/t/p=2/broken.orc", b"ORC not really")
    result = session.one("ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS")
    assert result.failed
    assert f"s3://{s3_bucket}/t/p=2/broken.orc" in (result.message or "")
    assert list(embedded.partition_statistics("s", "t", ["p=1", "p=2"], ["k"])) == ["p=1"]


# ------------------------------------------------------------------------------------------ the commands


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from metastore.cli import main; raise SystemExit(main())", *args],
                          capture_output=True, text=True, timeout=180, env=env, input="")


def _env(server_env: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("METASTORE_", "AWS_"))}
    env.update(server_env or {})
    env.update(extra)
    return env


def test_orc_meta_and_cat_read_s3_files(s3_server, s3_bucket: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    local = tmp_path / "f.orc"
    write_pyarrow_orc(make_table(rng, 2000, 1000), local)
    fsspec.filesystem("s3").put_file(str(local), f"{s3_bucket}/d/f.orc")
    env = _env(s3_server.env())
    for command in (["orc", "meta"], ["orc", "cat"]):
        here = _run([*command, str(local)], env)
        there = _run([*command, f"s3a://{s3_bucket}/d/f.orc"], env)
        assert here.returncode == 0 and there.returncode == 0, there.stderr
        assert there.stdout.replace(f"s3://{s3_bucket}/d/f.orc", str(local)) == here.stdout


def test_storage_options_reach_the_store_and_secrets_stay_hidden(s3_server, s3_bucket: str, tmp_path: Path) -> None:
    from s3server import ACCESS_KEY, SECRET_KEY

    fsspec.filesystem("s3").pipe_file(f"{s3_bucket}/d/f.orc", b"garbage, not ORC")
    env = _env(AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull, AWS_DEFAULT_REGION="us-east-1")
    options = ["--storage-option", f"fs.s3a.endpoint={s3_server.endpoint}", "--storage-option",
               f"fs.s3a.access.key={ACCESS_KEY}", "--storage-option", f"fs.s3a.secret.key={SECRET_KEY}"]
    db = f"sqlite:///{tmp_path / 'ms.db'}"
    script = (f"CREATE TABLE t (k string) STORED AS ORC LOCATION 's3a://{s3_bucket}/t';"
              "INSERT INTO t VALUES ('x'), ('y'); ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS;")
    done = _run(["sql", "--db", db, "--warehouse", str(tmp_path / "w"), "--no-stats-cache", *options, "-e", script], env)
    assert done.returncode == 0, done.stderr
    assert "analyzed the table of default.t, 1 column(s): 1 file(s) read" in done.stderr
    bad = _run(["orc", "meta", f"s3://{s3_bucket}/d/f.orc", *options], env)
    assert bad.returncode == 1 and f"s3://{s3_bucket}/d/f.orc" in bad.stderr
    for proc in (done, bad):
        assert SECRET_KEY not in proc.stdout + proc.stderr and ACCESS_KEY not in proc.stdout + proc.stderr
    malformed = _run(["orc", "meta", "s3://b/k.orc", "--storage-option", "secret"], env)
    assert malformed.returncode == 1
    assert malformed.stderr.strip() == (
        "metastore orc: error: --storage-option (text hidden: it may hold a secret) is not KEY=VALUE")


def test_an_unreachable_store_is_one_line_and_exit_1(tmp_path: Path) -> None:
    env = _env(AWS_ENDPOINT_URL="http://127.0.0.1:9", AWS_ACCESS_KEY_ID="k", AWS_SECRET_ACCESS_KEY="s",
               AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull)
    db = f"sqlite:///{tmp_path / 'ms.db'}"
    script = ("CREATE TABLE t (k string) STORED AS ORC LOCATION 's3a://nowhere-bucket/t';"
              "ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS;")
    proc = _run(["sql", "--db", db, "--warehouse", str(tmp_path / "w"), "--no-stats-cache", "-e", script], env)
    assert proc.returncode == 1
    # CREATE TABLE says OK (the metastore does not touch the store); ANALYZE fails in one line and ends the run
    lines = proc.stderr.strip().splitlines()
    assert lines[:-1] == ["OK"]
    assert lines[-1].startswith("Error: line 1:") and "cannot list s3a://nowhere-bucket/t: " in lines[-1]
    assert "127.0.0.1:9" in lines[-1]
    meta = _run(["orc", "meta", "s3://nowhere-bucket/x.orc"], env)
    lines = meta.stderr.strip().splitlines()
    assert meta.returncode == 1 and len(lines) == 1 and "cannot read s3://nowhere-bucket/x.orc" in lines[0]
