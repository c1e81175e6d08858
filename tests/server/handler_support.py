"""An in-process Handler over a Store (no socket, no worker processes) and the bytes a reply puts on the wire:
what the listing and names cache tests and the row-encoding tests compare."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.transport.TTransport import TMemoryBuffer

from metastore.api.hive_metastore import ThriftHiveMetastore
from metastore.config import Settings
from metastore.server.handler import Handler
from metastore.server.processor import MetastoreProcessor
from metastore.server.session import ConnectionSession
from metastore.service import CatalogService
from metastore.service.listing_cache import ListingCache
from metastore.store import Store

WAREHOUSE = "/tmp/warehouse"


def handler_over(store: Store, cache: ListingCache | None = None) -> Handler:
    """A Handler whose catalog is `store` (with `cache` as its listing cache), as a server worker builds one."""
    catalog = CatalogService(store, WAREHOUSE, listing_cache=cache)
    return Handler(SimpleNamespace(catalog=catalog), Settings(db="", warehouse=WAREHOUSE))  # type: ignore[arg-type]


def reply_bytes(reply: Any) -> bytes:
    """The binary-protocol bytes of a reply object (an EncodedResult, a StreamedResult or a generated struct)."""
    buf = TMemoryBuffer()
    reply.write(TBinaryProtocol(buf))
    return buf.getvalue()


def processed(handler: Handler, method: str, *args: Any, hive2: bool = False) -> bytes:
    """The whole reply message the server's processor writes for one call of `method` to `handler`, from a
    connection whose client has shown itself a Hive 2 one (hive2) or not (catalog fields sent)."""
    request = TMemoryBuffer()
    getattr(ThriftHiveMetastore.Client(TBinaryProtocol(request)), f"send_{method}")(*args)
    session = ConnectionSession(peer="test")
    if hive2:
        session.generation.saw_set_ugi()
    out = TMemoryBuffer()
    MetastoreProcessor(handler).process(
        TBinaryProtocol(TMemoryBuffer(request.getvalue())), TBinaryProtocol(out), session
    )
    return out.getvalue()
