"""SASL on the Thrift port: Kerberos (GSSAPI) against an MIT KDC started by the tests, PLAIN with a password file
over TLS, and hostile negotiations (garbage, silence, oversized frames) that close only their own connection.

The server is `metastore serve` as users run it; clients are our Python client, `metastore sql` and raw sockets.
"""

from __future__ import annotations

import os
import socket
import ssl
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from thrift.transport import TSocket

from metastore.catalog import Database
from metastore.client import ConnectionFailed, SaslCredentials, ThriftMetastoreClient
from metastore.client.sasl import negotiate as client_negotiate
from metastore.server.auth import kerberos_credentials
from metastore.server.sasl import GssapiServer, SecurityLayer
from metastore.server.sasl import negotiate as server_negotiate
from server.harness import ServerFailed, ServerProcess, metastore_exe, start_server
from server.kdc import Kdc, kdc_available, start_kdc
from server.test_tls import Pki, make_pki
from server.wire import call_bytes

pytestmark = pytest.mark.skipif(not kdc_available(), reason="needs Debian's krb5-kdc, krb5-admin-server, krb5-user")

SERVICE = "metastore/localhost"


@dataclass(frozen=True)
class Realm:
    kdc: Kdc
    service_keytab: Path
    alice_env: dict[str, str]
    bob_env: dict[str, str]
    no_ticket_env: dict[str, str]


@pytest.fixture(scope="module")
def realm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Realm]:
    d = tmp_path_factory.mktemp("krb")
    kdc = start_kdc(d / "kdc")
    try:
        kdc.add_principal(SERVICE)
        kdc.add_principal("alice")
        kdc.add_principal("bob")
        kdc.add_principal("other/localhost")
        service_keytab = kdc.keytab(SERVICE, d / "metastore.keytab")
        alice_env = kdc.kinit("alice", kdc.keytab("alice", d / "alice.keytab"), d / "alice.cc")
        bob_env = kdc.kinit("bob", kdc.keytab("bob", d / "bob.keytab"), d / "bob.cc")
        no_ticket_env = {"KRB5_CONFIG": str(kdc.krb5_conf), "KRB5CCNAME": f"FILE:{d / 'empty.cc'}"}
        yield Realm(kdc, service_keytab, alice_env, bob_env, no_ticket_env)
    finally:
        kdc.stop()


@pytest.fixture
def as_user(monkeypatch: pytest.MonkeyPatch):
    """Point this process's Kerberos library at a user's ticket cache (the library reads the variables per call)."""

    def use(env: dict[str, str]) -> None:
        for key, value in env.items():
            monkeypatch.setenv(key, value)

    return use


def _kerberos_server(tmp_path: Path, realm: Realm, *extra: str, workers: int = 2) -> ServerProcess:
    return start_server(
        tmp_path, f"sqlite:///{tmp_path / 'm.db'}", workers=workers,
        extra_args=["--authentication", "kerberos", "--kerberos-keytab", str(realm.service_keytab),
                    "--kerberos-principal", f"metastore/_HOST@{realm.kdc.realm}", *extra],
        env={"KRB5_CONFIG": str(realm.kdc.krb5_conf)},
    )


def _kerberos(qop: str = "auth") -> SaslCredentials:
    return SaslCredentials("GSSAPI", kerberos_principal="metastore/_HOST@METASTORE.TEST", qop=qop)


def test_kerberos_client_with_a_ticket_is_served_as_its_principal(tmp_path: Path, realm: Realm, as_user) -> None:
    server = _kerberos_server(tmp_path, realm)
    try:
        # The server's _HOST became the canonical name of 127.0.0.1; the clients' _HOST is the URI's host, as in
        # Hive's client.
        assert "authentication kerberos (SASL GSSAPI as metastore/localhost@METASTORE.TEST" in server.ready_line
        as_user(realm.alice_env)
        with ThriftMetastoreClient(f"thrift://localhost:{server.port}", sasl=_kerberos()) as client:
            client.create_database(Database("krb_db", location_uri=f"file:{tmp_path / 'krb_db'}"))
            assert "krb_db" in client.list_databases()
        as_user(realm.bob_env)
        with ThriftMetastoreClient(f"thrift://localhost:{server.port}", sasl=_kerberos()) as client:
            assert client.get_database("krb_db").name == "krb_db"
        # By address, the principal is given whole (_HOST would become 127.0.0.1, as in Hive's client).
        explicit = SaslCredentials("GSSAPI", kerberos_principal="metastore/localhost@METASTORE.TEST")
        with ThriftMetastoreClient(f"thrift://127.0.0.1:{server.port}", sasl=explicit) as client:
            assert client.get_database("krb_db").name == "krb_db"
        time.sleep(0.2)
        log = server.output
        assert "authenticated as alice@METASTORE.TEST (GSSAPI)" in log
        assert "authenticated as bob@METASTORE.TEST (GSSAPI)" in log
    finally:
        assert server.stop() == 0


@pytest.mark.parametrize("qop", ["auth-int", "auth-conf"])
def test_kerberos_integrity_and_privacy_wrap_every_frame(tmp_path: Path, realm: Realm, as_user, qop: str) -> None:
    server = _kerberos_server(tmp_path, realm, "--sasl-qop", "auth,auth-int,auth-conf", workers=1)
    try:
        as_user(realm.alice_env)
        with ThriftMetastoreClient(f"thrift://localhost:{server.port}", sasl=_kerberos(qop)) as client:
            name = "p" * 70_000  # a call bigger than one read chunk, through the wrapped frames
            with pytest.raises(Exception, match="p" * 50):
                client.get_database(name)
            assert "default" in client.list_databases()
    finally:
        assert server.stop() == 0


def test_the_client_refuses_unencrypted_frames_under_auth_conf(tmp_path: Path, realm: Realm, as_user) -> None:
    # A server that agrees to auth-conf (the server side of our negotiation, with the real service keytab) and
    # then answers with frames that are only signed: the client must not believe them.
    as_user(realm.alice_env)
    creds = kerberos_credentials(f"{SERVICE}@{realm.kdc.realm}", str(realm.service_keytab))
    listener = socket.create_server(("127.0.0.1", 0))
    served: list[str] = []

    def serve() -> None:
        listener.settimeout(30)
        for _ in range(2):  # the client retries a call once on a fresh connection
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                result = server_negotiate(
                    conn, {"GSSAPI": lambda: GssapiServer(creds, frozenset({SecurityLayer.CONFIDENTIALITY}))}, 10)
                served.append(result.principal)
                (size,) = struct.unpack("!i", conn.recv(4, socket.MSG_WAITALL))
                conn.recv(size, socket.MSG_WAITALL)
                signed = bytes(result.wrapper._ctx.wrap(b"\x80\x01\x00\x02" + b"\x00" * 40, False).message)
                conn.sendall(struct.pack("!i", len(signed)) + signed)
                time.sleep(0.2)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        client = ThriftMetastoreClient(f"thrift://localhost:{listener.getsockname()[1]}", sasl=_kerberos("auth-conf"),
                                       timeout=10)
        with pytest.raises(ConnectionFailed, match="arrived unencrypted on a connection negotiated with auth-conf"):
            client.list_databases()
        thread.join(timeout=30)
        assert served == ["alice@METASTORE.TEST"] * 2
    finally:
        listener.close()


def test_the_server_closes_connections_whose_frames_break_the_agreed_layer(tmp_path: Path, realm: Realm,
                                                                          as_user) -> None:
    server = _kerberos_server(tmp_path, realm, "--sasl-qop", "auth-int,auth-conf", workers=1)
    try:
        as_user(realm.alice_env)
        good = ThriftMetastoreClient(f"thrift://localhost:{server.port}", sasl=_kerberos("auth-conf"))
        assert "default" in good.list_databases()
        frame = b"\x80\x01\x00\x01" + b"\x00" * 40
        for qop, bad in (("auth-conf", lambda layer: layer._ctx.wrap(frame, False).message),  # signed only
                         ("auth-int", lambda layer: bytes(layer.wrap(frame))[:-1] + b"\x00")):  # altered
            sock = TSocket.TSocket("127.0.0.1", server.port)
            sock.setTimeout(10_000)
            sock.open()
            layer = client_negotiate(sock, "localhost", _kerberos(qop))
            assert layer is not None
            payload = bytes(bad(layer))
            sock.write(struct.pack("!i", len(payload)) + payload)
            sock.flush()
            assert _closed_within(sock.handle, 5)
            sock.close()
        assert "default" in good.list_databases()
        good.close()
        time.sleep(0.2)
        refusals = [ln for ln in server.output.splitlines() if "SASL frame failed its security layer check" in ln]
        assert len(refusals) == 2, server.output
        assert "arrived unencrypted on a connection negotiated with auth-conf" in refusals[0]
        assert "Traceback" not in server.output and "unexpected error" not in server.output
    finally:
        assert server.stop() == 0


def test_a_qop_the_server_does_not_offer_is_refused(tmp_path: Path, realm: Realm, as_user) -> None:
    server = _kerberos_server(tmp_path, realm, workers=1)  # offers auth only
    try:
        as_user(realm.alice_env)
        with pytest.raises(ConnectionFailed, match="does not offer SASL QOP auth-conf"):
            ThriftMetastoreClient(f"thrift://localhost:{server.port}", sasl=_kerberos("auth-conf"), timeout=10)
    finally:
        assert server.stop() == 0


def test_clients_without_a_ticket_or_without_sasl_are_refused(tmp_path: Path, realm: Realm, as_user) -> None:
    server = _kerberos_server(tmp_path, realm, workers=1)
    try:
        as_user(realm.no_ticket_env)
        with pytest.raises(ConnectionFailed, match="kinit first"):
            ThriftMetastoreClient(f"thrift://localhost:{server.port}", sasl=_kerberos(), timeout=10)
        # A plain Thrift client (no SASL): its first call fails and the server says why in one line.
        with pytest.raises(ConnectionFailed):
            ThriftMetastoreClient(f"thrift://localhost:{server.port}", timeout=10).list_databases()
        as_user(realm.alice_env)
        with ThriftMetastoreClient(f"thrift://localhost:{server.port}", sasl=_kerberos()) as client:
            assert "default" in client.list_databases()
        time.sleep(0.2)
        assert "a client without SASL?" in server.output
    finally:
        assert server.stop() == 0


def test_a_ticket_for_another_service_is_refused(tmp_path: Path, realm: Realm, as_user) -> None:
    server = _kerberos_server(tmp_path, realm, workers=1)
    try:
        as_user(realm.alice_env)
        creds = SaslCredentials("GSSAPI", kerberos_principal="other/localhost@METASTORE.TEST")
        with pytest.raises(ConnectionFailed, match="authentication failed"):
            ThriftMetastoreClient(f"thrift://localhost:{server.port}", sasl=creds, timeout=10)
        time.sleep(0.2)
        assert "Kerberos authentication failed" in server.output
    finally:
        assert server.stop() == 0


def test_sql_shell_with_kerberos(tmp_path: Path, realm: Realm) -> None:
    server = _kerberos_server(tmp_path, realm, workers=1)
    try:
        out = subprocess.run(
            [metastore_exe(), "sql", "--connect", f"thrift://localhost:{server.port}", "--auth", "kerberos",
             "--kerberos-principal", "metastore/_HOST@METASTORE.TEST", "--output", "csv", "-e", "SHOW DATABASES"],
            capture_output=True, text=True, timeout=120, env={**os.environ, **realm.alice_env},
        )
        assert out.returncode == 0, out.stderr
        assert "default" in out.stdout.split()
        out = subprocess.run(
            [metastore_exe(), "sql", "--connect", f"thrift://localhost:{server.port}", "--auth", "kerberos",
             "--kerberos-principal", "metastore/_HOST@METASTORE.TEST", "-e", "SHOW DATABASES"],
            capture_output=True, text=True, timeout=120, env={**os.environ, **realm.no_ticket_env},
        )
        assert out.returncode == 1
        assert len(out.stderr.strip().splitlines()) == 1 and "kinit first" in out.stderr, out.stderr
    finally:
        assert server.stop() == 0


def test_unusable_kerberos_settings_stop_serve_with_one_line(tmp_path: Path, realm: Realm) -> None:
    cases = [
        (["--authentication", "kerberos"], "needs --kerberos-keytab and --kerberos-principal"),
        (["--authentication", "kerberos", "--kerberos-keytab", str(tmp_path / "missing.keytab"),
          "--kerberos-principal", "metastore/_HOST@METASTORE.TEST"], "does not exist"),
        (["--authentication", "kerberos", "--kerberos-keytab", str(realm.service_keytab),
          "--kerberos-principal", "nobody/_HOST@METASTORE.TEST"], "No key table entry found"),
        (["--kerberos-keytab", str(realm.service_keytab)], "--authentication is none"),
        (["--authentication", "kerberos", "--kerberos-keytab", str(realm.service_keytab),
          "--kerberos-principal", "metastore/_HOST@METASTORE.TEST", "--sasl-qop", "privacy"], "is not one of auth"),
    ]
    for i, (args, message) in enumerate(cases):
        with pytest.raises(ServerFailed) as failed:
            start_server(tmp_path / str(i), f"sqlite:///{tmp_path / f'{i}.db'}", workers=1, extra_args=args,
                         env={"KRB5_CONFIG": str(realm.kdc.krb5_conf)})
        lines = [ln for ln in str(failed.value).splitlines()[1:] if ln.strip()]
        assert len(lines) == 1 and message in lines[0], str(failed.value)


# ---------------------------------------------------------------- PLAIN with a password file


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def _password_file(path: Path, users: dict[str, str]) -> Path:
    for user, password in users.items():
        subprocess.run([metastore_exe(), "passwd", str(path), user, "--stdin"], input=password + "\n", text=True,
                       check=True, capture_output=True, timeout=60)
    return path


PASSWORDS = {"carol": "carol's long secret", "dave": "dave-pw-4711"}


def _plain_server(tmp_path: Path, pki: Pki, password_file: Path, workers: int = 2) -> ServerProcess:
    return start_server(
        tmp_path, f"sqlite:///{tmp_path / 'm.db'}", workers=workers,
        extra_args=["--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key),
                    "--authentication", "config", "--password-file", str(password_file)],
    )


def test_plain_with_a_password_file_over_tls(tmp_path: Path, pki: Pki) -> None:
    pw = _password_file(tmp_path / "passwords", PASSWORDS)
    assert oct(pw.stat().st_mode & 0o777) == "0o600"
    assert not any(secret in pw.read_text() for secret in PASSWORDS.values())
    server = _plain_server(tmp_path, pki, pw)
    uri = f"thrifts://127.0.0.1:{server.port}"
    try:
        assert "authentication config (SASL PLAIN, password file" in server.ready_line
        with ThriftMetastoreClient(uri, tls_ca=str(pki.ca),
                                   sasl=SaslCredentials("PLAIN", user="carol", password=PASSWORDS["carol"])) as c:
            assert "default" in c.list_databases()
        for user, password in [("carol", "not-carols-pw"), ("mallory", "carol's long secret"), ("carol", "")]:
            with pytest.raises(ConnectionFailed, match="authentication failed"):
                ThriftMetastoreClient(uri, tls_ca=str(pki.ca), timeout=10,
                                      sasl=SaslCredentials("PLAIN", user=user, password=password))
        # A user added while the server runs can connect at once.
        _password_file(pw, {"erin": "erin's secret"})
        with ThriftMetastoreClient(uri, tls_ca=str(pki.ca),
                                   sasl=SaslCredentials("PLAIN", user="erin", password="erin's secret")) as c:
            assert "default" in c.list_databases()
        out = subprocess.run(
            [metastore_exe(), "sql", "--connect", uri, "--tls-ca", str(pki.ca), "--auth", "plain", "--user", "dave",
             "--output", "csv", "-e", "SHOW DATABASES"],
            capture_output=True, text=True, timeout=120, env={**os.environ, "METASTORE_PASSWORD": PASSWORDS["dave"]},
        )
        assert out.returncode == 0, out.stderr
        assert "default" in out.stdout.split()
        # A wrong password: one line that says so, without the password.
        out = subprocess.run(
            [metastore_exe(), "sql", "--connect", uri, "--tls-ca", str(pki.ca), "--auth", "plain", "--user", "dave",
             "-e", "SHOW DATABASES"],
            capture_output=True, text=True, timeout=120, env={**os.environ, "METASTORE_PASSWORD": "dave-wrong-pw-99"},
        )
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 1 and len(lines) == 1 and "authentication failed" in lines[0], out.stderr
        assert "dave-wrong-pw-99" not in out.stdout + out.stderr
        time.sleep(0.2)
        log = server.output
        assert "authenticated as carol (PLAIN)" in log and "authenticated as dave (PLAIN)" in log
        assert "PLAIN authentication of 'mallory' failed" in log
        assert not any(secret in log for secret in (*PASSWORDS.values(), "not-carols-pw", "dave-wrong-pw-99"))
    finally:
        assert server.stop() == 0


def test_calls_sent_right_behind_the_negotiation_and_pipelined_are_answered(tmp_path: Path, pki: Pki) -> None:
    # One TLS write holds the whole PLAIN negotiation and two SASL data frames (two calls) behind it: the server
    # reads the negotiation in small pieces, so the calls end up decrypted inside the TLS layer, where the socket
    # will not signal them again; both must be answered without the client sending anything more.
    pw = _password_file(tmp_path / "passwords", {"carol": PASSWORDS["carol"]})
    server = _plain_server(tmp_path, pki, pw)
    try:
        ctx = ssl.create_default_context(cafile=str(pki.ca))
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw, \
                ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            calls = [call_bytes(lambda c: c.send_get_all_databases()), call_bytes(lambda c: c.send_getName())]
            negotiation = (struct.pack("!BI", 1, 5) + b"PLAIN"
                           + struct.pack("!BI", 5, len(PASSWORDS["carol"]) + 7) + b"\0carol\0"
                           + PASSWORDS["carol"].encode())
            tls.sendall(negotiation + b"".join(struct.pack("!i", len(c)) + c for c in calls))
            status, length = struct.unpack("!BI", _read_exactly(tls, 5))
            assert status == 5 and length == 0  # COMPLETE
            replies = []
            for _ in calls:
                (size,) = struct.unpack("!i", _read_exactly(tls, 4))
                replies.append(_read_exactly(tls, size))
        assert b"get_all_databases" in replies[0] and b"default" in replies[0]
        assert b"getName" in replies[1] and b"metastore" in replies[1]
    finally:
        assert server.stop() == 0


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "the server closed the connection"
        data += chunk
    return data


def test_plain_needs_tls_on_both_sides(tmp_path: Path, pki: Pki) -> None:
    pw = _password_file(tmp_path / "passwords", PASSWORDS)
    with pytest.raises(ServerFailed) as failed:
        start_server(tmp_path, f"sqlite:///{tmp_path / 'm.db'}", workers=1,
                     extra_args=["--authentication", "config", "--password-file", str(pw)])
    assert "it needs TLS" in str(failed.value)
    with pytest.raises(Exception, match="connect with thrifts://"):
        ThriftMetastoreClient("thrift://127.0.0.1:1", sasl=SaslCredentials("PLAIN", user="carol", password="x"))


def test_a_password_file_with_a_clear_text_password_is_refused_without_showing_it(tmp_path: Path, pki: Pki) -> None:
    pw = tmp_path / "passwords"
    pw.write_text("carol:hunter2-in-clear\n")
    with pytest.raises(ServerFailed) as failed:
        _plain_server(tmp_path, pki, pw, workers=1)
    text = str(failed.value)
    assert "line 1: expected user:scrypt$" in text and "hunter2" not in text


# ---------------------------------------------------------------- hostile negotiations


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except (ConnectionResetError, BrokenPipeError):
        return True
    return True


def test_hostile_negotiations_close_only_their_connection(tmp_path: Path, realm: Realm, as_user) -> None:
    server = _kerberos_server(tmp_path, realm, "--auth-timeout", "2", "--max-frame-size", "1000000", workers=1)
    port = server.port
    try:
        as_user(realm.alice_env)
        good = ThriftMetastoreClient(f"thrift://localhost:{port}", sasl=_kerberos())
        assert "default" in good.list_databases()
        # Garbage instead of a START message.
        garbage = socket.create_connection(("127.0.0.1", port))
        garbage.sendall(os.urandom(64))
        assert _closed_within(garbage, 5)
        # A START for a mechanism we do not offer: refused with BAD and the offered list.
        other = socket.create_connection(("127.0.0.1", port))
        other.sendall(struct.pack("!BI", 1, 10) + b"DIGEST-MD5")
        other.settimeout(5)
        status, length = struct.unpack("!BI", other.recv(5))
        assert status == 3 and b"offers GSSAPI" in other.recv(length)
        # A negotiation message claiming 2 GiB: refused before anything is allocated.
        huge = socket.create_connection(("127.0.0.1", port))
        huge.sendall(struct.pack("!BI", 1, 0x7FFFFFFF))
        assert _closed_within(huge, 5)
        # START, then silence; and a client trickling one byte a second: both cut at --auth-timeout.
        silent = socket.create_connection(("127.0.0.1", port))
        silent.sendall(struct.pack("!BI", 1, 6) + b"GSSAPI")
        trickle = socket.create_connection(("127.0.0.1", port))
        started = time.monotonic()
        closed = False
        for byte in struct.pack("!BI", 1, 6) + b"GSSAPI" + struct.pack("!BI", 2, 1000):
            try:
                trickle.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            time.sleep(0.4)
        assert closed or _closed_within(trickle, 5)
        assert time.monotonic() - started < 8
        assert _closed_within(silent, 5)
        # Negotiated properly, then a data frame over --max-frame-size: that connection ends.
        sock = TSocket.TSocket("127.0.0.1", port)
        sock.setTimeout(10_000)
        sock.open()
        client_negotiate(sock, "localhost", _kerberos())
        sock.write(struct.pack("!i", 50_000_000))
        sock.flush()
        assert _closed_within(sock.handle, 5)
        # The first client's connection was never disturbed, and new ones are served.
        assert "default" in good.list_databases()
        with ThriftMetastoreClient(f"thrift://localhost:{port}", sasl=_kerberos()) as client:
            assert "default" in client.list_databases()
        good.close()
        time.sleep(0.2)
        log = server.output
        assert "SASL negotiation with" in log and "timed out" in log
        assert "exceeds the limit" in log
    finally:
        assert server.stop() == 0
