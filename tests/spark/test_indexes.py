"""Indexes and Spark in local mode: CREATE / UPDATE INDEX with the Spark engine scan files on executors and write
the same index files as a local build (byte for byte); `metastore.spark.read_table` gives Spark only the files
with kept splits and returns exactly the matching rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sql.session import SqlSession

from metastore.client.embedded import EmbeddedMetastoreClient
from metastore.locations import local_path
from metastore.orcio import OrcWriter
from metastore.spark import read_table
from metastore.spark.read import plan_table_read

pytestmark = pytest.mark.spark


def _write(path: Path, first: int, n: int) -> list[dict[str, Any]]:
    rows = [{"id": (first + i) * 7919 % 100_003, "s": f"s{first + i}"} for i in range(n)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with OrcWriter(str(path), "struct<id:bigint,s:string>", {"orc.stripe.size": "1500"}) as writer:
        for start in range(0, n, 100):
            chunk = rows[start : start + 100]
            writer.write_batch({"id": [r["id"] for r in chunk], "s": [r["s"] for r in chunk]})
    return rows


def _setup(tmp_path: Path) -> tuple[str, EmbeddedMetastoreClient, dict[str, list[dict[str, Any]]]]:
    db = f"sqlite:///{tmp_path / 'ms.db'}"
    client = EmbeddedMetastoreClient(db, str(tmp_path / "warehouse"))
    SqlSession(client).run("CREATE DATABASE d; CREATE TABLE d.t (id bigint, s string) PARTITIONED BY (ds string) "
                           "STORED AS ORC")
    base = local_path(client.get_table("d", "t").sd.location)
    assert base is not None
    data: dict[str, list[dict[str, Any]]] = {}
    n = 0
    for ds in ("a", "b"):
        data[ds] = []
        for f in range(3):
            data[ds].extend(_write(base / f"ds={ds}" / f"part-{f}.orc", n, 300))
            n += 300
    SqlSession(client).run("MSCK REPAIR TABLE d.t")
    return db, client, data


def _part_bytes(client: EmbeddedMetastoreClient, name: str) -> dict[str, bytes]:
    return {p.key: (local_path(p.location) or Path()).read_bytes() for p in client.get_index("d", "t", name).parts}


def test_index_builds_on_spark_equal_local_builds(spark: Any, tmp_path: Path) -> None:
    _, client, _ = _setup(tmp_path)
    on_spark = SqlSession(client, spark_master="local[2]", analyze_engine="spark")
    local = SqlSession(client, analyze_engine="local")
    for kind, level in (("btree", "PARTITION"), ("bloom", "STRIPE"), ("minmax", "TABLE")):
        column = "s" if kind == "bloom" else "id"
        message = on_spark.one(f"CREATE INDEX ix USING {kind} ON d.t ({column}) WITH ('level' = '{level}')").message
        assert message is not None and "6 of 6 data file(s) scanned" in message
        built_on_spark = _part_bytes(client, "ix")
        local.run("DROP INDEX ix")
        local.run(f"CREATE INDEX ix USING {kind} ON d.t ({column}) WITH ('level' = '{level}')")
        assert _part_bytes(client, "ix") == built_on_spark, kind
        local.run("DROP INDEX ix")
    # UPDATE INDEX on Spark scans only the new file
    on_spark.run("CREATE INDEX ix USING btree ON d.t (id)")
    base = local_path(client.get_table("d", "t").sd.location) or Path()
    _write(base / "ds=b" / "part-9.orc", 10_000, 50)
    message = on_spark.one("UPDATE INDEX ix").message or ""
    assert "1 of 7 data file(s) scanned" in message, message
    assert on_spark.rows("SHOW INDEX ix")[0]["status"] == "OK"
    client.close()


def test_read_table_reads_only_kept_files(spark: Any, tmp_path: Path) -> None:
    db, client, data = _setup(tmp_path)
    SqlSession(client).run("CREATE INDEX ix USING btree ON d.t (id) WITH ('level' = 'STRIPE')")
    client.close()
    target = data["b"][400]
    other = data["a"][5]
    where = f"id = {target['id']} OR (ds = 'a' AND id IN ({other['id']}, -7) AND s IN ('s5', 'nope'))"
    plan = plan_table_read("d.t", where, db)
    kept = {f.path for f in plan.kept_files()}
    assert len(kept) == 2 and len(plan.files) == 6
    df = read_table(spark, "d.t", where, db)
    assert df.columns == ["id", "s", "ds"]
    rows = sorted(tuple(r) for r in df.collect())
    assert rows == sorted([(target["id"], target["s"], "b"), (other["id"], "s5", "a")])
    assert {f.replace("file:///", "file:/") for f in df.inputFiles()} == kept
    # every row, and none (an index proving nothing matches reads no file)
    assert read_table(spark, "d.t", None, db).count() == 1800
    nothing = read_table(spark, "d.t", "id = -1", db)
    assert nothing.inputFiles() == [] and nothing.count() == 0
    json_form = '{"op": "between", "column": "id", "low": {"type": "integer", "value": "0"}, ' \
                '"high": {"type": "integer", "value": "99"}}'
    expected = sum(1 for rows in data.values() for r in rows if 0 <= r["id"] <= 99)
    assert read_table(spark, "d.t", json_form, db).count() == expected
