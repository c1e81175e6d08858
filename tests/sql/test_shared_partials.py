"""Incremental ANALYZE from any host (issue 10 s2): two shells in separate processes, each with its own local
cache, against one server. Per-file results live in the metastore's database, so the second shell's re-ANALYZE
after one partition changed reads only that partition's new and rewritten files, and gives the statistics a
from-scratch ANALYZE gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from server.harness import ServerProcess, start_server

from metastore.client import ThriftMetastoreClient
from sql.ground_truth import COLUMNS, CREATE_COLUMNS, make_table, write_pyarrow_orc

NAMES = [name for name, _, _ in COLUMNS]
PARTS = ["p0", "p1", "p2", "p3"]


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("shared-partials")
    url = f"sqlite:///{workdir / 'ms.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    if request.param == "postgresql":
        from metastore.store import migrate

        migrate.upgrade(url)
    proc = start_server(workdir, url, workers=2)
    yield proc
    proc.stop()


def shell(server: ServerProcess, cache: Path, script: str, *extra: str) -> list[list[dict]]:
    """Run `metastore sql --connect` in its own process with its own local cache; the JSON result of each
    statement."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("METASTORE_")}
    env["METASTORE_ANALYZE_CACHE"] = str(cache)
    proc = subprocess.run(
        [sys.executable, "-m", "metastore.sql", "--connect", f"thrift://127.0.0.1:{server.port}", "--output", "json",
         "--database", "shared", *extra, "-e", script],
        capture_output=True, text=True, timeout=300, env=env, input="",
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def _work(rows: list[dict]) -> dict[str, tuple[int, int]]:
    return {r["partition"]: (r["files_read"], r["files_reused"]) for r in rows}


def _stored(remote: ThriftMetastoreClient) -> dict:
    """Every partition's and the table's statistics as stored (lastAnalyzed left out: a clock)."""
    def plain(entries):
        return {e.column: e.stats for e in entries}

    names = remote.list_partition_names("shared", "t")
    parts = {n: plain(es) for n, es in remote.partition_statistics("shared", "t", names, NAMES).items()}
    return {"partitions": parts, "table": plain(remote.table_statistics("shared", "t", NAMES))}


def test_a_second_shell_reads_only_the_changed_partition(server: ServerProcess, tmp_path: Path) -> None:
    rng = np.random.default_rng(10)
    root = tmp_path / "data" / "t"
    for part in PARTS:
        for k in range(2):
            write_pyarrow_orc(make_table(rng, 3000, 2000), root / f"ds={part}" / f"f{k}.orc")
    cache_a, cache_b = tmp_path / "host-a.sqlite", tmp_path / "host-b.sqlite"
    shell(server, cache_a, f"CREATE DATABASE shared; USE shared; CREATE EXTERNAL TABLE t ({CREATE_COLUMNS}) "
          f"PARTITIONED BY (ds string) STORED AS ORC LOCATION '{root}'; MSCK REPAIR TABLE t;", "--database", "default")

    (first,) = shell(server, cache_a, "ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS;")
    assert _work(first) == {f"ds={p}": (2, 0) for p in PARTS}

    # one partition changes: a file rewritten with other rows, one added
    write_pyarrow_orc(make_table(rng, 2500, 1500), root / "ds=p2" / "f1.orc")
    write_pyarrow_orc(make_table(rng, 1000, 900), root / "ds=p2" / "f2.orc")
    (second,) = shell(server, cache_b, "ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS;")
    assert _work(second) == {"ds=p0": (0, 2), "ds=p1": (0, 2), "ds=p2": (2, 1), "ds=p3": (0, 2)}
    # against a server neither shell kept anything locally: the results live in the metastore
    for cache in (cache_a, cache_b):
        assert not cache.exists() or cache.stat().st_size == 0 or _local_entries(cache) == 0

    with ThriftMetastoreClient(f"thrift://127.0.0.1:{server.port}") as remote:
        incremental = _stored(remote)
        stored_files = remote.get_file_partials("shared", "t", ["ds=p2"])
        assert sorted(Path(f.path).name for f in stored_files) == ["f0.orc", "f1.orc", "f2.orc"]
        # a file deleted from storage is forgotten by the next ANALYZE of its partition
        (root / "ds=p3" / "f0.orc").unlink()
        (third,) = shell(server, cache_b, "ANALYZE TABLE t PARTITION (ds='p3') COMPUTE STATISTICS FOR COLUMNS;")
        assert _work(third) == {"ds=p3": (0, 1)}
        assert [Path(f.path).name for f in remote.get_file_partials("shared", "t", ["ds=p3"])] == ["f1.orc"]
        # p3 is back to its deleted file's statistics; put it back and compare everything with a fresh ANALYZE
        shell(server, cache_b, "ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS;", "--no-stats-cache")
        fresh = _stored(remote)
    del fresh["partitions"]["ds=p3"], incremental["partitions"]["ds=p3"]
    assert incremental["partitions"] == fresh["partitions"]


def _local_entries(cache: Path) -> int:
    import sqlite3

    with sqlite3.connect(cache) as conn:
        try:
            return int(conn.execute("SELECT count(*) FROM cached_file").fetchone()[0])
        except sqlite3.Error:
            return 0
