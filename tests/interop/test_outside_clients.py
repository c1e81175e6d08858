"""Outside Python HMS clients (pymetastore, hmsclient, hive-metastore-client) against our server.

Each client runs the scenario of tests/interop/scenarios in its own virtualenv (their thrift pins conflict); the
answers are checked against the hard expectations in expected_outcomes.py. One scenario run per client and server
is shared by the tests below, which look at different parts of it.
"""

from __future__ import annotations

from typing import Any

import pytest

from interop.client_venvs import CLIENTS, SCENARIO_DIR, ClientVenvError, run_in_venv, run_scenario
from interop.expected_outcomes import check_steps, client_expectations, common_expectations
from interop.scenarios.scenario_common import Names

pytestmark = [pytest.mark.clients, pytest.mark.slow]

_runs: dict[tuple[str, tuple[str, int]], dict[str, Any]] = {}


def scenario_prefix(client: str) -> str:
    # Distinct database names per client: every client's run can share one server.
    return "cl_" + client.replace("-", "_")


@pytest.fixture(params=sorted(CLIENTS))
def client_run(request: pytest.FixtureRequest, our_server: tuple[str, int]) -> tuple[str, dict[str, Any]]:
    """(client name, scenario JSON) of one client's run against our server; run once per client and server."""
    name = request.param
    key = (name, our_server)
    if key not in _runs:
        try:
            _runs[key] = run_scenario(CLIENTS[name], *our_server, prefix=scenario_prefix(name))
        except ClientVenvError as exc:
            pytest.fail(str(exc), pytrace=False)
    return name, _runs[key]


ERROR_WORDS = ("missing", "negative", "low_above", "kind_mismatch", "invalid", "none")


def step_category(step: str) -> str:
    """Which test looks at a step: catalog, stats, errors, deletes or client (the client's own API)."""
    if "." in step and not step.startswith("get_table_column_statistics."):
        return "client"
    if "delete" in step or step.endswith("_deleted"):
        return "deletes"
    is_stats = "statistics" in step or "stats" in step or step.startswith("set_aggr")
    if is_stats:
        return "errors" if any(w in step for w in ERROR_WORDS) else "stats"
    return "catalog"


def _check(client_run: tuple[str, dict[str, Any]], category: str) -> None:
    name, doc = client_run
    names = Names(scenario_prefix(name))
    expectations = {**common_expectations(names), **client_expectations(name, names)}
    problems = check_steps(doc["steps"], expectations, lambda step: step_category(step) == category)
    assert not problems, f"{name}: {len(problems)} step(s) differ from the expected answers:\n" + "\n".join(
        problems
    )


def test_catalog_calls(client_run) -> None:
    """Databases, the every-type table and its partitions: create, read, list, duplicates, unknown names, drops."""
    _check(client_run, "catalog")


def test_statistics_of_every_kind_round_trip(client_run) -> None:
    """Table and partition statistics written with the client's generated types read back unchanged (lastAnalyzed
    included), one column at a time and batched; get_aggr_stats_for aggregates by Hive's rules; needMerge merges."""
    _check(client_run, "stats")


def test_missing_statistics_and_errors(client_run) -> None:
    """Statistics that do not exist are NoSuchObjectException (not an empty reply); invalid statistics are refused
    with InvalidInputException and leave the stored ones alone."""
    _check(client_run, "errors")


def test_deletes(client_run) -> None:
    """delete_table/partition_column_statistics remove exactly what they name; deleting twice is NoSuchObject."""
    _check(client_run, "deletes")


def test_client_high_level_api(client_run) -> None:
    """The client's own helpers (pymetastore's HMS, hmsclient's HMSClient, hive-metastore-client's builders)."""
    _check(client_run, "client")


def test_every_step_has_an_expectation(client_run) -> None:
    """No recorded step escapes the checks above (a new scenario step needs an expectation)."""
    name, doc = client_run
    names = Names(scenario_prefix(name))
    expectations = {**common_expectations(names), **client_expectations(name, names)}
    assert [s["step"] for s in doc["steps"] if s["step"] not in expectations] == []


def test_hmsclient_reads_statistics_that_carry_hll_bit_vectors(our_server: tuple[str, int]) -> None:
    """hmsclient decodes bitVectors as UTF-8 (its IDL says string): statistics stored with a real HLL sketch must
    still be readable by it, because the server sends sketches only when asked to (--fetch-bitvector)."""
    from interop.differential_calls import connect
    from interop.scenarios.scenario_common import orc_storage
    from metastore.api.hive_metastore import ttypes as T
    from metastore.stats.hll import HyperLogLog

    sketch = HyperLogLog()
    sketch.add_hashes(range(1, 5000, 7))
    bit_vector = sketch.to_bytes()
    with pytest.raises(UnicodeDecodeError):
        bit_vector.decode("utf-8")  # the premise: these bytes break a UTF-8 decode
    db, table = "cl_bitvector_db", "with_sketch"
    with connect(*our_server) as conn:
        c = conn.client
        c.create_database(T.Database(name=db, parameters={}))
        c.create_table(
            T.Table(
                tableName=table,
                dbName=db,
                owner="interop",
                sd=orc_storage(T, [("id", "bigint")]),
                partitionKeys=[],
                parameters={},
                tableType="MANAGED_TABLE",
            )
        )
        data = T.ColumnStatisticsData(
            longStats=T.LongColumnStatsData(
                lowValue=1, highValue=4999, numNulls=0, numDVs=714, bitVectors=bit_vector
            )
        )
        stats = T.ColumnStatistics(
            statsDesc=T.ColumnStatisticsDesc(
                isTblLevel=True, dbName=db, tableName=table, lastAnalyzed=1_700_000_000
            ),
            statsObj=[T.ColumnStatisticsObj(colName="id", colType="bigint", statsData=data)],
        )
        assert c.update_table_column_statistics(stats) is True
    try:
        out = run_in_venv(
            CLIENTS["hmsclient"],
            SCENARIO_DIR / "hmsclient_read_stats.py",
            [
                "--host",
                our_server[0],
                "--port",
                str(our_server[1]),
                "--db",
                db,
                "--table",
                table,
                "--column",
                "id",
            ],
        )
        (step,) = out["steps"]
        assert "error" not in step, f"hmsclient could not read the statistics: {step}"
        assert step["result"]["statsObj"][0]["statsData"] == {
            "longStats": {"lowValue": 1, "highValue": 4999, "numNulls": 0, "numDVs": 714}
        }
    finally:
        with connect(*our_server) as conn:
            conn.client.drop_database(db, True, True)
