"""The metastore client: one Python API over a remote server (Thrift) or an in-process store (embedded).

    with connect("thrift://127.0.0.1:9083") as client:          # or connect("sqlite:///metastore.db")
        table = client.get_table("sales", "orders")
        client.write_statistics([StatsWrite("sales", "orders", entries, partition_name="ds=2024-01-01")])

`base` holds the interface and its values, `remote` the Thrift client (no store, service or SQLAlchemy), and
`embedded` the in-process client, which this package loads only when `connect` is given a database URL (and
`remote` only when it is given a thrift:// URI or one of its names is used).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from metastore.client.base import (
    DEFAULT_STATS_BATCH,
    AggregateResult,
    ConnectionFailed,
    MetastoreClient,
    StatsWrite,
)
from metastore.errors import InvalidInput

if TYPE_CHECKING:
    from metastore.client.remote import DEFAULT_PORT, SaslCredentials, ThriftMetastoreClient

__all__ = [
    "DEFAULT_PORT",
    "DEFAULT_STATS_BATCH",
    "AggregateResult",
    "ConnectionFailed",
    "MetastoreClient",
    "SaslCredentials",
    "StatsWrite",
    "ThriftMetastoreClient",
    "connect",
]


_REMOTE_NAMES = frozenset({"DEFAULT_PORT", "SaslCredentials", "ThriftMetastoreClient"})


def __getattr__(name: str) -> Any:
    """The Thrift client's names, loaded on first use: an embedded caller (a cron job's re-ANALYZE, the shell
    with --db) does not pay for the Thrift service module and ssl (~30 ms of start-up)."""
    if name in _REMOTE_NAMES:
        from metastore.client import remote  # noqa: PLC0415

        return getattr(remote, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def connect(
    target: str, *, warehouse: str | None = None, timeout: float = 600.0, tls_ca: str | None = None,
    sasl: SaslCredentials | None = None, index_root: str | None = None,
) -> MetastoreClient:
    """A client for `thrift://host:port[,thrift://...]` (a server; `thrifts://` over TLS, verified against
    `tls_ca` or the system CAs; `sasl` authenticates) or a SQLAlchemy URL (embedded)."""
    text = target.strip()
    if text.lower().startswith(("thrift://", "thrifts://")):
        from metastore.client.remote import ThriftMetastoreClient  # noqa: PLC0415

        return ThriftMetastoreClient(text, timeout=timeout, tls_ca=tls_ca, sasl=sasl)
    if "://" not in text:
        raise InvalidInput(
            f"{target!r} is neither a metastore URI (thrift://host:port, thrifts://host:port for TLS) nor a database URL "
            "(sqlite:///path/metastore.db, postgresql+psycopg2://user@host/db)"
        )
    # Deliberate lazy load, not a cycle: the embedded client brings the service, the store and SQLAlchemy,
    # which a thrift:// caller (the shell with --connect, a Spark executor) must not pay for.
    from metastore.client.embedded import EmbeddedMetastoreClient  # noqa: PLC0415

    return EmbeddedMetastoreClient(text, warehouse, index_root)
