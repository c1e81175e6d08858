"""TLS on the Thrift port: `metastore serve --tls-cert/--tls-key[/--tls-client-ca]` with our Python client and
`metastore sql --connect thrifts://`, refusal of plaintext and hostile handshakes without harm to other
connections, and certificate reload on SIGHUP. Certificates are made by the tests with the openssl CLI."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSSLSocket, TTransport
from thrift.transport.TTransport import TTransportException

from metastore.api.hive_metastore import ThriftHiveMetastore
from metastore.catalog import Database
from metastore.client import ConnectionFailed, ThriftMetastoreClient, connect
from metastore.server.auth import write_password_entry
from metastore.server.main import is_loopback
from server.harness import ServerProcess, metastore_exe, start_server
from server.harness import connect as plain_connect

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl command is not installed")


@dataclass(frozen=True)
class Pki:
    """A test CA and certificates it signed: two server certificates (serials 1001, 2002) and a client one."""

    ca: Path
    server_cert: Path
    server_key: Path
    server2_cert: Path
    server2_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _make_ca(d: Path, name: str) -> tuple[Path, Path]:
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "2", "-subj", f"/CN={name}", cwd=d)
    return d / f"{name}.crt", d / f"{name}.key"


def _make_cert(d: Path, name: str, ca: tuple[Path, Path], serial: int, ext: str) -> tuple[Path, Path]:
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=d)
    (d / f"{name}.ext").write_text(ext + "\n")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", str(ca[0]), "-CAkey", str(ca[1]),
             "-set_serial", str(serial), "-days", "2", "-out", f"{name}.crt", "-extfile", f"{name}.ext", cwd=d)
    return d / f"{name}.crt", d / f"{name}.key"


def make_pki(d: Path) -> Pki:
    """Certificates for 127.0.0.1/localhost signed by a fresh CA, plus an unrelated CA."""
    d.mkdir(parents=True, exist_ok=True)
    ca = _make_ca(d, "testca")
    server_ext = "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth"
    s1 = _make_cert(d, "server1", ca, 1001, server_ext)
    s2 = _make_cert(d, "server2", ca, 2002, server_ext)
    c = _make_cert(d, "client", ca, 3003, "extendedKeyUsage=clientAuth")
    other = _make_ca(d, "otherca")
    return Pki(ca[0], s1[0], s1[1], s2[0], s2[1], c[0], c[1], other[0])


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def _tls_server(tmp_path: Path, pki: Pki, *extra: str, cert: Path | None = None, key: Path | None = None,
                workers: int = 2) -> ServerProcess:
    return start_server(
        tmp_path, f"sqlite:///{tmp_path / 'm.db'}", workers=workers,
        extra_args=["--tls-cert", str(cert or pki.server_cert), "--tls-key", str(key or pki.server_key), *extra],
    )


def _raw_tls(port: int, ca: Path) -> ssl.SSLSocket:
    ctx = ssl.create_default_context(cafile=str(ca))
    return ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="127.0.0.1")


def _serial(port: int, ca: Path) -> int:
    with _raw_tls(port, ca) as s:
        cert = s.getpeercert()
        assert cert is not None
        return int(cert["serialNumber"], 16)


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    """True when the server closes the connection (EOF or reset) within `within` seconds."""
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except (ConnectionResetError, BrokenPipeError):
        return True
    return True


def _tls_thrift_client(port: int, ca: Path) -> tuple[ThriftHiveMetastore.Client, TTransport.TBufferedTransport]:
    """A bare generated client over TSSLSocket: no reconnect, so a dropped connection shows as an error."""
    ctx = ssl.create_default_context(cafile=str(ca))
    sock = TSSLSocket.TSSLSocket("127.0.0.1", port, ssl_context=ctx, server_hostname="127.0.0.1")
    sock.setTimeout(20_000)
    trans = TTransport.TBufferedTransport(sock)
    trans.open()
    return ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocolAccelerated(trans)), trans


def test_tls_server_with_our_client_and_the_sql_shell(tmp_path: Path, pki: Pki) -> None:
    server = _tls_server(tmp_path, pki)
    try:
        line = server.ready_line
        assert f"listening on thrifts://127.0.0.1:{server.port}" in line
        assert "TLS on" in line and str(pki.server_cert) in line
        with ThriftMetastoreClient(f"thrifts://127.0.0.1:{server.port}", tls_ca=str(pki.ca)) as client:
            client.create_database(Database("tls_db", location_uri=f"file:{tmp_path / 'tls_db'}"))
            assert "tls_db" in client.list_databases()
        with connect(f"thrifts://localhost:{server.port}", tls_ca=str(pki.ca)) as client:
            assert client.get_database("tls_db").name == "tls_db"
        out = subprocess.run(
            [metastore_exe(), "sql", "--connect", f"thrifts://127.0.0.1:{server.port}", "--tls-ca", str(pki.ca),
             "--output", "csv", "-e", "CREATE TABLE tls_db.t (a INT); SHOW TABLES IN tls_db"],
            capture_output=True, text=True, timeout=120,
        )
        assert out.returncode == 0, out.stderr
        assert "t" in out.stdout.split()
        # Without the private CA the system CAs do not vouch for the certificate: refused, one line.
        with pytest.raises(ConnectionFailed, match="CERTIFICATE_VERIFY_FAILED"):
            ThriftMetastoreClient(f"thrifts://127.0.0.1:{server.port}", timeout=10)
    finally:
        assert server.stop() == 0
    key_body = [ln for ln in pki.server_key.read_text().splitlines() if ln and not ln.startswith("-----")]
    assert key_body and not any(part in server.output for part in key_body)


def test_client_certificate_required(tmp_path: Path, pki: Pki) -> None:
    server = _tls_server(tmp_path, pki, "--tls-client-ca", str(pki.ca))
    uri = f"thrifts://127.0.0.1:{server.port}"
    try:
        assert "client certificates required" in server.ready_line
        with ThriftMetastoreClient(uri, tls_ca=str(pki.ca), tls_cert=str(pki.client_cert),
                                   tls_key=str(pki.client_key)) as client:
            assert "default" in client.list_databases()
        # TLS 1.3 reports the missing certificate after the client's side of the handshake: on the first call.
        with pytest.raises(ConnectionFailed):
            client = ThriftMetastoreClient(uri, tls_ca=str(pki.ca), timeout=10)
            client.list_databases()
        time.sleep(0.3)
        assert "TLS handshake with" in server.output
        with ThriftMetastoreClient(uri, tls_ca=str(pki.ca), tls_cert=str(pki.client_cert),
                                   tls_key=str(pki.client_key)) as client:
            assert "default" in client.list_databases()
        # The shell presents a client certificate too.
        shell = [metastore_exe(), "sql", "--connect", uri, "--tls-ca", str(pki.ca), "--output", "csv"]
        out = subprocess.run([*shell, "--tls-cert", str(pki.client_cert), "--tls-key", str(pki.client_key),
                              "-e", "SHOW DATABASES"], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and "default" in out.stdout.split(), out.stderr
        out = subprocess.run([*shell, "-e", "SHOW DATABASES"], capture_output=True, text=True, timeout=120)
        assert out.returncode == 1 and "default" not in out.stdout
        for args, message in ((["--tls-cert", str(pki.client_cert)], "--tls-cert and --tls-key go together"),
                              (["--connect", f"thrift://127.0.0.1:{server.port}"], "need a thrifts:// URI")):
            out = subprocess.run([*shell, *args, "-e", "SHOW DATABASES"], capture_output=True, text=True,
                                 timeout=120)
            lines = out.stderr.strip().splitlines()
            assert out.returncode == 1 and len(lines) == 1 and message in lines[0], out.stderr
    finally:
        assert server.stop() == 0


def test_plaintext_garbage_and_stalled_handshakes_close_only_that_connection(tmp_path: Path, pki: Pki) -> None:
    server = _tls_server(tmp_path, pki, "--tls-handshake-timeout", "1.5")
    uri = f"thrifts://127.0.0.1:{server.port}"
    try:
        keep = ThriftMetastoreClient(uri, tls_ca=str(pki.ca))
        assert "default" in keep.list_databases()
        # A plaintext Thrift client: its call bytes are not a TLS ClientHello, the server closes the connection.
        plain = plain_connect(server.port, timeout=10)
        with pytest.raises((TTransportException, ConnectionResetError)):  # closed: no reply, no hang
            plain.get_all_databases()
        plain._iprot.trans.close()
        # Garbage bytes in place of a handshake.
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as junk:
            junk.sendall(os.urandom(64) + b"\x16\x03\x01\xff\xff" + b"\x00" * 300)
            assert _closed_by_server(junk, within=10)
        # A handshake that never finishes: half a record header, then silence. Closed after the timeout.
        started = time.monotonic()
        stalled = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        stalled.sendall(b"\x16\x03")
        # Meanwhile other connections are served.
        assert keep.get_database("default").name == "default"
        with ThriftMetastoreClient(uri, tls_ca=str(pki.ca)) as other:
            assert "default" in other.list_databases()
        assert _closed_by_server(stalled, within=10)
        assert time.monotonic() - started < 8
        stalled.close()
        # A client trickling its handshake one byte at a time still gets only the handshake timeout in all.
        trickle = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        started = time.monotonic()
        hello = b"\x16\x03\x01\x02\x00" + b"\x01" + b"\x00" * 40
        closed = False
        for byte in hello:
            try:
                trickle.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            time.sleep(0.4)
            if time.monotonic() - started > 6:
                break
        assert closed or _closed_by_server(trickle, within=1)
        assert time.monotonic() - started < 6
        trickle.close()
        silent = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        assert _closed_by_server(silent, within=10)  # nothing sent at all: closed after the timeout too
        silent.close()
        assert keep.get_database("default").name == "default"
        keep.close()
        time.sleep(0.3)
        refusals = [ln for ln in server.output.splitlines() if "TLS handshake with" in ln]
        assert len(refusals) >= 4, server.output
        assert any("timed out" in ln for ln in refusals)
        assert "Traceback" not in server.output
    finally:
        assert server.stop() == 0


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1:DeprecationWarning")
def test_clients_older_than_tls_1_2_are_refused(tmp_path: Path, pki: Pki) -> None:
    server = _tls_server(tmp_path, pki, workers=1)

    def handshake(version: ssl.TLSVersion) -> str | None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(cafile=str(pki.ca))
        # OpenSSL 3 will not even offer TLS 1.0/1.1 at its default security level: level 0 lets this client try.
        ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
        ctx.minimum_version = ctx.maximum_version = version
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw, \
                ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            return tls.version()

    try:
        for old in (ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1):
            with pytest.raises((ssl.SSLError, ConnectionResetError)):
                handshake(old)
        assert handshake(ssl.TLSVersion.TLSv1_2) == "TLSv1.2"  # the oldest version served
        time.sleep(0.3)
        refused = [ln for ln in server.output.splitlines() if "TLS handshake with" in ln]
        assert len(refused) == 2 and all("UNSUPPORTED_PROTOCOL" in ln for ln in refused), server.output
        with ThriftMetastoreClient(f"thrifts://127.0.0.1:{server.port}", tls_ca=str(pki.ca)) as client:
            assert "default" in client.list_databases()
    finally:
        assert server.stop() == 0


def test_sighup_reloads_the_certificate_and_keeps_connections(tmp_path: Path, pki: Pki) -> None:
    cert = tmp_path / "live.crt"
    key = tmp_path / "live.key"
    shutil.copy(pki.server_cert, cert)
    shutil.copy(pki.server_key, key)
    server = _tls_server(tmp_path, pki, cert=cert, key=key, workers=2)
    try:
        assert _serial(server.port, pki.ca) == 1001
        old, old_trans = _tls_thrift_client(server.port, pki.ca)
        assert "default" in old.get_all_databases()
        # Replace the files, then ask for a reload (the parent forwards SIGHUP to every worker).
        shutil.copy(pki.server2_cert, cert)
        shutil.copy(pki.server2_key, key)
        server.signal(signal.SIGHUP)
        deadline = time.monotonic() + 15
        while _serial(server.port, pki.ca) != 2002:
            assert time.monotonic() < deadline, server.output
            time.sleep(0.2)
        time.sleep(1.5)  # every worker's accept loop has seen its SIGHUP
        # Whichever worker accepts, a new connection sees the new certificate.
        assert {_serial(server.port, pki.ca) for _ in range(12)} == {2002}
        assert server.output.count("TLS certificate reloaded") == 2, server.output
        # The connection made before the reload is still open and served.
        assert old.get_database("default").name == "default"
        old_trans.close()
        # A broken file on reload keeps the previous certificate.
        key.write_text("not a key\n")
        server.signal(signal.SIGHUP)
        time.sleep(1.5)
        assert "TLS reload failed" in server.output
        assert _serial(server.port, pki.ca) == 2002
        assert server.process.poll() is None
    finally:
        assert server.stop() == 0


def test_bad_tls_settings_are_clear_errors(tmp_path: Path, pki: Pki) -> None:
    base = [metastore_exe(), "serve", "--db", f"sqlite:///{tmp_path / 'x.db'}", "--warehouse", str(tmp_path),
            "--port", "0"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("METASTORE_")}
    out = subprocess.run([*base, "--tls-cert", str(pki.server_cert)], capture_output=True, text=True, env=env,
                         timeout=60)
    assert out.returncode != 0 and "--tls-key" in out.stderr
    out = subprocess.run([*base, "--tls-cert", str(pki.server_cert), "--tls-key", str(pki.client_key)],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode != 0 and str(pki.server_cert) in out.stderr
    key_body = [ln for ln in pki.client_key.read_text().splitlines() if ln and not ln.startswith("-----")]
    assert not any(part in out.stderr + out.stdout for part in key_body)
    out = subprocess.run([*base, "--tls-cert", str(tmp_path / "missing.crt"), "--tls-key", str(pki.server_key)],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode != 0 and "missing.crt" in out.stderr
    # Environment variables configure TLS too (flags > environment > defaults).
    out = subprocess.run(base, capture_output=True, text=True, timeout=60,
                         env={**env, "METASTORE_TLS_CERT": str(pki.server_cert)})
    assert out.returncode != 0 and "--tls-key" in out.stderr


def test_environment_turns_tls_on(tmp_path: Path, pki: Pki) -> None:
    env = {"METASTORE_TLS_CERT": str(pki.server_cert), "METASTORE_TLS_KEY": str(pki.server_key)}
    server = start_server(tmp_path, f"sqlite:///{tmp_path / 'm.db'}", workers=1, env=env)
    try:
        assert "thrifts://" in server.ready_line
        with ThriftMetastoreClient(f"thrifts://127.0.0.1:{server.port}", tls_ca=str(pki.ca)) as client:
            assert "default" in client.list_databases()
    finally:
        assert server.stop() == 0


AUTH_WARNING = "without authentication or an authorization policy: anyone who can reach the port"


def _warnings(server: ServerProcess, text: str) -> list[str]:
    return [ln for ln in server.output.splitlines() if "WARNING" in ln and text in ln]


def test_listening_beyond_loopback_warns_without_authentication_policy_or_tls(tmp_path: Path, pki: Pki) -> None:
    server = start_server(tmp_path, f"sqlite:///{tmp_path / 'm.db'}", workers=1,
                          extra_args=["--host", "0.0.0.0"])
    try:
        time.sleep(0.2)
        assert len(_warnings(server, AUTH_WARNING)) == 1, server.output
        assert len(_warnings(server, "without TLS")) == 1, server.output
    finally:
        assert server.stop() == 0
    # A policy alone silences the first warning (a warning of its own says set_ugi is believed); TLS is still off.
    policy = tmp_path / "policy.toml"
    policy.write_text('[[grants]]\nprincipals = ["u"]\ndatabases = ["*"]\npermissions = ["read"]\n')
    server = start_server(tmp_path / "policy", f"sqlite:///{tmp_path / 'p.db'}", workers=1,
                          extra_args=["--host", "0.0.0.0", "--authorization-policy", str(policy)])
    try:
        time.sleep(0.2)
        assert not _warnings(server, AUTH_WARNING), server.output
        assert len(_warnings(server, "without TLS")) == 1, server.output
    finally:
        assert server.stop() == 0
    # Authentication over TLS: nothing to warn about.
    passwords = tmp_path / "passwords"
    write_password_entry(passwords, "u", "pw-of-u")
    server = _tls_server(tmp_path / "auth", pki, "--host", "0.0.0.0", "--authentication", "config",
                         "--password-file", str(passwords), workers=1)
    try:
        time.sleep(0.2)
        assert "WARNING" not in server.output, server.output
    finally:
        assert server.stop() == 0
    server = start_server(tmp_path / "lo", f"sqlite:///{tmp_path / 'lo.db'}", workers=1)
    try:
        time.sleep(0.2)
        assert "WARNING" not in server.output, server.output
    finally:
        assert server.stop() == 0


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("localhost", True), ("LOCALHOST", True),
    ("0.0.0.0", False), ("::", False), ("10.1.2.3", False), ("192.0.2.1", False), ("metastore.example.com", False),
    ("localhost.example.com", False),
])
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
