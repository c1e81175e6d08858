"""pymetastore and hmsclient over TLS: each client's own thrift package opens a TSSLSocket (CA file, certificate
and host name verified) to a server that serves only TLS, and runs the whole interop scenario through it.

The scenario, the client virtualenvs and the expected answers are those of test_outside_clients.py; only the
socket differs (scenario_common.open_socket with --tls-ca)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from server.harness import start_server
from server.test_tls import make_pki

from interop.client_venvs import CLIENTS, ClientVenvError, run_in_venv
from interop.expected_outcomes import check_steps, client_expectations, common_expectations
from interop.scenarios.scenario_common import Names
from interop.test_outside_clients import scenario_prefix

pytestmark = [
    pytest.mark.clients,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command"),
]


@pytest.mark.parametrize("name", ["pymetastore", "hmsclient"])
def test_outside_client_over_tssl_socket(name: str, tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    server = start_server(
        tmp_path / "serve", f"sqlite:///{tmp_path / 'm.db'}", workers=2,
        extra_args=["--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key), "--log-level", "DEBUG"],
    )
    client = CLIENTS[name]
    try:
        assert "thrifts://" in server.ready_line
        args = ["--host", "127.0.0.1", "--port", str(server.port), "--prefix", scenario_prefix(name)]
        try:
            doc = run_in_venv(client, client.scenario_path, [*args, "--tls-ca", str(pki.ca)])
        except ClientVenvError as exc:
            pytest.fail(str(exc), pytrace=False)
        names = Names(scenario_prefix(name))
        expectations = {**common_expectations(names), **client_expectations(name, names)}
        problems = check_steps(doc["steps"], expectations, lambda _step: True)
        assert not problems, f"{name} over TLS: {len(problems)} step(s) differ:\n" + "\n".join(problems)
    finally:
        assert server.stop() == 0
    # This port speaks only TLS, so the calls the server logged came through the client's TSSLSocket; none of
    # its handshakes failed.
    for call in ("create_database", "create_table", "update_table_column_statistics", "drop_database"):
        assert f"metastore.server.calls: {call} took" in server.output, call
    assert "TLS handshake with" not in server.output, server.output
