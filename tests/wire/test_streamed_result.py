"""StreamedResult: a reply written piece by piece leaves over the buffered transport as it is produced, its bytes
are exactly those of the whole reply, and a failure is an error reply before anything left, a closed connection
after."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.Thrift import TType
from thrift.transport.TTransport import TMemoryBuffer, TTransportException

from metastore.api.hive_metastore import ThriftHiveMetastore
from metastore.wire import encoded
from metastore.wire.encoded import StreamedResult, list_header, string_list_body


class _Recorder:
    """A transport that records what was written and every send_pending."""

    def __init__(self, streams: bool = True) -> None:
        self.written: list[bytes] = []
        self.sends: list[int] = []
        if streams:
            self.send_pending = lambda: self.sends.append(sum(map(len, self.written)))

    def write(self, data: bytes) -> None:
        self.written.append(data)


class _Protocol:
    def __init__(self, trans: _Recorder) -> None:
        self.trans = trans


def _names(count: int) -> list[str]:
    return [f"ds=2024-01-01/hr={i:06d}" for i in range(count)]


def _reply(names: list[str], page: int) -> tuple[StreamedResult, list[bool]]:
    closed: list[bool] = []

    def pieces() -> Iterator[bytes]:
        yield list_header(TType.STRING, len(names))
        for start in range(0, len(names), page):
            yield string_list_body(names[start : start + page])

    return StreamedResult(TType.LIST, pieces(), lambda: closed.append(True)), closed


def _expected(names: list[str]) -> bytes:
    buf = TMemoryBuffer()
    ThriftHiveMetastore.get_partition_names_result(success=names).write(TBinaryProtocol(buf))
    return buf.getvalue()


def test_a_long_reply_leaves_in_pieces_and_equals_the_whole_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encoded, "STREAM_SEND_BYTES", 64 * 1024)
    names = _names(20_000)  # about 500 KB
    reply, closed = _reply(names, page=1000)
    trans = _Recorder()
    reply.write(_Protocol(trans))
    assert b"".join(trans.written) == _expected(names)
    assert len(trans.sends) >= 5  # sent as produced, never all at the end
    assert closed == [True]


def test_framed_transport_collects_the_pieces() -> None:
    names = _names(300)
    reply, closed = _reply(names, page=7)
    trans = _Recorder(streams=False)
    reply.write(_Protocol(trans))
    assert b"".join(trans.written) == _expected(names)
    assert closed == [True]


def test_a_failure_before_anything_left_is_raised_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encoded, "STREAM_SEND_BYTES", 1 << 30)

    def pieces() -> Iterator[bytes]:
        yield list_header(TType.STRING, 2)
        raise RuntimeError("the database went away")

    closed: list[bool] = []
    reply = StreamedResult(TType.LIST, pieces(), lambda: closed.append(True))
    with pytest.raises(RuntimeError, match="went away"):
        reply.write(_Protocol(_Recorder()))
    assert closed == [True]  # the processor then discards the pending bytes and answers with an error


def test_a_failure_after_bytes_left_ends_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encoded, "STREAM_SEND_BYTES", 10)

    def pieces() -> Iterator[bytes]:
        yield list_header(TType.STRING, 3)
        yield string_list_body(["ds=1", "ds=2"])
        raise RuntimeError("the database went away")

    closed: list[bool] = []
    reply = StreamedResult(TType.LIST, pieces(), lambda: closed.append(True))
    trans = _Recorder()
    with pytest.raises(TTransportException, match="after part of it was sent"):
        reply.write(_Protocol(trans))
    assert trans.sends and closed == [True]


def test_a_large_encoded_reply_leaves_in_pieces_and_equals_the_whole_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encoded, "STREAM_SEND_BYTES", 64 * 1024)
    names = _names(20_000)
    whole = _expected(names)  # the result struct: field 0 (list) ... STOP
    value = bytes([TType.LIST]) + whole[3:-1]  # any value bytes: sent as they are
    trans = _Recorder()
    encoded.EncodedResult(value).write(_Protocol(trans))
    sent = b"".join(trans.written)
    assert sent == b"\x0c\x00\x00" + value + b"\x00"
    assert len(trans.sends) == -(-len(value) // (64 * 1024))  # one send a piece, none larger
    assert max(len(w) for w in trans.written) <= 64 * 1024
    small = _Recorder()
    encoded.EncodedResult(b"\x00").write(_Protocol(small))
    assert small.written == [b"\x0c\x00\x00", b"\x00", b"\x00"] and small.sends == []
    framed = _Recorder(streams=False)  # no send_pending: written whole
    encoded.EncodedResult(value).write(_Protocol(framed))
    assert framed.written == [b"\x0c\x00\x00", value, b"\x00"]
