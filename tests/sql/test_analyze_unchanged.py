"""Re-ANALYZE skips what did not change (issue 12, metastore.sql.fingerprints): partitions whose files and stored
statistics are those of the last run are neither read nor rewritten, and the statistics end up exactly as a
fresh ANALYZE of every file writes them. Statistics changed behind the shell's back (written or deleted by
another client) are noticed and written again."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from metastore.catalog import Partition, Table
from metastore.client import StatsWrite
from metastore.client.embedded import EmbeddedMetastoreClient
from metastore.sql.fingerprints import FINGERPRINT_KEY
from metastore.stats.model import ColumnStatsEntry
from sql.ground_truth import COLUMNS, CREATE_COLUMNS, make_table, write_pyarrow_orc
from sql.session import SqlSession

NAMES = [name for name, _, _ in COLUMNS]
PARTS = ["p0", "p1", "p2"]
ANALYZE = "ANALYZE TABLE db.t COMPUTE STATISTICS FOR ALL COLUMNS"


class RecordingClient(EmbeddedMetastoreClient):
    """The embedded client, noting which writes it was asked for (the partitions and tables written)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.writes: list[str] = []

    def alter_partitions(self, db_name: str, table_name: str, partitions: Sequence[Partition]) -> None:
        self.writes += [f"parameters {'/'.join(p.values)}" for p in partitions]
        super().alter_partitions(db_name, table_name, partitions)

    def alter_table(self, db_name: str, table_name: str, table: Table) -> None:
        self.writes.append(f"parameters {table_name}")
        super().alter_table(db_name, table_name, table)

    def update_table_parameters(self, db_name: str, table_name: str, changes: Mapping[str, str]) -> None:
        self.writes.append(f"parameters {table_name}")
        super().update_table_parameters(db_name, table_name, changes)

    def _write_batch(self, writes: Sequence[StatsWrite], *, merge: bool, engine: str) -> None:
        self.writes += [f"statistics {w.partition_name or w.table_name}" for w in writes]
        super()._write_batch(writes, merge=merge, engine=engine)

    def write_analysis(
        self, db_name: str, table_name: str, partitions: Sequence[Partition],
        partition_statistics: Sequence[StatsWrite], table_statistics: Sequence[StatsWrite] = (),
        table_parameters: Mapping[str, str] | None = None, *, parameters_only: bool = False,
    ) -> None:
        # the same writes in one transaction (the embedded client's write_analysis calls none of the above)
        self.writes += [f"parameters {'/'.join(p.values)}" for p in partitions]
        self.writes += [f"statistics {w.partition_name or w.table_name}"
                        for w in (*partition_statistics, *table_statistics) if w.entries]
        if table_parameters:
            self.writes.append(f"parameters {table_name}")
        super().write_analysis(db_name, table_name, partitions, partition_statistics, table_statistics,
                               table_parameters, parameters_only=parameters_only)

    def take(self) -> list[str]:
        done, self.writes = sorted(self.writes), []
        return done


@pytest.fixture
def client(tmp_path: Path) -> Iterator[RecordingClient]:
    c = RecordingClient(f"sqlite:///{tmp_path / 'ms.db'}", str(tmp_path / "warehouse"))
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def root(tmp_path: Path, client: RecordingClient) -> Path:
    """db.t partitioned by ds, one pyarrow file per partition (so every file is scanned)."""
    location = tmp_path / "data" / "t"
    rng = np.random.default_rng(12)
    for part in PARTS:
        write_pyarrow_orc(make_table(rng, 1500, 1000), location / f"ds={part}" / "f0.orc")
    SqlSession(client).run(f"CREATE DATABASE db; CREATE EXTERNAL TABLE db.t ({CREATE_COLUMNS}) PARTITIONED BY "
                           f"(ds string) STORED AS ORC LOCATION '{location}'; MSCK REPAIR TABLE db.t")
    client.take()
    return location


def stored(client: EmbeddedMetastoreClient, table: str = "t") -> dict[str, Any]:
    """Every partition's and the table's statistics, and the partitions' basic statistics."""
    def plain(entries: list[ColumnStatsEntry]) -> dict[str, Any]:
        return {e.column: e.stats for e in entries}

    names = client.list_partition_names("db", table)
    basic = {}
    for p in client.list_partitions("db", table):
        basic["/".join(p.values)] = {k: p.parameters.get(k) for k in ("numRows", "numFiles", "totalSize", "rawDataSize")}
    return {
        "partitions": {n: plain(es) for n, es in client.partition_statistics("db", table, names, NAMES).items()},
        "table": plain(client.table_statistics("db", table, NAMES)),
        "basic": basic,
    }


def counts(message: str | None) -> str:
    assert message is not None
    return message.split(" column(s): ", 1)[1].rsplit(", ", 1)[0]


def test_nothing_changed_reads_and_writes_nothing(client: RecordingClient, root: Path, tmp_path: Path) -> None:
    session = SqlSession(client, tmp_path / "cache.sqlite")
    first = counts(session.one(ANALYZE).message)
    assert first.startswith("3 file(s) read (") and first.endswith(", 0 reused from the cache")
    assert client.take() == ["parameters p0", "parameters p1", "parameters p2", "parameters t",
                             "statistics ds=p0", "statistics ds=p1", "statistics ds=p2", "statistics t"]
    before = stored(client)
    again = session.one(ANALYZE)
    assert counts(again.message) == ("0 file(s) read (0 B), 3 reused from the cache, 3 partition(s) unchanged since "
                                     "the last ANALYZE (statistics kept)")
    assert [row[5:] for row in again.rows] == [[0, 1]] * 3
    assert [row[:3] for row in again.rows] == [[f"ds={p}", 1500, 1] for p in PARTS]
    assert client.take() == []
    assert stored(client) == before


def test_one_partition_changed_rewrites_it_and_the_table_only(client: RecordingClient, root: Path,
                                                              tmp_path: Path) -> None:
    session = SqlSession(client, tmp_path / "cache.sqlite")
    session.one(ANALYZE)
    client.take()
    write_pyarrow_orc(make_table(np.random.default_rng(99), 800, 700), root / "ds=p1" / "f1.orc")
    result = session.one(ANALYZE)
    assert counts(result.message).startswith("1 file(s) read")
    assert counts(result.message).endswith("3 reused from the cache, 2 partition(s) unchanged since the last "
                                           "ANALYZE (statistics kept)")
    assert client.take() == ["parameters p1", "parameters t", "statistics ds=p1", "statistics t"]
    incremental = stored(client)
    # exactly what a fresh ANALYZE of every file writes
    SqlSession(client, None).one(ANALYZE)
    assert stored(client) == incremental
    assert incremental["basic"]["p1"] == {"numRows": "2300", "numFiles": "2",
                                          "totalSize": str(sum(f.stat().st_size for f in (root / "ds=p1").iterdir())),
                                          "rawDataSize": incremental["basic"]["p1"]["rawDataSize"]}


def test_statistics_changed_by_another_client_are_written_again(client: RecordingClient, root: Path,
                                                                 tmp_path: Path) -> None:
    session = SqlSession(client, tmp_path / "cache.sqlite")
    session.one(ANALYZE)
    truth = stored(client)
    # another client overwrites one column of p0, and deletes p2's statistics
    entry = client.partition_statistics("db", "t", ["ds=p0"], ["id"])["ds=p0"][0]
    wrong = dataclasses.replace(entry.stats, num_nulls=entry.stats.num_nulls + 1)
    client.write_statistics([StatsWrite("db", "t", [dataclasses.replace(entry, stats=wrong)], partition_name="ds=p0")])
    client.delete_partition_statistics("db", "t", ["ds=p2"])
    client.take()
    result = session.one(ANALYZE)
    assert counts(result.message).endswith("1 partition(s) unchanged since the last ANALYZE (statistics kept)")
    # the table level is still what every partition's files give: not written
    assert client.take() == ["parameters p0", "parameters p2", "statistics ds=p0", "statistics ds=p2"]
    assert stored(client) == truth
    # the table level alone: changed by another client, written again from the per-file results
    table_entry = client.table_statistics("db", "t", ["qty"])[0]
    client.write_statistics([StatsWrite("db", "t", [dataclasses.replace(
        table_entry, stats=dataclasses.replace(table_entry.stats, num_dvs=1))])])
    client.take()
    result = session.one(ANALYZE)
    assert counts(result.message).endswith("3 partition(s) unchanged since the last ANALYZE (statistics kept)")
    assert client.take() == ["statistics t"]  # its fingerprint is the same: parameters are left alone
    assert stored(client) == truth


def test_what_the_run_asks_for_is_part_of_its_inputs(client: RecordingClient, root: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite"
    session = SqlSession(client, cache)
    with_histograms = SqlSession(client, cache, histograms=True)
    written = ["parameters p0", "parameters p1", "parameters p2", "parameters t",
               "statistics ds=p0", "statistics ds=p1", "statistics ds=p2", "statistics t"]
    session.one("ANALYZE TABLE db.t COMPUTE STATISTICS FOR COLUMNS id, name")
    client.take()
    # other columns, then histograms, then none again: other inputs each time, so everything is written
    for run in (session, with_histograms, session):
        assert "unchanged" not in (run.one(ANALYZE).message or "")
        assert client.take() == written
        assert "3 partition(s) unchanged" in (run.one(ANALYZE).message or "")
        assert client.take() == []
    # without a per-file store the user asks for a fresh run: nothing is skipped
    SqlSession(client, None).one(ANALYZE)
    # (the table's fingerprint is the one it has: its parameters are left alone)
    assert client.take() == [w for w in written if w != "parameters t"]
    assert client.get_partition("db", "t", ["p0"]).parameters[FINGERPRINT_KEY].startswith("1:")


def test_unpartitioned_table(client: RecordingClient, tmp_path: Path) -> None:
    location = tmp_path / "flat"
    rng = np.random.default_rng(3)
    write_pyarrow_orc(make_table(rng, 1000, 800), location / "f0.orc")
    session = SqlSession(client, tmp_path / "cache.sqlite")
    session.run(f"CREATE DATABASE db; CREATE EXTERNAL TABLE db.flat ({CREATE_COLUMNS}) STORED AS ORC "
                f"LOCATION '{location}'")
    session.one("ANALYZE TABLE db.flat COMPUTE STATISTICS FOR ALL COLUMNS")
    client.take()
    again = session.one("ANALYZE TABLE db.flat COMPUTE STATISTICS FOR ALL COLUMNS")
    assert counts(again.message).endswith("the table unchanged since the last ANALYZE (statistics kept)")
    assert again.rows[0][:3] == ["db.flat", 1000, 1]
    assert client.take() == []
    write_pyarrow_orc(make_table(rng, 500, 400), location / "f1.orc")
    third = session.one("ANALYZE TABLE db.flat COMPUTE STATISTICS FOR ALL COLUMNS")
    assert "unchanged" not in (third.message or "") and third.rows[0][1] == 1500
    assert client.take() == ["parameters flat", "statistics flat"]


def test_inputs_digests_are_each_targets_inputs_digest_as_recorded_before() -> None:
    # A run's digests (the columns' part made once for every target) are those inputs_digest gives each target,
    # and the values fingerprints already stored hold (computed by the code before inputs_digests existed).
    from metastore.catalog import FieldSchema
    from metastore.sql.fingerprints import inputs_digest, inputs_digests
    from metastore.storage import FileRef

    columns = [FieldSchema(name="id", type="bigint"), FieldSchema(name="Price", type="decimal(14, 6)")]
    files = {
        "ds=b": [FileRef("file:/w/t/ds=b/f2.orc", 20, 7, "v1"), FileRef("file:/w/t/ds=b/f1.orc", 10, 5, "")],
        "ds=c": [],
    }
    for histograms in (False, True):
        digests = inputs_digests(files, columns, histograms)
        assert digests == {name: inputs_digest(refs, columns, histograms) for name, refs in files.items()}
    assert inputs_digests(files, columns, True)["ds=b"] == "319e4b4bbfea37bf8510c464dd16f501"
    assert inputs_digests(files, columns, False)["ds=c"] == "7ccae2fd64a9948e5a2c50f8c8773b6c"
