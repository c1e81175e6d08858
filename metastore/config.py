"""One Settings object: command-line flags > environment (METASTORE_*) > defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import platformdirs

APP_NAME = "metastore"


def default_data_dir() -> Path:
    """The user's data directory for the embedded database and the default warehouse."""
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def default_db_url() -> str:
    """SQLite file in the user's data directory: the embedded default."""
    return f"sqlite:///{default_data_dir() / 'metastore.db'}"


def default_warehouse() -> str:
    return str(default_data_dir() / "warehouse")


@dataclass(frozen=True)
class Settings:
    """Server and client settings. Every field can be set as METASTORE_<NAME> in the environment."""

    host: str = "127.0.0.1"
    port: int = 9083
    db: str = field(default_factory=default_db_url)
    warehouse: str = field(default_factory=default_warehouse)
    workers: int = field(default_factory=lambda: max(2, os.cpu_count() or 2))
    framed: bool = False
    # Limits against memory exhaustion from one request.
    max_string_size: int = 64 * 1024 * 1024
    max_container_size: int = 1_000_000
    max_frame_size: int = 256 * 1024 * 1024
    # Like Hive's metastore.stats.fetch.bitvector / metastore.stats.fetch.kll: off by default because
    # Hive-2.3-generated Python clients decode bitVectors as UTF-8 and crash on HLL bytes.
    fetch_bitvector: bool = False
    fetch_kll: bool = False
    log_level: str = "INFO"
    # Statistics writes wait for PostgreSQL's WAL flush like every other write (durable when acknowledged).
    # METASTORE_STATS_SYNCHRONOUS_COMMIT=false trades that for write throughput: statistics transactions then
    # commit with synchronous_commit off, so a PostgreSQL crash may lose the last fraction of a second of
    # acknowledged statistics (never corrupting anything; ANALYZE recomputes them). Catalog writes stay durable.
    stats_synchronous_commit: bool = True
    # Serve timestamp statistics as longStats (epoch seconds), the only form Hive 2.3/3 IDLs (Spark's client,
    # Trino, pymetastore, hmsclient, hive-metastore-client) can decode: they see Hive 4's timestampStats
    # (union member 8) as an empty union. Like Hive's hive.metastore.stats.legacy.timestamp.as.long.
    # METASTORE_STATS_TIMESTAMP_AS_LONG=false serves timestampStats, as Hive 4 does. Writes accept both.
    stats_timestamp_as_long: bool = True
    # Spark's optimizer reads column statistics only from its spark.sql.statistics.* table properties: tables
    # are read with them composed from TAB_COL_STATS, and Spark's ANALYZE properties go to TAB_COL_STATS
    # (metastore/service/spark_statistics.py). METASTORE_SPARK_STATISTICS=false stores and serves parameters as
    # given, as Hive's metastore does.
    spark_statistics: bool = True
    # Per worker process, MiB of encoded get_partitions_statistics_req / get_aggr_stats_for replies kept for
    # planners asking again (PostgreSQL only; every hit is checked against the partitions' statistics
    # version, so a reply is never stale). 0 turns the cache off.
    stats_cache_mb: int = 64
    # Encoded partition listings kept per worker (MiB; 0 = none; PostgreSQL only), validated on every call; a
    # reply larger than half of it is not kept. 10,000 partitions x 30 columns is about 12-16 MB.
    listing_cache_mb: int = 40
    # TLS on the Thrift port (PEM files; empty = plaintext). With tls_client_ca, clients must present a
    # certificate signed by that CA. SIGHUP reloads the certificate and key.
    tls_cert: str = ""
    tls_key: str = ""
    tls_client_ca: str = ""
    # Seconds a new connection has to finish its TLS handshake: a client that never finishes must not hold a
    # thread for ever.
    tls_handshake_timeout: float = 10.0
    # Who may connect (Hive 4's metastore.authentication): none, kerberos (SASL GSSAPI with the keytab and
    # principal below), config (SASL PLAIN against password_file) or ldap (SASL PLAIN checked by an LDAP bind).
    # PLAIN needs TLS. The authenticated principal, not set_ugi's claim, is who the server believes.
    authentication: str = "none"
    kerberos_keytab: str = ""
    # metastore/_HOST@REALM: _HOST becomes the canonical name of the host the server listens on.
    kerberos_principal: str = ""
    # Hadoop's SASL QOP names (hadoop.rpc.protection): auth, auth-int, auth-conf; comma-separated to offer several.
    sasl_qop: str = "auth"
    password_file: str = ""
    ldap_url: str = ""
    # The user's DN: uid=<user>,<ldap_base_dn>, or ldap_user_dn_pattern with %s for the user.
    ldap_base_dn: str = ""
    ldap_user_dn_pattern: str = ""
    # PEM CA that verifies the LDAP server's certificate (ldaps:// or StartTLS; default: the system's CAs).
    ldap_ca: str = ""
    # Upgrade an ldap:// connection with StartTLS before the bind (required: never falls back to the clear).
    ldap_starttls: bool = False
    # Seconds a connection has to finish its SASL negotiation.
    auth_timeout: float = 10.0
    # Who may do what: a TOML policy of grants (read, write_stats, ddl, admin) on databases and tables.
    authorization_policy: str = ""

    # Where split-filtering index files go (issue 11): a directory or URI; empty means <warehouse>/.indexes.
    index_root: str = ""

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides: object) -> Settings:
        """Build settings from defaults, then METASTORE_* variables, then non-None keyword overrides."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}  # each of its field's type (_parse), which mypy cannot follow through fields()
        for f in fields(cls):
            raw = env.get(f"METASTORE_{f.name.upper()}")
            if raw is not None:
                values[f.name] = _parse(f.type, raw, f.name)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return replace(cls(), **values)


def _parse(type_name: object, raw: str, name: str) -> object:
    t = str(type_name)
    if t == "bool":
        low = raw.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off", ""):
            return False
        raise ValueError(f"METASTORE_{name.upper()}={raw!r} is not a boolean (use true or false)")
    if t == "float":
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(f"METASTORE_{name.upper()}={raw!r} is not a number") from None
        if not value > 0:
            raise ValueError(f"METASTORE_{name.upper()}={raw!r} must be a positive number of seconds")
        return value
    if t == "int":
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"METASTORE_{name.upper()}={raw!r} is not an integer") from None
    return raw
