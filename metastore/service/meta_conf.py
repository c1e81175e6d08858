"""getMetaConf / setMetaConf: Hive 2.3's per-connection metastore settings.

Hive 2.3.10's HiveConf.metaConfVars are the only keys a client may set, each for its own connection (Hive keeps
them in a thread-local copy of the server's configuration; its server, like ours, serves a connection on one
thread). Of those, none changes what this server does, as none changes what Hive 2.3's server does: direct SQL
is how this server always works, the socket timeout and the capability check are client-side, and Hive's handler
reads the partition-name whitelist once at start-up, so a value set per connection is kept and read back but
checks nothing (the reference accepts `append_partition` of a value outside it). A client still gets Hive's answers: the value it set, else the default, and Hive's
MetaException for an unknown key or an invalid value.

Hive 3 and 4 differ; we follow 2.3 on the wire, so their extra keys are Hive 2.3's MetaException here. Hive 3's
MetastoreConf adds hive.metastore.disallow.incompatible.col.type.changes (refuse ALTER TABLE type changes Hive
cannot read back) and accepts every key under its `metastore.*` name as well; Hive 4 adds the partition order
expression and the expression proxy class.

getMetaConf also answers this server's own read-only settings (warehouse, statistics options), which it always
has; setting one of those is refused with a message naming how to configure it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from metastore.errors import MetastoreError

_TIME = re.compile(r"\s*[0-9]+\s*(|ns|nanos?|nanoseconds?|us|micros?|microseconds?|ms|millis?|milliseconds?|s|secs?|"
                   r"seconds?|m|mins?|minutes?|h|hours?|d|days?)\s*", re.IGNORECASE)


def _time_value(value: str) -> str | None:
    """Hive's TimeValidator: a number with an optional unit; None when valid, else why not."""
    return None if _TIME.fullmatch(value) else f"'{value}' is not a time value (a number with an optional unit, e.g. 600s)"


@dataclass(frozen=True)
class MetaConfVar:
    """One of Hive's metaConfVars: its key, default and validation (None: any value)."""

    key: str
    default: str
    validate: Callable[[str], str | None] | None = None


#: Hive 2.3.10's HiveConf.metaConfVars, with their defaults (read from the 2.3.10 jar).
HIVE_META_CONF_VARS: dict[str, MetaConfVar] = {
    v.key: v
    for v in (
        MetaConfVar("hive.metastore.try.direct.sql", "true"),
        MetaConfVar("hive.metastore.try.direct.sql.ddl", "true"),
        MetaConfVar("hive.metastore.client.socket.timeout", "600s", _time_value),
        MetaConfVar("hive.metastore.partition.name.whitelist.pattern", ""),
        MetaConfVar("hive.metastore.client.capability.check", "false"),
    )
}


class ConnectionMetaConf:
    """The metastore settings as each connection sees them. Values set by a connection live in a thread-local:
    every connection is served on a thread of its own, started for it, so a new connection starts from the
    defaults and no other connection sees its values. Only getMetaConf/setMetaConf touch it."""

    def __init__(self, server_values: Mapping[str, str]) -> None:
        self._server = dict(server_values)
        self._local = threading.local()

    def _set_here(self) -> dict[str, str]:
        values = getattr(self._local, "values", None)
        if values is None:
            values = self._local.values = {}
        return values

    def get(self, key: str) -> str:
        """The value this connection sees; MetastoreError (Hive's MetaException) for an unknown key."""
        if key in HIVE_META_CONF_VARS:
            return self._set_here().get(key, self._server.get(key, HIVE_META_CONF_VARS[key].default))
        if key in self._server:
            return self._server[key]
        raise MetastoreError(f"Invalid configuration key {key}")

    def set(self, key: str, value: str) -> None:
        """Set a Hive metaConfVar for this connection; MetastoreError for an unknown or server-only key or an
        invalid value."""
        var = HIVE_META_CONF_VARS.get(key)
        if var is None:
            if key in self._server:
                raise MetastoreError(
                    f"Invalid configuration key {key}: it is a server setting, not settable per connection "
                    "(configure it with `metastore serve` flags or METASTORE_* variables)"
                )
            raise MetastoreError(f"Invalid configuration key {key}")
        reason = var.validate(value) if var.validate is not None else None
        if reason is not None:
            raise MetastoreError(f"Invalid configuration value {value} for key {key} by {reason}")
        self._set_here()[key] = value
