"""One unit of work is one transaction: a failure anywhere leaves nothing half-written."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from metastore.catalog import Database
from metastore.errors import AlreadyExists, NoSuchObject
from metastore.stats.model import ColumnStatsEntry, StringStats
from metastore.store import Store
from store.builders import partition, sales_table
from store.stats_steps import last_analyzed, put_partitions, put_table

NAME = ColumnStatsEntry("name", "string", StringStats(num_nulls=0, max_col_len=1, avg_col_len=1.0, num_dvs=1))
TABLES = (
    "DBS",
    "TBLS",
    "SDS",
    "SERDES",
    "CDS",
    "COLUMNS_V2",
    "PARTITIONS",
    "PARTITION_KEY_VALS",
    "PARTITION_PARAMS",
    "TABLE_PARAMS",
    "TAB_COL_STATS",
    "PART_COL_STATS",
)


def snapshot(store: Store) -> dict[str, int]:
    with store.read() as uow:
        return {t: uow.connection.execute(sa.text(f'SELECT count(*) FROM "{t}"')).scalar() for t in TABLES}


def test_exception_rolls_back_everything(store: Store) -> None:
    before = snapshot(store)
    with pytest.raises(RuntimeError), store.transaction() as uow:
        uow.databases.create(Database(name="sales"))
        uow.tables.create(sales_table())
        uow.partitions.add([partition(["a", "1"])])
        put_table(uow, "sales", "orders", [NAME])
        raise RuntimeError("client went away")
    assert snapshot(store) == before


def test_failing_operation_undoes_earlier_ones(sales: Store) -> None:
    before = snapshot(sales)
    with pytest.raises(AlreadyExists), sales.transaction() as uow:
        uow.partitions.add([partition(["new", "1"])])
        put_partitions(uow, "sales", "orders", {"ds=new/hr=1": [NAME]})
        uow.partitions.add([partition(["new", "2"]), partition(["2024-01-01", "0"])])  # one exists
    assert snapshot(sales) == before


def test_failing_statistics_write_leaves_earlier_statistics(sales: Store) -> None:
    with sales.transaction() as uow:
        put_table(uow, "sales", "orders", [NAME], last_analyzed=1)
    before = snapshot(sales)
    with pytest.raises(NoSuchObject), sales.transaction() as uow:
        put_table(uow, "sales", "orders", [NAME], last_analyzed=2)
        put_partitions(uow, "sales", "orders", {"ds=nope/hr=1": [NAME]})
    assert snapshot(sales) == before
    with sales.read() as uow:
        assert last_analyzed(uow, "sales", "orders", ["name"]) == 1


def test_database_error_mid_request_rolls_back(sales: Store) -> None:
    before = snapshot(sales)
    with pytest.raises(sa.exc.IntegrityError), sales.transaction() as uow:
        uow.partitions.drop("sales", "orders", ["2024-01-01", "0"])
        uow.connection.execute(
            sa.text('INSERT INTO "DBS" ("NAME", "CTLG_NAME") VALUES (\'x\', \'no-such-catalog\')')
        )
    assert snapshot(sales) == before


def test_values_the_database_refuses_are_invalid_input(sales: Store) -> None:
    from dataclasses import replace

    from metastore.errors import InvalidInput

    before = snapshot(sales)
    too_long = replace(sales_table("t2"), sd=replace(sales_table().sd, location="/x" * 3000))
    if sales.engine.dialect.name == "sqlite":
        pytest.skip("SQLite does not enforce column sizes")
    with pytest.raises(InvalidInput, match="refused a value"), sales.transaction() as uow:
        uow.tables.create(too_long)
    assert snapshot(sales) == before
