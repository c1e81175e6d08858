"""Migrations from an empty database, revision reporting, out-of-date detection and the db commands."""

from __future__ import annotations

import multiprocessing
from decimal import Decimal
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from metastore.cli import main
from metastore.errors import SchemaOutOfDate
from metastore.stats.model import ColumnStatsEntry
from metastore.store import Store, migrate
from metastore.store.engine import create_engine
from metastore.store.schema import metadata


def test_upgrade_from_empty_creates_the_schema(db_url: str) -> None:
    assert migrate.current_revision(db_url) is None
    migrate.upgrade(db_url)
    assert migrate.current_revision(db_url) == migrate.head_revision()
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            tables = set(sa.inspect(conn).get_table_names())
            assert {
                "DBS",
                "TBLS",
                "PARTITIONS",
                "TAB_COL_STATS",
                "PART_COL_STATS",
                "PARTITION_KEY_VALS",
            } <= tables
            # The catalog row ships with the schema, as in Hive's schema scripts.
            assert conn.execute(sa.text('SELECT "NAME" FROM "CTLGS"')).scalars().all() == ["hive"]
    finally:
        engine.dispose()


def test_migrations_build_exactly_the_declared_schema(db_url: str) -> None:
    migrate.upgrade(db_url)
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            diff = compare_metadata(ctx, metadata)
    finally:
        engine.dispose()
    assert diff == []


def test_upgrade_twice_is_a_no_op(db_url: str) -> None:
    migrate.upgrade(db_url)
    migrate.upgrade(db_url)
    assert migrate.current_revision(db_url) == migrate.head_revision()


def test_out_of_date_schema_is_refused_with_the_fixing_command(db_url: str) -> None:
    with pytest.raises(SchemaOutOfDate) as err:
        migrate.check_schema(db_url, auto_upgrade=False)
    assert "metastore db upgrade --db" in str(err.value)
    assert "empty" in str(err.value)
    with pytest.raises(SchemaOutOfDate):
        Store.open(db_url)


def test_auto_upgrade_brings_the_schema_to_head(db_url: str) -> None:
    migrate.check_schema(db_url, auto_upgrade=True)
    assert migrate.current_revision(db_url) == migrate.head_revision()
    Store.open(db_url).dispose()


def test_older_revision_is_out_of_date(db_url: str) -> None:
    migrate.upgrade(db_url)
    engine = create_engine(db_url)
    try:
        with engine.begin() as conn:  # pretend an older revision, as after installing newer code
            conn.execute(sa.text("DELETE FROM alembic_version"))
            conn.execute(sa.text("INSERT INTO alembic_version (version_num) VALUES ('0000')"))
    finally:
        engine.dispose()
    with pytest.raises(SchemaOutOfDate, match="does not know"):
        migrate.check_schema(db_url, auto_upgrade=True)


def _upgrade_in_child(url: str) -> None:
    migrate.upgrade(url)


def test_concurrent_upgrades_from_several_processes(db_url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_upgrade_in_child, args=(db_url,)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert migrate.current_revision(db_url) == migrate.head_revision()


def test_db_cli_commands(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["db", "current", "--db", db_url]) == 1
    assert "none (empty database)" in capsys.readouterr().out
    assert main(["db", "upgrade", "--db", db_url]) == 0
    assert main(["db", "current", "--db", db_url]) == 0
    out = capsys.readouterr().out
    assert f"current revision: {migrate.head_revision()}" in out


@pytest.mark.parametrize("argv", [["db", "--help"], ["db", "upgrade", "--help"], ["db", "current", "--help"]])
def test_db_commands_have_help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 0
    assert "usage: metastore db" in capsys.readouterr().out


def test_missing_alembic_directory_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    import metastore

    monkeypatch.setattr(metastore, "__file__", str(tmp_path / "metastore" / "__init__.py"))
    with pytest.raises(Exception, match="Alembic migrations not found"):
        migrate.alembic_dir()


def test_alembic_command_line_with_x_db(sqlite_url: str) -> None:
    import subprocess
    import sys
    from pathlib import Path

    root = Path(migrate.alembic_dir()).parent
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "alembic",
            "-c",
            str(root / "alembic.ini"),
            "-x",
            f"db={sqlite_url}",
            "upgrade",
            "head",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert migrate.current_revision(sqlite_url) == migrate.head_revision()


def test_programmatic_upgrade_leaves_logging_alone(db_url: str) -> None:
    """A server migrating at start must still be able to configure logging afterwards."""
    import logging

    root = logging.getLogger()
    saved = list(root.handlers)
    for handler in saved:  # like a server that has not configured logging yet
        root.removeHandler(handler)
    try:
        migrate.upgrade(db_url)
        assert root.handlers == []
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved:
            root.addHandler(handler)


def test_revision_0002_fills_stats_thrift_of_existing_rows(db_url: str) -> None:
    """Statistics written before 0002 get their pre-encoded Thrift bytes from the upgrade (rows written at 0002
    lose them on a downgrade to 0001 and get them back, computed from the stored values, on the upgrade)."""
    from alembic import command
    from metastore.catalog import Database
    from metastore.stats.model import BooleanStats, DecimalStats, LongStats, StringStats
    from metastore.store.column_stats.rows import row_to_entry
    from metastore.wire.stats import encode_served
    from store.builders import partition, sales_table
    from store.stats_steps import put_partitions, put_table

    migrate.upgrade(db_url)
    store = Store(db_url)
    entries = [
        ColumnStatsEntry("id", "bigint", LongStats(num_nulls=1, num_dvs=9, low=-3, high=2**40)),
        ColumnStatsEntry("price", "decimal(10,2)", DecimalStats(num_nulls=0, num_dvs=4, low=Decimal("-1.50"), high=Decimal("99.99"))),
        ColumnStatsEntry("name", "string", StringStats(num_nulls=2, max_col_len=12, avg_col_len=4.5, num_dvs=7)),
        ColumnStatsEntry("ok", "boolean", BooleanStats(num_nulls=0, num_trues=3, num_falses=4)),
    ]
    try:
        with store.transaction() as uow:
            uow.databases.create(Database(name="sales", location_uri="/warehouse/sales.db"))
            uow.tables.create(sales_table())
            uow.partitions.add([partition(["2024-01-01", "1"]), partition(["2024-01-02", "2"])])
            put_table(uow, "sales", "orders", entries)
            put_partitions(uow, "sales", "orders", {"ds=2024-01-01/hr=1": entries, "ds=2024-01-02/hr=2": entries[:2]})
    finally:
        store.dispose()
    command.downgrade(migrate.alembic_config(db_url), "0001")
    assert migrate.current_revision(db_url) == "0001"
    migrate.upgrade(db_url)
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            for table, expected in (("TAB_COL_STATS", 4), ("PART_COL_STATS", 6)):
                rows = conn.execute(sa.text(f'SELECT * FROM "{table}"')).mappings().all()
                assert len(rows) == expected
                for row in rows:
                    assert row["STATS_THRIFT"] is not None
                    assert bytes(row["STATS_THRIFT"]) == encode_served(row_to_entry(row))
    finally:
        engine.dispose()


def test_revision_0004_adds_and_removes_the_one_round_trip_write_function(pg_url: str) -> None:
    from alembic import command

    def functions() -> list[str]:
        engine = create_engine(pg_url)
        try:
            with engine.connect() as conn:
                return conn.execute(
                    sa.text("SELECT proname FROM pg_proc WHERE proname = 'metastore_put_table_stats'")
                ).scalars().all()
        finally:
            engine.dispose()

    migrate.upgrade(pg_url)
    assert functions() == ["metastore_put_table_stats"]
    command.downgrade(migrate.alembic_config(pg_url), "0003")
    assert functions() == []
    migrate.upgrade(pg_url)
    assert functions() == ["metastore_put_table_stats"]


def test_revision_0005_adds_and_removes_the_type_and_function_tables(db_url: str) -> None:
    """0005's down/up on a database that holds a function: the tables go and come back, other rows stay."""
    from alembic import command

    new_tables = {"TYPES", "TYPE_FIELDS", "FUNCS", "FUNC_RU"}

    def tables() -> set[str]:
        engine = create_engine(db_url)
        try:
            return set(sa.inspect(engine).get_table_names())
        finally:
            engine.dispose()

    migrate.upgrade(db_url)
    assert new_tables <= tables()
    engine = create_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("""INSERT INTO "CTLGS" ("NAME") SELECT 'hive' WHERE NOT EXISTS
                                    (SELECT 1 FROM "CTLGS" WHERE "NAME" = 'hive')"""))
            conn.execute(sa.text("""INSERT INTO "DBS" ("NAME", "CTLG_NAME") VALUES ('fdb', 'hive')"""))
            conn.execute(sa.text("""INSERT INTO "FUNCS" ("DB_ID", "FUNC_NAME", "CREATE_TIME", "FUNC_TYPE")
                                    SELECT "DB_ID", 'f', 0, 1 FROM "DBS" WHERE "NAME" = 'fdb'"""))
    finally:
        engine.dispose()
    command.downgrade(migrate.alembic_config(db_url), "0004")
    assert migrate.current_revision(db_url) == "0004"
    assert not new_tables & tables()
    migrate.upgrade(db_url)
    assert new_tables <= tables()
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("""SELECT count(*) FROM "DBS" WHERE "NAME" = 'fdb'""")).scalar() == 1
            assert conn.execute(sa.text('SELECT count(*) FROM "FUNCS"')).scalar() == 0
    finally:
        engine.dispose()


def test_revision_0009_versions_the_existing_tables_and_goes_away_cleanly(db_url: str) -> None:
    """0009 gives every existing table a names version (PostgreSQL; SQLite keeps the table empty), its
    triggers renew it, and its downgrade leaves no trigger behind that would break adding partitions."""
    from alembic import command
    from metastore.catalog import Database, FieldSchema, Partition, SerDeInfo, StorageDescriptor, Table
    from metastore.service import CatalogService

    postgres = db_url.startswith("postgresql")
    migrate.upgrade(db_url, "0008")
    store = Store(db_url)
    try:
        store.ensure_default_database("/tmp/warehouse")
        catalog = CatalogService(store, "/tmp/warehouse")
        catalog.create_database(Database(name="m", location_uri="/tmp/warehouse/m.db"))
        catalog.create_table(Table(db_name="m", table_name="t", sd=StorageDescriptor(
            cols=[FieldSchema("x", "bigint")], location="/tmp/warehouse/m.db/t", input_format="in",
            output_format="out", serde_info=SerDeInfo(serialization_lib="lib"),
        ), partition_keys=[FieldSchema("ds", "string")]))

        def add(value: str) -> None:
            catalog.add_partitions("m", "t", [Partition(db_name="m", table_name="t", values=[value])])

        def version() -> int | None:
            with store.read() as uow:
                return uow.partitions.names_version("m", "t")[1]

        add("a")
        migrate.upgrade(db_url)
        first = version()
        assert (first is not None) == postgres
        add("b")
        assert version() != first or not postgres
        command.downgrade(migrate.alembic_config(db_url), "0008")
        add("c")  # no trigger left over
        with store.read() as uow:
            assert not sa.inspect(uow.connection).has_table("PART_NAMES_VERSIONS")
            assert uow.partitions.list_names("m", "t") == ["ds=a", "ds=b", "ds=c"]
        migrate.upgrade(db_url)
        assert (version() is not None) == postgres
    finally:
        store.dispose()


def test_schema_check_reads_the_migration_scripts_once_per_process(db_url: str) -> None:
    """Each embedded client checks the schema when it opens (a Spark driver opens one per ANALYZE): the head
    revision is parsed from the scripts once, while the database's own revision is still read every time."""
    from alembic.script import ScriptDirectory

    migrate.upgrade(db_url)
    migrate.check_schema(db_url, auto_upgrade=False)
    misses = migrate._head_revision.cache_info().misses
    for _ in range(3):
        migrate.check_schema(db_url, auto_upgrade=False)
    assert migrate._head_revision.cache_info().misses == misses
    assert migrate.head_revision() == ScriptDirectory.from_config(migrate.alembic_config()).get_current_head()
    # the database is still asked: one step back is out of date again
    from alembic import command

    command.downgrade(migrate.alembic_config(db_url), "-1")
    with pytest.raises(SchemaOutOfDate, match="metastore db upgrade"):
        migrate.check_schema(db_url, auto_upgrade=False)


def test_head_from_the_scripts_lines_is_alembics_head(tmp_path: Path) -> None:
    """The head read from the scripts' revision lines (no Alembic import at start-up) is the one Alembic finds;
    scripts those lines do not describe make the reader give up (None), so Alembic answers instead."""
    from alembic.script import ScriptDirectory

    versions = migrate.alembic_dir() / "versions"
    assert migrate._head_of_lines(versions) == ScriptDirectory.from_config(migrate.alembic_config()).get_current_head()

    def scripts(*texts: str) -> Path:
        folder = tmp_path / f"v{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        for n, text in enumerate(texts):
            (folder / f"{n:04d}_x.py").write_text(text)
        return folder

    line = 'revision: str = "{}"\ndown_revision: str | None = {}\n'
    assert migrate._head_of_lines(scripts(line.format("a", "None"), line.format("b", '"a"'))) == "b"
    assert migrate._head_of_lines(scripts(line.format("a", "None"), "revision = 'b'\ndown_revision = 'a'\n")) == "b"
    # two heads (a branch), a merge script, a computed id, a missing parent, a repeated id: Alembic decides
    assert migrate._head_of_lines(scripts(line.format("a", "None"), line.format("b", '"a"'),
                                          line.format("c", '"a"'))) is None
    assert migrate._head_of_lines(scripts(line.format("a", "None"), line.format("b", '"a"'),
                                          'revision = "m"\ndown_revision = ("a", "b")\n')) is None
    assert migrate._head_of_lines(scripts(line.format("a", "None"), 'revision = make_id()\ndown_revision = "a"\n')) \
        is None
    assert migrate._head_of_lines(scripts(line.format("b", '"a"'))) is None
    assert migrate._head_of_lines(scripts(line.format("a", "None"), line.format("a", "None"))) is None


def test_opening_an_embedded_client_does_not_import_alembic(sqlite_url: str) -> None:
    """A command that only connects (a cron job's re-ANALYZE, `metastore sql -e`) pays no Alembic import when the
    schema is current."""
    import subprocess
    import sys

    migrate.upgrade(sqlite_url)
    code = (
        "import sys\nfrom metastore.client import connect\n"
        f"connect({sqlite_url!r}).close()\n"
        "print(sorted(m for m in sys.modules if m == 'alembic' or m.startswith('alembic.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def test_schema_check_through_a_kept_engine_reads_the_revision_every_time(db_url: str) -> None:
    """An embedded client checks the schema through its kept engine on every open (on SQLite with a plain
    SELECT, no write lock): the revision is read each time, so a schema moved back in between is refused,
    an empty database is reported empty, and the check does not wait for a writer holding the lock."""
    from alembic import command

    engine = create_engine(db_url)
    try:
        with pytest.raises(SchemaOutOfDate, match="is empty"):
            migrate.check_schema(db_url, auto_upgrade=False, engine=engine)
        assert migrate.current_revision(db_url, engine) is None
        migrate.upgrade(db_url)
        migrate.check_schema(db_url, auto_upgrade=False, engine=engine)
        assert migrate.current_revision(db_url, engine) == migrate.head_revision()
        if engine.dialect.name == "sqlite":
            # a writer holds SQLite's write lock: the check reads past it instead of queueing for it
            other = create_engine(db_url)
            try:
                with other.connect() as conn, conn.begin():
                    conn.execute(sa.text('UPDATE "CTLGS" SET "DESC" = "DESC"'))
                    migrate.check_schema(db_url, auto_upgrade=False, engine=engine)
            finally:
                other.dispose()
        command.downgrade(migrate.alembic_config(db_url), "-1")
        with pytest.raises(SchemaOutOfDate, match="metastore db upgrade"):
            migrate.check_schema(db_url, auto_upgrade=False, engine=engine)
        assert migrate.current_revision(db_url, engine) == migrate.current_revision(db_url) != migrate.head_revision()
    finally:
        engine.dispose()
