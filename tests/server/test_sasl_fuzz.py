"""Fuzzing the parsers of outside bytes in SASL: the negotiation messages, PLAIN responses and data frames. Whatever
arrives, the server side raises only its own refusal, a timeout or a closed-connection error, never anything else
(which would be a crash of the connection's thread), and allocates nothing a length field merely claims."""

from __future__ import annotations

import socket
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from thrift.transport.TTransport import TTransportException

from metastore.server.auth import PasswordFile, write_password_entry
from metastore.server.sasl import COMPLETE, OK, START, PlainServer, SaslRefused, negotiate
from metastore.server.transport import SaslFrameTransport

_EXPECTED = (SaslRefused, TimeoutError, ConnectionError)


@pytest.fixture(scope="module")
def passwords(tmp_path_factory: pytest.TempPathFactory) -> PasswordFile:
    path = tmp_path_factory.mktemp("pw") / "passwords"
    write_password_entry(path, "carol", "carol-pw")
    return PasswordFile(str(path))


def _negotiate_bytes(data: bytes, passwords: PasswordFile) -> object:
    server, client = socket.socketpair()
    try:
        client.sendall(data)
        client.shutdown(socket.SHUT_WR)
        try:
            return negotiate(server, {"PLAIN": lambda: PlainServer(passwords)}, timeout=2.0)
        except _EXPECTED:
            return None
    finally:
        server.close()
        client.close()


def _message(status: int, payload: bytes) -> bytes:
    return struct.pack("!BI", status, len(payload)) + payload


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_random_bytes_in_negotiation(passwords: PasswordFile, data: bytes) -> None:
    assert _negotiate_bytes(data, passwords) is None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200), st.sampled_from([OK, COMPLETE, START, 0, 7, 255]))
def test_random_plain_responses(passwords: PasswordFile, response: bytes, status: int) -> None:
    # A well-formed START for PLAIN, then anything: only carol's right password may succeed.
    result = _negotiate_bytes(_message(START, b"PLAIN") + _message(status, response), passwords)
    if result is not None:
        assert response.split(b"\0")[1:] == [b"carol", b"carol-pw"]


def test_the_right_password_negotiates(passwords: PasswordFile) -> None:
    result = _negotiate_bytes(_message(START, b"PLAIN") + _message(COMPLETE, b"\0carol\0carol-pw"), passwords)
    assert result is not None and result.principal == "carol"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_random_data_frames(data: bytes) -> None:
    server, client = socket.socketpair()
    try:
        client.sendall(data)
        client.shutdown(socket.SHUT_WR)
        trans = SaslFrameTransport(server, max_frame_size=1000)
        got = b""
        try:
            while True:
                got += trans.read(64)
        except TTransportException:
            pass
        # Whatever was returned came from frames the bytes really held.
        assert len(got) <= max(0, len(data) - 4)
    finally:
        server.close()
        client.close()


def test_an_oversized_frame_is_refused_before_reading_it(tmp_path: Path) -> None:
    server, client = socket.socketpair()
    try:
        client.sendall(struct.pack("!i", 2_000_000_000))
        with pytest.raises(TTransportException, match="exceeds the limit"):
            SaslFrameTransport(server, max_frame_size=1000).read(1)
    finally:
        server.close()
        client.close()
