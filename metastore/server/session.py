"""Who is on the other end of one connection: the peer's address and the principal the server believes."""

from __future__ import annotations

from dataclasses import dataclass, field

from metastore.wire.generations import ClientGeneration


@dataclass
class ConnectionSession:
    """Per connection, used by one thread only. `principal` is the authenticated one (SASL); without
    authentication it is set_ugi's claim, which nothing verifies (`authenticated` stays False). Groups come only
    from the policy file: set_ugi's group names are never believed."""

    peer: str
    principal: str = ""
    authenticated: bool = False
    mechanism: str = ""
    # Which Hive IDL the client has shown it speaks: decides the catalog fields of its answers.
    generation: ClientGeneration = field(default_factory=ClientGeneration)


def peer_text(peer: object) -> str:
    """host:port of an accepted socket's peer address ([v6]:port for IPv6)."""
    if isinstance(peer, tuple) and len(peer) >= 2:
        host, port = peer[0], peer[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return str(peer)
