"""Spark 4's built-in Hive 2.3.10 client (a real JVM HMS client) against our server over Kerberos (SASL GSSAPI).

An MIT KDC of the test's own runs on 127.0.0.1 (tests/server/kdc.py). Spark is configured as a Kerberized Hive
deployment configures it: `hive.metastore.sasl.enabled=true`, `hive.metastore.kerberos.principal=
metastore/_HOST@REALM` (the client replaces _HOST with the host of thrift://localhost:PORT), Hadoop's
`hadoop.security.authentication=kerberos` in a core-site.xml on HADOOP_CONF_DIR, the JVM pointed at the test's
krb5.conf, and the user's ticket in a cache made by kinit (KRB5CCNAME), which Hadoop's login reads. The scenario
(CREATE TABLE, INSERT, ANALYZE ... FOR COLUMNS, DESCRIBE, DROP) is test_spark_client.py's; the server authorizes it
with a policy that knows only the Kerberos principal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from server.harness import start_server
from server.kdc import kdc_available, start_kdc

from interop.test_spark_client import EXPECTED_ROWS, SCRIPT

pytestmark = [
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.skipif(not kdc_available(), reason="needs Debian's krb5-kdc, krb5-admin-server, krb5-user"),
]

CORE_SITE = """<?xml version="1.0"?>
<configuration>
  <property><name>hadoop.security.authentication</name><value>kerberos</value></property>
  <property><name>hadoop.security.authorization</name><value>true</value></property>
</configuration>
"""

POLICY = """
[[grants]]
principals = ["sparkuser"]
databases = ["spark_interop"]
permissions = ["read", "write_stats", "ddl"]

[[grants]]
principals = ["sparkuser"]
databases = ["default"]
permissions = ["read"]
"""


def test_spark_hive_client_over_kerberos(tmp_path: Path) -> None:
    kdc = start_kdc(tmp_path / "kdc")
    try:
        kdc.add_principal("metastore/localhost")
        kdc.add_principal("sparkuser")
        service_keytab = kdc.keytab("metastore/localhost", tmp_path / "metastore.keytab")
        user_env = kdc.kinit("sparkuser", kdc.keytab("sparkuser", tmp_path / "sparkuser.keytab"), tmp_path / "spark.cc")
        policy = tmp_path / "policy.toml"
        policy.write_text(POLICY)
        server = start_server(
            tmp_path / "serve", f"sqlite:///{tmp_path / 'm.db'}", workers=2,
            extra_args=["--authentication", "kerberos", "--kerberos-keytab", str(service_keytab),
                        "--kerberos-principal", f"metastore/_HOST@{kdc.realm}", "--authorization-policy", str(policy)],
            env={"KRB5_CONFIG": str(kdc.krb5_conf)},
        )
        try:
            conf_dir = tmp_path / "hadoop-conf"
            conf_dir.mkdir()
            (conf_dir / "core-site.xml").write_text(CORE_SITE)
            submit_args = " ".join([
                "--conf spark.hadoop.hive.metastore.sasl.enabled=true",
                f"--conf spark.hadoop.hive.metastore.kerberos.principal=metastore/_HOST@{kdc.realm}",
                "--conf spark.hadoop.hadoop.security.authentication=kerberos",
                f"--driver-java-options -Djava.security.krb5.conf={kdc.krb5_conf}",
                "pyspark-shell",
            ])
            env = {**os.environ, **user_env, "PYSPARK_SUBMIT_ARGS": submit_args, "HADOOP_CONF_DIR": str(conf_dir)}
            proc = subprocess.run(
                [sys.executable, str(SCRIPT), "--uri", f"thrift://localhost:{server.port}",
                 "--warehouse", str(tmp_path / "spark-warehouse")],
                capture_output=True, text=True, timeout=600, env=env,
            )
            if proc.returncode != 0 or not proc.stdout.strip():
                pytest.fail(f"Spark client script exited {proc.returncode}:\n{proc.stderr[-5000:]}\n"
                            f"server log:\n{server.output[-3000:]}", pytrace=False)
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
        log = server.output
        assert f"authenticated as sparkuser@{kdc.realm} (GSSAPI)" in log
        assert "Permission denied" not in log
        assert "authentication of the connection" not in log  # no refused connection
    finally:
        kdc.stop()
