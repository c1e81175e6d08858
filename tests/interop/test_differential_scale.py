"""The reference Hive Metastore 2.3.10 as a differential for statistics answers at 10,000 partitions (issue 15 §4).

Both servers on PostgreSQL hold the same table of 10,000 partitions × 5 bigint columns with statistics for every
partition and column: ours filled through Thrift, the reference filled through Thrift for partition 0 and by SQL
in Hive's schema for the rest (tests/interop/many_partitions.py; the reference takes minutes to fill through
Thrift). get_aggr_stats_for over all 10,000 and over 100 partitions and get_partitions_statistics_req over
10,000 and over 100 must answer the same on both, and equal the values the fill implies. bench/bench_scale.py
runs the same comparison at 30 columns (and at 100,000 partitions for the aggregate) before timing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from interop.many_partitions import (
    DB,
    TABLE,
    add_partitions,
    column_names,
    create_table,
    differential,
    fill_reference_sql,
    partition_name,
)
from interop.our_server import start_our_server
from interop.postgres_db import create_scratch_database, drop_scratch_database
from interop.reference_hms import PostgresTarget, start_reference_hms
from metastore.api.hive_metastore import ttypes as T

pytestmark = [pytest.mark.pg, pytest.mark.reference, pytest.mark.slow]

PARTITIONS = 10_000
COLUMNS = 5


def connect(host: str, port: int, timeout_s: float = 300.0) -> tuple[Any, Any]:
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    from metastore.api.hive_metastore import ThriftHiveMetastore

    sock = TSocket.TSocket(host, port)
    sock.setTimeout(timeout_s * 1000)
    transport = TTransport.TBufferedTransport(sock)
    transport.open()
    return ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocolAccelerated(transport)), transport


@pytest.fixture(scope="module")
def both(pg_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[str, int]]]:
    """(host, port) of ours and of the reference, each on a fresh PostgreSQL database holding the table."""
    admin = os.environ.get("METASTORE_TEST_PG_ADMIN", pg_server)
    cleanups = []
    try:
        ours_db = create_scratch_database(admin, "scaleours")
        cleanups.append(lambda: drop_scratch_database(ours_db))
        ref_db = create_scratch_database(admin, "scaleref")
        cleanups.append(lambda: drop_scratch_database(ref_db))
        ours = start_our_server(tmp_path_factory.mktemp("scale-ours"), ours_db.url)
        cleanups.append(ours.stop)
        ref = start_reference_hms(
            tmp_path_factory.mktemp("scale-ref"),
            postgres=PostgresTarget(ref_db.host, ref_db.port, ref_db.name, ref_db.user, ref_db.password),
        )
        cleanups.append(ref.stop)
        addresses = {"ours": ours.address, "reference": ref.address}
        for server, address in addresses.items():
            client, transport = connect(*address)
            try:
                table = create_table(client, T, COLUMNS)
                add_partitions(client, T, table, COLUMNS, 0, 1 if server == "reference" else PARTITIONS)
            finally:
                transport.close()
        fill_reference_sql(ref_db.url, PARTITIONS, COLUMNS)
        yield addresses
    finally:
        for c in reversed(cleanups):
            c()


def test_statistics_answers_equal_the_reference_at_10000_partitions(both):
    results = differential(both, PARTITIONS, COLUMNS, connect)
    assert len(results) == 4  # aggregate over 100 and 10,000; per partition over 100 and 10,000
    assert [line for line, equal in results if not equal] == []


def test_answers_at_10000_partitions_are_the_fill_s_values(both):
    """Not only equal to each other: both equal the values the fill implies (partition i: column c low -c-i,
    high 1000(c+1)+i, c % 7 nulls, 100+c distinct values)."""
    cols = column_names(COLUMNS)
    names = [partition_name(i) for i in range(PARTITIONS)]
    for server, address in both.items():
        client, transport = connect(*address)
        try:
            req = T.PartitionsStatsRequest(dbName=DB, tblName=TABLE, colNames=cols, partNames=names)
            aggr = client.get_aggr_stats_for(req)
            assert aggr.partsFound == PARTITIONS, server
            got = {o.colName: o.statsData.longStats for o in aggr.colStats}
            for c, name in enumerate(cols):
                s = got[name]
                assert (s.lowValue, s.highValue, s.numNulls) == (
                    -c - (PARTITIONS - 1), 1000 * (c + 1) + PARTITIONS - 1, (c % 7) * PARTITIONS
                ), (server, name)
                assert s.numDVs >= 100 + c, (server, name)
            per = client.get_partitions_statistics_req(req).partStats
            assert len(per) == PARTITIONS, server
            for i in (0, 1, 4_321, PARTITIONS - 1):
                stats = {o.colName: o.statsData.longStats for o in per[partition_name(i)]}
                assert sorted(stats) == cols, server
                for c, name in enumerate(cols):
                    s = stats[name]
                    assert (s.lowValue, s.highValue, s.numNulls, s.numDVs) == (
                        -c - i, 1000 * (c + 1) + i, c % 7, 100 + c
                    ), (server, i, name)
        finally:
            transport.close()


def test_the_reference_fixture_takes_new_partitions_after_the_sql_fill(both):
    """The SQL fill moved the reference's id sequences past the copied rows: a partition and statistics added
    through Thrift afterwards land (no duplicate key), and both servers still answer the same over all."""
    for address in both.values():
        client, transport = connect(*address)
        try:
            add_partitions(client, T, client.get_table(DB, TABLE), COLUMNS, PARTITIONS, PARTITIONS + 1)
        finally:
            transport.close()
    client, transport = connect(*both["ours"])
    try:
        names = client.get_partition_names(DB, TABLE, -1)
    finally:
        transport.close()
    assert len(names) == PARTITIONS + 1
    results = differential(both, PARTITIONS + 1, COLUMNS, connect)
    assert [line for line, equal in results if not equal] == []
