"""`serve --authentication ldap`: SASL PLAIN over TLS, each password checked by a simple bind to an OpenLDAP
server (Debian's slapd) that the tests start on 127.0.0.1 with a configuration and users of their own."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from metastore.client import ConnectionFailed, SaslCredentials, ThriftMetastoreClient
from metastore.server.auth import LdapOptions
from server.harness import ServerFailed, ServerProcess, metastore_exe, start_server
from server.ldap_server import PEOPLE, LdapServer, slapd_available, start_slapd
from server.test_tls import Pki, make_pki

pytestmark = pytest.mark.skipif(not slapd_available(), reason="needs Debian's slapd")

USERS = {"frank": "frank's ldap password", "gina": "gina-pw-0815"}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def ldap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LdapServer]:
    server = start_slapd(tmp_path_factory.mktemp("ldap"), USERS)
    try:
        yield server
    finally:
        server.stop()


def _serve(tmp_path: Path, pki: Pki, *ldap_args: str, env: dict[str, str] | None = None) -> ServerProcess:
    return start_server(
        tmp_path, f"sqlite:///{tmp_path / 'm.db'}", workers=2,
        extra_args=["--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key),
                    "--authentication", "ldap", *ldap_args],
        env=env,
    )


def _connect(server: ServerProcess, pki: Pki, user: str, password: str) -> ThriftMetastoreClient:
    return ThriftMetastoreClient(f"thrifts://127.0.0.1:{server.port}", tls_ca=str(pki.ca), timeout=20,
                                 sasl=SaslCredentials("PLAIN", user=user, password=password))


def test_ldap_bind_with_a_base_dn(tmp_path: Path, pki: Pki, ldap: LdapServer) -> None:
    server = _serve(tmp_path, pki, "--ldap-url", ldap.url, "--ldap-base-dn", PEOPLE)
    try:
        assert f"authentication ldap (SASL PLAIN, LDAP {ldap.url})" in server.ready_line
        with _connect(server, pki, "frank", USERS["frank"]) as client:
            assert "default" in client.list_databases()
        refused = [("frank", "gina-pw-0815"), ("nobody", "x"), ("*", USERS["frank"]),
                   (f"frank,{PEOPLE}", USERS["frank"]), ("frank", " ")]
        for user, password in refused:
            with pytest.raises(ConnectionFailed, match="authentication failed"):
                _connect(server, pki, user, password)
        out = subprocess.run(
            [metastore_exe(), "sql", "--connect", f"thrifts://127.0.0.1:{server.port}", "--tls-ca", str(pki.ca),
             "--auth", "plain", "--user", "gina", "--output", "csv", "-e", "SHOW DATABASES"],
            capture_output=True, text=True, timeout=120, env={**os.environ, "METASTORE_PASSWORD": USERS["gina"]},
        )
        assert out.returncode == 0, out.stderr
        time.sleep(0.2)
        log = server.output
        assert "authenticated as frank (PLAIN)" in log and "authenticated as gina (PLAIN)" in log
        # The user name is escaped into the DN: it cannot add RDNs or wildcards of its own.
        assert "uid=frank\\\\,ou\\\\=people" in log or "uid=frank\\,ou\\=people" in log
        assert not any(secret in log for secret in USERS.values())
        assert "in the clear" not in log  # ldap:// on loopback: no warning
    finally:
        assert server.stop() == 0


def test_ldap_bind_with_a_user_dn_pattern_and_an_unreachable_server(tmp_path: Path, pki: Pki,
                                                                   ldap: LdapServer) -> None:
    server = _serve(tmp_path, pki, "--ldap-url", ldap.url, "--ldap-user-dn-pattern", f"uid=%s,{PEOPLE}")
    try:
        with _connect(server, pki, "gina", USERS["gina"]) as client:
            assert "default" in client.list_databases()
    finally:
        assert server.stop() == 0
    down = ldap.url.rsplit(":", 1)[0] + ":1"
    server = _serve(tmp_path / "down", pki, "--ldap-url", down, "--ldap-base-dn", PEOPLE)
    try:
        with pytest.raises(ConnectionFailed, match="authentication failed"):
            _connect(server, pki, "frank", USERS["frank"])
        time.sleep(0.2)
        assert f"LDAP server {down} unavailable" in server.output
    finally:
        assert server.stop() == 0


def test_ldaps_verifies_the_ldap_servers_certificate(tmp_path: Path, pki: Pki) -> None:
    ldaps = start_slapd(tmp_path / "ldaps", USERS, tls=(pki.server_cert, pki.server_key))
    try:
        server = _serve(tmp_path / "ok", pki, "--ldap-url", ldaps.url, "--ldap-base-dn", PEOPLE,
                        "--ldap-ca", str(pki.ca))
        try:
            with _connect(server, pki, "frank", USERS["frank"]) as client:
                assert "default" in client.list_databases()
        finally:
            assert server.stop() == 0
        server = _serve(tmp_path / "other-ca", pki, "--ldap-url", ldaps.url, "--ldap-base-dn", PEOPLE,
                        "--ldap-ca", str(pki.other_ca))
        try:
            with pytest.raises(ConnectionFailed, match="authentication failed"):
                _connect(server, pki, "frank", USERS["frank"])
        finally:
            assert server.stop() == 0
        # Without --ldap-ca the system's CAs decide, and they do not vouch for the test CA: the password is
        # never sent to an LDAP server whose certificate nothing trusts.
        server = _serve(tmp_path / "system-cas", pki, "--ldap-url", ldaps.url, "--ldap-base-dn", PEOPLE,
                        env={"SSL_CERT_FILE": str(pki.other_ca), "SSL_CERT_DIR": str(tmp_path / "no-such-dir")})
        try:
            with pytest.raises(ConnectionFailed, match="authentication failed"):
                _connect(server, pki, "frank", USERS["frank"])
            time.sleep(0.2)
            assert "CERTIFICATE_VERIFY_FAILED" in server.output, server.output
        finally:
            assert server.stop() == 0
        # ... and when the system's trust store holds the CA (OpenSSL's SSL_CERT_FILE), that is what is used.
        server = _serve(tmp_path / "system-trusts", pki, "--ldap-url", ldaps.url, "--ldap-base-dn", PEOPLE,
                        env={"SSL_CERT_FILE": str(pki.ca)})
        try:
            with _connect(server, pki, "frank", USERS["frank"]) as client:
                assert "default" in client.list_databases()
        finally:
            assert server.stop() == 0
    finally:
        ldaps.stop()


def test_starttls_protects_the_bind_on_ldap_urls(tmp_path: Path, pki: Pki) -> None:
    # This slapd refuses simple binds on a connection StartTLS has not upgraded.
    ldap = start_slapd(tmp_path / "ldap", USERS, tls=(pki.server_cert, pki.server_key), starttls=True)
    try:
        assert ldap.url.startswith("ldap://")
        server = _serve(tmp_path / "clear", pki, "--ldap-url", ldap.url, "--ldap-base-dn", PEOPLE)
        try:
            with pytest.raises(ConnectionFailed, match="authentication failed"):
                _connect(server, pki, "frank", USERS["frank"])
            time.sleep(0.2)
            assert "confidentialityRequired" in server.output, server.output
        finally:
            assert server.stop() == 0
        server = _serve(tmp_path / "starttls", pki, "--ldap-url", ldap.url, "--ldap-base-dn", PEOPLE,
                        "--ldap-starttls", "--ldap-ca", str(pki.ca))
        try:
            assert f"LDAP {ldap.url} with StartTLS" in server.ready_line
            with _connect(server, pki, "gina", USERS["gina"]) as client:
                assert "default" in client.list_databases()
            with pytest.raises(ConnectionFailed, match="authentication failed"):
                _connect(server, pki, "gina", USERS["frank"])
        finally:
            assert server.stop() == 0
        # StartTLS verifies the certificate like ldaps://; an untrusted one ends the login before the bind.
        server = _serve(tmp_path / "untrusted", pki, "--ldap-url", ldap.url, "--ldap-base-dn", PEOPLE,
                        "--ldap-starttls", "--ldap-ca", str(pki.other_ca))
        try:
            with pytest.raises(ConnectionFailed, match="authentication failed"):
                _connect(server, pki, "gina", USERS["gina"])
            time.sleep(0.2)
            assert "CERTIFICATE_VERIFY_FAILED" in server.output, server.output
            assert not any(secret in server.output for secret in USERS.values())
        finally:
            assert server.stop() == 0
    finally:
        ldap.stop()


def test_clear_ldap_beyond_loopback_warns(tmp_path: Path, pki: Pki) -> None:
    # 192.0.2.0/24 is TEST-NET-1: never reached (serve does not contact LDAP before the first login).
    server = _serve(tmp_path, pki, "--ldap-url", "ldap://192.0.2.10", "--ldap-base-dn", PEOPLE)
    try:
        warnings = [ln for ln in server.output.splitlines() if "WARNING" in ln and "in the clear" in ln]
        assert len(warnings) == 1 and "--ldap-starttls" in warnings[0], server.output
    finally:
        assert server.stop() == 0


@pytest.mark.parametrize(("url", "starttls", "clear"), [
    ("ldap://127.0.0.1:389", False, False),
    ("ldap://localhost", False, False),
    ("ldap://[::1]:389", False, False),
    ("ldap://ldap.example.com", False, True),
    ("ldap://10.0.0.5", False, True),
    ("ldap://ldap.example.com", True, False),
    ("ldaps://ldap.example.com", False, False),
])
def test_which_ldap_urls_send_passwords_in_clear(url: str, starttls: bool, clear: bool) -> None:
    assert LdapOptions(url=url, base_dn=PEOPLE, starttls=starttls).sends_passwords_in_clear is clear


@pytest.mark.parametrize(("args", "message"), [
    (["--ldap-base-dn", PEOPLE], "needs --ldap-url"),
    (["--ldap-url", "http://x", "--ldap-base-dn", PEOPLE], "must start with ldap:// or ldaps://"),
    (["--ldap-url", "ldap://127.0.0.1:1"], "needs --ldap-base-dn or --ldap-user-dn-pattern"),
    (["--ldap-url", "ldap://127.0.0.1:1", "--ldap-user-dn-pattern", "uid=x"], "must contain %s once"),
    (["--ldap-url", "ldaps://127.0.0.1:1", "--ldap-base-dn", PEOPLE, "--ldap-starttls"], "already speaks TLS"),
    (["--ldap-url", "ldaps://127.0.0.1:1", "--ldap-base-dn", PEOPLE, "--ldap-ca", "/nonexistent/ca.pem"],
     "--ldap-ca /nonexistent/ca.pem does not exist"),
])
def test_unusable_ldap_settings_stop_serve_with_one_line(tmp_path: Path, pki: Pki, args: list[str],
                                                         message: str) -> None:
    with pytest.raises(ServerFailed) as failed:
        _serve(tmp_path, pki, *args)
    lines = [ln for ln in str(failed.value).splitlines()[1:] if ln.strip()]
    assert len(lines) == 1 and message in lines[0], str(failed.value)
