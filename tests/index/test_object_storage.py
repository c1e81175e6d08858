"""Indexes with data files and index files on object storage, against a real S3 server on 127.0.0.1 (moto_server):
CREATE / SHOW / UPDATE / DROP INDEX, SELECT and EXPLAIN embedded with `--index-root s3://...`, and a server
whose index root is in the bucket answering the split filter over Thrift."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fsspec
import pytest
from server.harness import start_server
from sql.session import SqlSession

from metastore.client import ThriftMetastoreClient
from metastore.client.embedded import EmbeddedMetastoreClient
from metastore.index.model import Split
from metastore.index.predicate import Compare, Value, ValueKind, to_json
from metastore.orcio import OrcWriter


def _upload(fs: Any, tmp_path: Path, url: str, first: int, n: int) -> None:
    local = tmp_path / "staging.orc"
    with OrcWriter(str(local), "struct<id:bigint,s:string>", {"orc.stripe.size": "1200"}) as writer:
        for start in range(first, first + n, 100):
            ids = list(range(start, min(start + 100, first + n)))
            writer.write_batch({"id": ids, "s": [f"s{i}" for i in ids]})
    fs.put(str(local), url.replace("s3a://", "s3://"))


def _objects(fs: Any, prefix: str) -> list[str]:
    fs.invalidate_cache()
    return sorted(fs.find(prefix.replace("s3a://", "s3://").replace("s3://", "")))


@pytest.mark.parametrize("root", ["s3", "local"])
def test_indexes_on_object_storage(s3_bucket: str, tmp_path: Path, root: str) -> None:
    fs = fsspec.filesystem("s3", skip_instance_cache=True)
    data = f"s3a://{s3_bucket}/warehouse/t"
    index_root = f"s3://{s3_bucket}/indexes" if root == "s3" else str(tmp_path / "indexes")
    for ds, first in (("a", 0), ("b", 1000)):
        _upload(fs, tmp_path, f"{data}/ds={ds}/part-0.orc", first, 1000)
    with EmbeddedMetastoreClient(f"sqlite:///{tmp_path / 'ms.db'}", str(tmp_path / "wh"), index_root) as client:
        session = SqlSession(client)
        session.run(f"CREATE EXTERNAL TABLE t (id bigint, s string) PARTITIONED BY (ds string) STORED AS ORC "
                    f"LOCATION '{data}'; MSCK REPAIR TABLE t")
        session.run("CREATE INDEX ix_id USING btree ON t (id) WITH ('level' = 'STRIPE'); "
                    "CREATE INDEX ix_s USING bloom ON t (s); "
                    "CREATE INDEX ix_m USING minmax ON t (id) WITH ('level' = 'PARTITION')")
        records = {r.name: r for r in client.list_indexes()}
        assert all(p.location.startswith(index_root if root == "s3" else f"file:{index_root}")
                   for r in records.values() for p in r.parts)
        assert all(f.path.startswith(f"s3://{s3_bucket}/warehouse/t/ds=") for r in records.values()
                   for p in r.parts for f in p.files)
        if root == "s3":
            assert len(_objects(fs, index_root)) == sum(len(r.parts) for r in records.values())
        assert {r["index_name"]: r["status"] for r in session.rows("SHOW INDEX")} == dict.fromkeys(
            ["ix_id", "ix_m", "ix_s"], "OK")
        assert session.one("SHOW INDEX ix_id").rows[0][-1] == "OK"  # every block read back from the store

        got = session.one("SELECT id, s, ds FROM t WHERE id = 1234")
        assert got.rows == [[1234, "s1234", "b"]]
        assert "read 1 of 2 split(s), 1 stripe(s)" in (got.message or ""), got.message
        assert session.one("SELECT count(*) FROM t WHERE s IN ('s5', 's1999', 'x')").rows == [[2]]
        assert session.one("SELECT count(*) FROM t WHERE id BETWEEN 990 AND 1010").rows == [[21]]
        plan = session.one("EXPLAIN SELECT s FROM t WHERE id = 1234")
        assert [r[:5] for r in plan.rows if r[0] in ("ix_id", "(all)")] == [["ix_id", "BTREE", "id", 2, 1],
                                                                             ["(all)", "", "", 2, 1]]
        assert 0 < plan.rows[-1][5] <= next(r[5] for r in plan.rows if r[0] == "ix_id")

        # a new object: Out-of-sync, its splits read; UPDATE INDEX scans it alone and replaces its part files
        _upload(fs, tmp_path, f"{data}/ds=b/part-1.orc", 5000, 100)
        assert session.one("SHOW INDEX ix_m").rows[0][-1] == "Out-of-sync"
        assert session.one("SELECT s FROM t WHERE id = 5050").rows == [["s5050"]]
        before = _objects(fs, index_root) if root == "s3" else []
        message = session.one("UPDATE INDEX ix_m").message or ""
        assert "1 of 3 data file(s) scanned" in message
        assert session.one("SHOW INDEX ix_m").rows[0][-1] == "OK"
        if root == "s3":
            after = _objects(fs, index_root)
            # PARTITION level: ds=b's part file is replaced (the old one deleted by the shell), ds=a's kept
            assert len(after) == len(before)
            old = {p.partition: p.location.split("://", 1)[1] for p in records["ix_m"].parts}
            assert old["ds=a"] in after and old["ds=b"] in before and old["ds=b"] not in after
        session.run("DROP INDEX ix_s")
        if root == "s3":
            assert not [o for o in _objects(fs, index_root) if "/ix_s/" in o]


def test_server_with_an_index_root_in_the_bucket(s3_bucket: str, tmp_path: Path) -> None:
    fs = fsspec.filesystem("s3", skip_instance_cache=True)
    data = f"s3://{s3_bucket}/warehouse/u"
    _upload(fs, tmp_path, f"{data}/part-0.orc", 0, 1000)
    _upload(fs, tmp_path, f"{data}/part-1.orc", 1000, 1000)
    server = start_server(tmp_path / "serve", f"sqlite:///{tmp_path / 'ms.db'}", workers=1,
                          extra_args=["--warehouse", str(tmp_path / "wh"), "--index-root", f"s3://{s3_bucket}/idx"])
    try:
        with ThriftMetastoreClient(f"thrift://127.0.0.1:{server.port}") as client:
            session = SqlSession(client)
            session.run(f"CREATE EXTERNAL TABLE u (id bigint, s string) STORED AS ORC LOCATION '{data}'; "
                        "CREATE INDEX ix_u USING btree ON u (id)")
            record = client.get_index("default", "u", "ix_u")
            assert record.location == f"s3://{s3_bucket}/idx/default/u/id/ix_u"
            files = sorted((f for p in record.parts for f in p.files), key=lambda f: f.path)
            splits = [Split(f.path, 0, f.size, f.size, f.mtime_ns) for f in files]
            # the server reads the index file from the bucket (its environment's credentials)
            result = client.filter_splits("default", "u", to_json(Compare("id", "=", Value(ValueKind.INTEGER, "1500"))),
                                          splits)
            assert result.kept == (1,) and not result.warnings
            assert session.one("SELECT s FROM u WHERE id = 1500").rows == [["s1500"]]
            session.run("DROP INDEX ix_u")
            assert not _objects(fs, f"s3://{s3_bucket}/idx")
    finally:
        server.stop()
