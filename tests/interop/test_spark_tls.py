"""Spark 4's built-in Hive 2.3.10 client (a real JVM HMS client) against our server over TLS.

The server serves only TLS (`--tls-cert/--tls-key`); Spark trusts our test CA through a JKS truststore made with
`keytool -importcert` and `hive.metastore.use.SSL`. The scenario is the one of test_spark_client.py (CREATE TABLE,
INSERT, ANALYZE ... FOR COLUMNS, DESCRIBE EXTENDED, ...), run by the same script; the TLS settings reach Spark's
JVM through PYSPARK_SUBMIT_ARGS, so the script itself is unchanged. No recording proxy: it speaks plaintext.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from server.harness import start_server
from server.test_tls import make_pki

from interop.test_spark_client import EXPECTED_ROWS, SCRIPT

pytestmark = [
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("keytool") is None or shutil.which("openssl") is None,
                       reason="needs keytool and openssl"),
]

TRUSTSTORE_PASSWORD = "trustpass"


def test_spark_hive_client_over_tls(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    truststore = tmp_path / "truststore.jks"
    subprocess.run(
        ["keytool", "-importcert", "-noprompt", "-alias", "metastore-test-ca", "-file", str(pki.ca),
         "-keystore", str(truststore), "-storetype", "JKS", "-storepass", TRUSTSTORE_PASSWORD],
        check=True, capture_output=True, timeout=60,
    )
    server = start_server(
        tmp_path / "serve", f"sqlite:///{tmp_path / 'm.db'}", workers=2,
        extra_args=["--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key), "--log-level", "DEBUG"],
    )
    try:
        assert "thrifts://" in server.ready_line
        submit_args = " ".join([
            "--conf spark.hadoop.hive.metastore.use.SSL=true",
            f"--conf spark.hadoop.hive.metastore.truststore.path={truststore}",
            f"--conf spark.hadoop.hive.metastore.truststore.password={TRUSTSTORE_PASSWORD}",
            "pyspark-shell",
        ])
        proc = subprocess.run(
            [sys.executable, str(SCRIPT), "--uri", f"thrift://127.0.0.1:{server.port}",
             "--warehouse", str(tmp_path / "spark-warehouse")],
            capture_output=True, text=True, timeout=600, env={**os.environ, "PYSPARK_SUBMIT_ARGS": submit_args},
        )
        if proc.returncode != 0 or not proc.stdout.strip():
            pytest.fail(f"Spark client script exited {proc.returncode}:\n{proc.stderr[-5000:]}", pytrace=False)
        steps = {s["step"]: s for s in json.loads(proc.stdout)["steps"]}
        problems = []
        for step, want in EXPECTED_ROWS.items():
            got = steps[step]
            if "error" in got:
                problems.append(f"{step} ({got['sql']}) failed: {got['error']}")
            elif got["rows"] != want:
                problems.append(f"{step}: expected {want}, got {got['rows']}")
        assert not problems, "\n".join(problems) + f"\nserver log:\n{server.output[-3000:]}"
    finally:
        assert server.stop() == 0
    # Every connection Spark made completed its handshake: nothing was refused.
    assert "TLS handshake with" not in server.output, server.output
    # On the server's side: Spark's calls arrived here, over TLS (the port speaks nothing else), from the
    # database's creation through ANALYZE's statistics (an alter_table of the table's parameters) to the drops.
    served = set(re.findall(r"metastore\.server\.calls: (\w+) took", server.output))
    expected = {"create_database", "get_table", "drop_database"}
    assert expected <= served, sorted(served)
    # Hive's Java client picks create_table or create_table_with_environment_context (and likewise for drop_table)
    # by whether it carries an environment context; either is Spark's call arriving here.
    for call in ("create_table", "drop_table"):
        assert {call, f"{call}_with_environment_context"} & served, sorted(served)
    assert any(name.startswith("alter_table") for name in served), sorted(served)
    assert TRUSTSTORE_PASSWORD not in server.output
