"""Staleness through the shell: append a file, rewrite a file under the same name (its mtime kept), touch a file,
delete a file, drop a partition. After each change SELECT answers exactly (the indexes never hide a row), SHOW
INDEX says Out-of-sync for every index covering the change until UPDATE INDEX, which rescans only what changed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sql.session import SqlSession

from metastore.client.embedded import EmbeddedMetastoreClient
from metastore.locations import local_path
from metastore.orcio import OrcWriter

INDEXES = ("ix_bt", "ix_bl", "ix_mm")


def _write(path: Path, ids: list[int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with OrcWriter(str(path), "struct<id:bigint,s:string>", {"orc.stripe.size": "1000"}) as writer:
        for start in range(0, len(ids), 100):
            chunk = ids[start : start + 100]
            writer.write_batch({"id": chunk, "s": [f"s{i}" for i in chunk]})


class Table:
    """The data as it is on disk: file path -> (partition, ids)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.files: dict[Path, tuple[str, list[int]]] = {}

    def write(self, ds: str, name: str, ids: list[int]) -> Path:
        path = self.base / f"ds={ds}" / name
        _write(path, ids)
        self.files[path] = (ds, ids)
        return path

    def rows(self, keep: Any) -> list[tuple[int, str]]:
        return sorted((i, ds) for ds, ids in self.files.values() for i in ids if keep(i, ds))


def _check(session: SqlSession, table: Table, probes: list[int]) -> None:
    queries = [
        (f"id IN ({', '.join(map(str, probes))})", lambda i, ds: i in probes),
        (f"id = {probes[0]} OR s = 's{probes[-1]}'", lambda i, ds: i in (probes[0], probes[-1])),
        ("id BETWEEN 150 AND 260", lambda i, ds: 150 <= i <= 260),
        ("id >= 0", lambda i, ds: True),
    ]
    for where, keep in queries:
        got = sorted((r[0], r[1]) for r in session.one(f"SELECT id, ds FROM t WHERE {where}").rows)
        assert got == table.rows(keep), where


def _status(session: SqlSession) -> dict[str, str]:
    return {r["index_name"]: r["status"] for r in session.rows("SHOW INDEX")}


def _update_all(session: SqlSession) -> dict[str, str]:
    out = {}
    for name in INDEXES:
        message = session.one(f"UPDATE INDEX {name}").message or ""
        out[name] = message.split(": ", 1)[1].split(" data file(s) scanned")[0]  # "N of M"
    assert _status(session) == dict.fromkeys(INDEXES, "OK")
    return out


def test_staleness_through_the_shell(tmp_path: Path) -> None:
    with EmbeddedMetastoreClient(f"sqlite:///{tmp_path / 'ms.db'}", str(tmp_path / "warehouse")) as client:
        session = SqlSession(client)
        session.run("CREATE TABLE t (id bigint, s string) PARTITIONED BY (ds string) STORED AS ORC")
        table = Table(local_path(client.get_table("default", "t").sd.location) or Path())
        table.write("a", "f0.orc", list(range(0, 300)))
        table.write("a", "f1.orc", list(range(300, 600)))
        table.write("b", "f0.orc", list(range(600, 900)))
        session.run("MSCK REPAIR TABLE t; CREATE INDEX ix_bt USING btree ON t (id); "
                    "CREATE INDEX ix_bl USING bloom ON t (s); CREATE INDEX ix_mm USING minmax ON t (id) "
                    "WITH ('level' = 'TABLE')")
        assert _status(session) == dict.fromkeys(INDEXES, "OK")
        _check(session, table, [5, 450, 700])

        # append a file to ds=a
        table.write("a", "f2.orc", list(range(2000, 2100)))
        assert _status(session) == dict.fromkeys(INDEXES, "Out-of-sync")
        _check(session, table, [5, 2050, 700])
        assert _update_all(session) == dict.fromkeys(INDEXES, "1 of 4")
        _check(session, table, [5, 2050, 700])

        # rewrite ds=b/f0.orc under the same name, as a copy that keeps the old mtime would
        path = table.base / "ds=b" / "f0.orc"
        stamp = path.stat().st_mtime_ns
        table.write("b", "f0.orc", list(range(3000, 3250)))
        os.utime(path, ns=(stamp, stamp))
        assert _status(session) == dict.fromkeys(INDEXES, "Out-of-sync")
        _check(session, table, [700, 3100, 5])  # 700 is gone, 3100 is there
        assert _update_all(session) == dict.fromkeys(INDEXES, "1 of 4")
        _check(session, table, [700, 3100, 5])

        # touch a file: same bytes, new mtime
        path = table.base / "ds=a" / "f1.orc"
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 5_000_000_000))
        assert _status(session) == dict.fromkeys(INDEXES, "Out-of-sync")
        _check(session, table, [450, 3100])
        assert _update_all(session) == dict.fromkeys(INDEXES, "1 of 4")

        # delete a file
        path = table.base / "ds=a" / "f0.orc"
        path.unlink()
        del table.files[path]
        assert _status(session) == dict.fromkeys(INDEXES, "Out-of-sync")
        _check(session, table, [5, 450, 3100])
        assert _update_all(session) == dict.fromkeys(INDEXES, "0 of 3")
        _check(session, table, [5, 450, 3100])

        # drop a partition: its parts go with it; the TABLE-level index still covers its files until UPDATE
        session.run("ALTER TABLE t DROP PARTITION (ds='b')")
        for p in [p for p, (ds, _) in table.files.items() if ds == "b"]:
            del table.files[p]
        assert _status(session) == {"ix_bt": "OK", "ix_bl": "OK", "ix_mm": "Out-of-sync"}
        assert {p.partition for p in client.get_index("default", "t", "ix_bt").parts} == {"ds=a"}
        _check(session, table, [450, 3100, 2050])
        assert _update_all(session)["ix_mm"] == "0 of 2"
        _check(session, table, [450, 3100, 2050])
