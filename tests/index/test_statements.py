"""The shell's index statements and SELECT, embedded (`--db`) and against `metastore serve` (`--connect`, through
the metastore_* extension calls) on SQLite and PostgreSQL: CREATE / SHOW / UPDATE / DROP INDEX with openLooKeng's
defaults and errors, SELECT and EXPLAIN SELECT reading only the splits the indexes keep."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sql.session import SqlSession

from metastore.client import MetastoreClient
from metastore.client.embedded import EmbeddedMetastoreClient
from metastore.locations import local_path
from metastore.orcio import OrcReader, OrcWriter
from metastore.sql.errors import SqlError

COUNTRIES = ["de", "fr", "it", "jp", "us"]


def _rows(n: int, first: int) -> list[dict[str, Any]]:
    # id unsorted (a permutation), s unique text, c low-cardinality
    return [{"id": (first + i) * 7919 % 100_003, "s": f"s{first + i}", "c": COUNTRIES[(first + i) // 200 % 5]}
            for i in range(n)]


def _write(path: Path, rows: list[dict[str, Any]], stripe_rows: int = 100) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    options = {"orc.stripe.size": "1500", "orc.bloom.filter.columns": "s"}  # stripes of about 80 rows
    with OrcWriter(str(path), "struct<id:bigint,s:string,c:string>", options) as writer:
        for start in range(0, len(rows), stripe_rows):
            chunk = rows[start : start + stripe_rows]
            writer.write_batch({k: [r[k] for r in chunk] for k in ("id", "s", "c")})


def _table(session: SqlSession, client: MetastoreClient) -> tuple[Path, dict[str, list[dict[str, Any]]]]:
    """db.t partitioned by ds with two partitions of two files each (400 rows a file, about 5 stripes each)."""
    session.run("CREATE DATABASE IF NOT EXISTS db; USE db; "
                "CREATE TABLE t (id bigint, s string, c string, b binary) PARTITIONED BY (ds string) STORED AS ORC")
    base = local_path(client.get_table("db", "t").sd.location)
    assert base is not None
    data: dict[str, list[dict[str, Any]]] = {}
    n = 0
    for ds in ("a", "b"):
        data[ds] = []
        for f in range(2):
            rows = _rows(400, n)
            n += 400
            _write(base / f"ds={ds}" / f"part-{f}.orc", rows)
            data[ds].extend(rows)
    assert session.one("MSCK REPAIR TABLE t").message == "2 partition(s) added"
    return base, data


def _show(session: SqlSession, text: str = "SHOW INDEX") -> dict[str, dict[str, Any]]:
    return {r["index_name"]: r for r in session.rows(text)}


def test_index_statements(client: MetastoreClient, tmp_path: Path) -> None:
    stream = io.StringIO()
    session = SqlSession(client, None, progress=True, progress_stream=stream)
    base, _ = _table(session, client)

    created = session.one("CREATE INDEX ix_id USING btree ON db.t (id)").message or ""
    assert created.startswith("created index ix_id (btree, PARTITION level) on db.t (id): 4 of 4 data file(s) scanned")
    assert "index ix_id" in stream.getvalue(), "a progress bar over the files"
    session.run("CREATE INDEX ix_s USING BLOOM ON t (s) WITH (\"bloom.fpp\" = '0.01')")
    session.run("CREATE INDEX ix_c USING minmax ON t (c) WITH (\"level\" = 'PARTITION') WHERE ds = 'a'")
    session.run("CREATE INDEX ix_t USING minmax ON t (id) WITH ('level' = 'TABLE')")
    shown = _show(session)
    assert {n: [r["table"], r["column"], r["index_type"], r["level"], r["partitions"], r["status"]]
            for n, r in shown.items()} == {
        "ix_id": ["db.t", "id", "BTREE", "PARTITION", "all", "OK"],
        "ix_s": ["db.t", "s", "BLOOM", "STRIPE", "all", "OK"],
        "ix_c": ["db.t", "c", "MINMAX", "PARTITION", "ds=a", "OK"],
        "ix_t": ["db.t", "id", "MINMAX", "TABLE", "all", "OK"],
    }
    assert all(re.fullmatch(r"\d+(\.\d)? (B|KiB)", r["size"]) for r in shown.values())
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", r["created"]) for r in shown.values())
    assert client.get_index("db", "t", "ix_s").properties == {"bloom.fpp": "0.01"}

    # errors: one line naming what is wrong, nothing recorded
    for statement, message in [
        ("CREATE INDEX x USING btree ON t (b)", "column 'b' is binary; indexes support tinyint, smallint, int"),
        ("CREATE INDEX x USING btree ON t (nope)", "column 'nope' does not exist in db.t"),
        ("CREATE INDEX x USING btree ON t (ds)", "column 'ds' is a partition column of db.t"),
        ("CREATE INDEX ix_id USING bloom ON t (c)", "index ix_id exists already"),
        ("CREATE INDEX x USING btree ON t (id)", "btree index ix_id exists already on db.t (id)"),
        ("CREATE INDEX x USING bloom ON t (c) WHERE ds = 'zz'", "no partition of db.t matches ds = 'zz'"),
        ("CREATE INDEX x USING bloom ON t (c) WHERE c = 'de'", "column 'c' is not a partition column of db.t"),
        ("CREATE INDEX x USING bloom ON t (c) WHERE ds > 'a'", "an index WHERE is `pcol = value` or `pcol IN"),
        ("CREATE INDEX x USING bloom ON t (c) WITH ('bloom.fpp' = '1.5')", "bloom.fpp must be a number between 0"),
        ("CREATE INDEX x USING minmax ON t (c) WITH ('level' = 'TABLE') WHERE ds = 'a'", "a TABLE-level index covers"),
        ("UPDATE INDEX nope", "index nope does not exist"),
        ("UPDATE INDEX ix_t WHERE ds = 'a'", "ix_t is a TABLE-level index; it is updated as a whole"),
        ("DROP INDEX ix_t WHERE ds = 'a'", "TABLE-level index; it cannot be dropped for one partition"),
        ("DROP INDEX nope", "index nope does not exist"),
    ]:
        with pytest.raises(SqlError, match=re.escape(message)):
            session.run(statement)
    assert sorted(_show(session)) == ["ix_c", "ix_id", "ix_s", "ix_t"]
    assert session.one("CREATE INDEX IF NOT EXISTS ix_id USING btree ON t (id)").message == "index ix_id exists already"

    # a new file in ds=b: every index covering ds=b is Out-of-sync until UPDATE INDEX, which scans only it
    _write(base / "ds=b" / "part-9.orc", _rows(100, 5000))
    shown = _show(session)
    assert {n: r["status"] for n, r in shown.items()} == {
        "ix_id": "Out-of-sync", "ix_s": "Out-of-sync", "ix_c": "OK", "ix_t": "Out-of-sync"}
    health = session.one("SHOW INDEX ix_id")
    assert health.message is not None and "1 file(s) added since the build" in health.message
    assert "part-9.orc" in health.message
    updated = session.one("UPDATE INDEX ix_id").message or ""
    assert updated.startswith("updated index ix_id (btree, PARTITION level) on db.t (id): 1 of 5 data file(s) "
                              "scanned"), updated
    assert "1 index file(s) written, 1 kept" in updated
    assert session.one("UPDATE INDEX ix_s").message.startswith("updated index ix_s (bloom, STRIPE level) on db.t (s): "
                                                                "1 of 5 data file(s) scanned")
    assert session.one("UPDATE INDEX ix_t").message.startswith("updated index ix_t (minmax, TABLE level) on db.t (id): "
                                                               "1 of 5 data file(s) scanned")
    assert {n: r["status"] for n, r in _show(session).items()} == dict.fromkeys(["ix_c", "ix_id", "ix_s", "ix_t"], "OK")

    # a partial index grows with UPDATE INDEX ... WHERE
    session.run("UPDATE INDEX ix_c WHERE ds = 'b'")
    assert _show(session, "SHOW INDEX ix_c")["ix_c"]["partitions"] == "ds=a, ds=b"
    session.run("DROP INDEX ix_c WHERE ds IN ('a')")
    assert _show(session, "SHOW INDEX ix_c")["ix_c"]["partitions"] == "ds=b"
    assert [p.partition for p in client.get_index("db", "t", "ix_c").parts] == ["ds=b"]

    directory = local_path(client.get_index("db", "t", "ix_s").location)
    assert directory is not None and directory.is_dir()
    assert session.one("DROP INDEX ix_s").message == "OK"
    assert not directory.exists()
    assert session.one("DROP INDEX IF EXISTS ix_s").message == "index ix_s does not exist"

    # an interrupted build shows as Creating
    from metastore.index.model import IndexKind, IndexLevel, IndexRecord

    client.create_index(IndexRecord(name="ix_new", db_name="db", table_name="t", column="s", column_type="string",
                                    kind=IndexKind.MINMAX, level=IndexLevel.STRIPE))
    assert _show(session, "SHOW INDEX ix_new")["ix_new"]["status"] == "Creating"


def test_corrupt_and_table_dropped_status(tmp_path: Path) -> None:
    with EmbeddedMetastoreClient(f"sqlite:///{tmp_path / 'ms.db'}", str(tmp_path / "warehouse")) as client:
        session = SqlSession(client)
        _table(session, client)
        session.run("CREATE INDEX ix USING btree ON t (id)")
        part = client.get_index("db", "t", "ix").parts[0]
        path = local_path(part.location)
        assert path is not None
        data = bytearray(path.read_bytes())
        data[40] ^= 0x10  # inside a checksummed block the split filter only reads for some lookups
        path.write_bytes(bytes(data))
        listed = _show(session)["ix"]
        full = session.one("SHOW INDEX ix")
        assert full.rows[0][-1] == "Corrupt"
        assert full.message is not None and str(path) in full.message and "checksum mismatch" in full.message
        assert listed["status"] in ("Corrupt", "OK")  # the listing opens each file, the named form reads it all
        # a table gone without its index records (dropped by a tool bypassing the metastore API)
        from metastore.store.schema import SPLIT_INDEXES

        with client._ms.store.engine.begin() as conn:
            conn.execute(sa.update(SPLIT_INDEXES).values(TBL_ID=None))
        assert _show(session)["ix"]["status"] == "Table dropped"


def _expected(data: dict[str, list[dict[str, Any]]], keep: Any, columns: list[str]) -> list[tuple[Any, ...]]:
    return sorted(tuple({**r, "ds": ds}[c] for c in columns) for ds, rows in data.items() for r in rows if keep(r, ds))


def test_select_and_explain(client: MetastoreClient) -> None:
    session = SqlSession(client)
    base, data = _table(session, client)
    everything = sorted(tuple(r) for r in session.one("SELECT id, s, c, ds FROM t").rows)
    assert everything == _expected(data, lambda r, ds: True, ["id", "s", "c", "ds"])
    target = data["b"][123]

    def check(where: str, keep: Any) -> None:
        got = session.one(f"SELECT id, s, ds FROM t WHERE {where}")
        assert sorted(tuple(r) for r in got.rows) == _expected(data, keep, ["id", "s", "ds"]), where
        count = session.one(f"SELECT count(*) FROM t WHERE {where}")
        assert count.columns == ["_c0"] and count.rows == [[len(got.rows)]]

    queries = [
        (f"id = {target['id']}", lambda r, ds: r["id"] == target["id"]),
        ("id BETWEEN 1000 AND 1500 AND ds = 'a'", lambda r, ds: 1000 <= r["id"] <= 1500 and ds == "a"),
        (f"s IN ('{target['s']}', 's5', 'nope')", lambda r, ds: r["s"] in (target["s"], "s5")),
        ("c = 'jp' OR id < 100", lambda r, ds: r["c"] == "jp" or r["id"] < 100),
        ("NOT (c <> 'de') AND id >= 50000", lambda r, ds: r["c"] == "de" and r["id"] >= 50000),
        ("c IS NULL", lambda r, ds: False),
    ]
    for where, keep in queries:
        check(where, keep)
    # the same answers once indexes choose the splits
    session.run("CREATE INDEX ix_id USING btree ON t (id) WITH ('level' = 'STRIPE'); "
                "CREATE INDEX ix_s USING bloom ON t (s); CREATE INDEX ix_c USING minmax ON t (c)")
    for where, keep in queries:
        check(where, keep)

    limited = session.one("SELECT * FROM t WHERE c = 'fr' LIMIT 7")
    assert limited.columns == ["id", "s", "c", "b", "ds"] and len(limited.rows) == 7
    assert all(r[2] == "fr" and r[3] is None for r in limited.rows)
    point = session.one(f"SELECT s FROM t WHERE id = {target['id']}")
    assert point.rows == [[target["s"]]]
    assert point.message is not None and re.search(r"read 1 of 4 split\(s\), 1 stripe\(s\)", point.message), point.message

    plan = session.one(f"EXPLAIN SELECT * FROM t WHERE id = {target['id']} AND c = '{target['c']}'")
    assert plan.columns == ["index", "type", "column", "splits_considered", "splits_kept", "bytes_to_read"]
    # bytes per index, from the data files themselves: the stripes holding the id (BTREE is exact), the stripes
    # whose c range covers the value (MINMAX), and both together
    holding_id = covering_c = both = 0
    for path in sorted(base.glob("ds=*/*.orc")):
        with OrcReader(str(path)) as reader:
            for number, info in enumerate(reader.stripes):
                columns = reader.read_stripe(number, columns=["id", "c"]).columns
                ids, cs = columns["id"].to_pylist(), [v for v in columns["c"].to_pylist() if v is not None]
                has_id = target["id"] in ids
                in_range = bool(cs) and min(cs) <= target["c"] <= max(cs)
                holding_id += info.length if has_id else 0
                covering_c += info.length if in_range else 0
                both += info.length if has_id and in_range else 0
    assert plan.rows == [["ix_c", "MINMAX", "c", 4, 1, covering_c], ["ix_id", "BTREE", "id", 4, 1, holding_id],
                         ["(all)", "", "", 4, 1, both]]
    assert plan.message is not None
    bytes_line = next(line for line in plan.message.splitlines() if line.startswith("splits kept"))
    to_read, total = (int(x) for x in re.findall(r"(\d+) \(", bytes_line))
    assert to_read == both and 0 < to_read < total / 10  # one stripe of one file
    unindexed = session.one("EXPLAIN SELECT id FROM t WHERE ds = 'a'")
    assert unindexed.rows == [["(all)", "", "", 2, 2, sum(p.stat().st_size for p in base.glob("ds=a/*.orc"))]]
    assert "2 file(s) in 2 split(s), 1 of 2 partition(s) after pruning" in (unindexed.message or "")
    with pytest.raises(SqlError, match="column 'zz' does not exist"):
        session.run("SELECT id FROM t WHERE zz = 1")
    with pytest.raises(SqlError, match=r"line 1:29: column 'id' is bigint"):
        session.run("SELECT id FROM t WHERE id = 'x' AND ds = 'a'")


def test_the_shell_commands(tmp_path: Path) -> None:
    """`metastore sql --db ...` as users run it, then `metastore sql --connect thrift://...` against a server on the
    same warehouse: the index made embedded is used remotely."""
    db = f"sqlite:///{tmp_path / 'ms.db'}"
    warehouse = tmp_path / "warehouse"
    with EmbeddedMetastoreClient(db, str(warehouse)) as client:
        _, data = _table(SqlSession(client), client)
    target = data["a"][42]

    def shell(*args: str, script: str) -> str:
        done = subprocess.run([str(Path(sys.executable).parent / "metastore"), "sql", *args, "-e", script, "--output", "csv"],
                              capture_output=True, text=True, timeout=300, env={**os.environ})
        assert done.returncode == 0, done.stderr
        return done.stdout

    out = shell("--db", db, "--warehouse", str(warehouse), script=(
        "USE db; CREATE INDEX ix USING btree ON t (id) WITH ('level'='STRIPE'); SHOW INDEX;"
        f"SELECT s FROM t WHERE id = {target['id']};"))
    assert "ix,db.t,id,BTREE,STRIPE,all," in out and out.rstrip().endswith(target["s"])
    from server.harness import start_server

    server = start_server(tmp_path / "serve", db, workers=1, extra_args=["--warehouse", str(warehouse)])
    try:
        out = shell("--connect", f"thrift://127.0.0.1:{server.port}", script=(
            f"USE db; EXPLAIN SELECT s FROM t WHERE id = {target['id']}; DROP INDEX ix; SHOW INDEX;"))
    finally:
        server.stop()
    assert "ix,BTREE,id,4,1" in out


def test_select_skips_row_groups_by_orc_row_index_and_bloom_filters(tmp_path: Path) -> None:
    """Inside the stripes it reads, SELECT skips the row groups whose ORC statistics (min/max) or ORC bloom
    filters rule the predicate out; the answer stays exact."""
    with EmbeddedMetastoreClient(f"sqlite:///{tmp_path / 'ms.db'}", str(tmp_path / "warehouse")) as client:
        session = SqlSession(client)
        session.run("CREATE TABLE g (id bigint, s string, c string) STORED AS ORC")
        base = local_path(client.get_table("default", "g").sd.location)
        assert base is not None
        rows = [{"id": i, "s": f"v{i * 7919 % 10_000}", "c": "x"} for i in range(10_000)]
        base.mkdir(parents=True, exist_ok=True)
        with OrcWriter(str(base / "f.orc"), "struct<id:bigint,s:string,c:string>",
                       {"orc.row.index.stride": "1000", "orc.bloom.filter.columns": "s"}) as writer:
            writer.write_batch({k: [r[k] for r in rows] for k in ("id", "s", "c")})
        by_stats = session.one("SELECT s FROM g WHERE id BETWEEN 2500 AND 2600")
        assert sorted(r[0] for r in by_stats.rows) == sorted(f"v{i * 7919 % 10_000}" for i in range(2500, 2601))
        assert "1 row group(s) (9 skipped by ORC statistics and bloom filters)" in (by_stats.message or "")
        wanted = rows[4321]["s"]
        by_bloom = session.one(f"SELECT id FROM g WHERE s = '{wanted}'")
        assert by_bloom.rows == [[4321]]
        match = re.search(r"(\d+) row group\(s\) \((\d+) skipped", by_bloom.message or "")
        assert match is not None and int(match.group(2)) >= 8, by_bloom.message  # min/max of s span every group
