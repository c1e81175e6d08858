"""Who may do what: a policy of grants, and every Thrift call classified by the permission it needs.

Permissions: `read` (catalog and statistics reads), `write_stats` (statistics writes and deletes, and alters that
change only statistics parameters, as ANALYZE does), `ddl` (catalog changes) and `admin` (everything, plus
server-wide calls). A grant gives permissions on database and table name patterns to principals and groups:

    realm = "EXAMPLE.COM"                  # optional: short names ("alice") match principals of this realm only
    [groups]
    analysts = ["alice", "bob@EXAMPLE.COM"]

    [[grants]]
    groups = ["analysts"]
    databases = ["sales", "tmp_*"]         # fnmatch patterns, case-insensitive like Hive's names
    tables = ["*"]                         # default ["*"]
    permissions = ["read", "write_stats"]

A database-level change (create/drop/alter database, functions) needs the permission on every table of the
database (`tables = ["*"]`); reading a database needs `read` on any of its tables. Calls on the whole metastore
(fb303 administration, legacy types) need `admin` on every database. Listing calls are filtered to what the
principal may read. The file is re-read when it changes (a broken edit keeps the previous policy and logs why).

`METHOD_RULES` classifies every served method; a method missing from it needs `admin` (tests fail when a served
method is unclassified, so extension calls `metastore_*` must be added here).
"""

from __future__ import annotations

import fnmatch
import logging
import os
import threading
import time
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from metastore.server.session import ConnectionSession

log = logging.getLogger("metastore.server.authorization")


class Permission(StrEnum):
    READ = "read"
    WRITE_STATS = "write_stats"
    DDL = "ddl"
    ADMIN = "admin"


class PolicyError(ValueError):
    """The policy file cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class Target:
    """What a call touches: a table (db, table), a database (db, None) or the whole metastore (None, None)."""

    db: str | None
    table: str | None = None

    def describe(self) -> str:
        if self.db is None:
            return "the metastore"
        if self.table is None:
            return f"database {self.db}"
        return f"table {self.db}.{self.table}"


WHOLE_METASTORE = Target(None, None)


@dataclass(frozen=True)
class Grant:
    principals: frozenset[str]
    groups: frozenset[str]
    databases: tuple[str, ...]
    tables: tuple[str, ...]
    permissions: frozenset[Permission]

    def covers_every_table(self) -> bool:
        return "*" in self.tables

    def covers_every_database(self) -> bool:
        return "*" in self.databases


def _names(value: Any, where: str, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise PolicyError(f"{where}: {key} must be a list of non-empty strings")
    return tuple(value)


# Answers and per-principal grant lists a Policy keeps; each store is emptied when it reaches its bound (cheaper
# than LRU bookkeeping on every call, and refilled at the cost of one fnmatch pass per principal).
MAX_CACHED_ANSWERS = 200_000
MAX_CACHED_PRINCIPALS = 10_000


class Policy:
    """Grants and groups of one policy file, with the answers already given kept per principal."""

    def __init__(self, grants: list[Grant], groups: dict[str, frozenset[str]], realm: str = "") -> None:
        self.grants = grants
        self.groups = groups
        self.realm = realm
        self._cache: dict[tuple[str, Permission, str | None, str | None], bool] = {}
        self._grants_of: dict[str, list[Grant]] = {}
        self._lock = threading.Lock()

    @classmethod
    def parse(cls, text: str, path: str) -> Policy:
        """A policy from TOML text; every mistake is a PolicyError naming the file and the entry."""
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise PolicyError(f"policy {path} is not valid TOML: {exc}") from None
        unknown = set(doc) - {"realm", "groups", "grants"}
        if unknown:
            raise PolicyError(f"policy {path}: unknown key(s) {', '.join(sorted(unknown))} "
                              "(expected realm, groups, grants)")
        realm = doc.get("realm", "")
        if not isinstance(realm, str):
            raise PolicyError(f"policy {path}: realm must be a string")
        raw_groups = doc.get("groups", {})
        if not isinstance(raw_groups, dict):
            raise PolicyError(f"policy {path}: [groups] must map group names to lists of members")
        groups = {name: frozenset(_names(members, f"policy {path} group {name!r}", "its members"))
                  for name, members in raw_groups.items()}
        raw_grants = doc.get("grants", [])
        if not isinstance(raw_grants, list):
            raise PolicyError(f"policy {path}: grants must be [[grants]] tables")
        grants: list[Grant] = []
        for i, raw in enumerate(raw_grants, 1):
            where = f"policy {path} grant {i}"
            if not isinstance(raw, dict):
                raise PolicyError(f"{where}: must be a table")
            extra = set(raw) - {"principals", "groups", "databases", "tables", "permissions"}
            if extra:
                raise PolicyError(f"{where}: unknown key(s) {', '.join(sorted(extra))}")
            principals = _names(raw.get("principals"), where, "principals")
            grant_groups = _names(raw.get("groups"), where, "groups")
            if not principals and not grant_groups:
                raise PolicyError(f"{where}: names no principals and no groups")
            missing = [g for g in grant_groups if g not in groups]
            if missing:
                raise PolicyError(f"{where}: group(s) {', '.join(missing)} not defined in [groups]")
            databases = _names(raw.get("databases"), where, "databases")
            if not databases:
                raise PolicyError(f"{where}: needs databases (use [\"*\"] for all)")
            tables = _names(raw.get("tables", ["*"]), where, "tables") or ("*",)
            perms = _names(raw.get("permissions"), where, "permissions")
            try:
                permissions = frozenset(Permission(p) for p in perms)
            except ValueError:
                bad = [p for p in perms if p not in {m.value for m in Permission}]
                raise PolicyError(f"{where}: unknown permission(s) {', '.join(bad)} "
                                  "(read, write_stats, ddl, admin)") from None
            if not permissions:
                raise PolicyError(f"{where}: grants no permissions")
            grants.append(Grant(frozenset(principals), frozenset(grant_groups),
                                tuple(d.lower() for d in databases), tuple(t.lower() for t in tables), permissions))
        return cls(grants, groups, realm)

    def _names_match(self, entry: str, principal: str) -> bool:
        if entry in ("*", principal):
            return True
        if "@" in entry or "/" in entry:
            return False
        # A short name: the principal's first component, within the policy's realm when it names one.
        first, _, realm = principal.partition("@")
        return first.split("/")[0] == entry and (not self.realm or not realm or realm == self.realm)

    def _applicable(self, principal: str) -> list[Grant]:
        found = self._grants_of.get(principal)
        if found is None:
            member_of = {g for g, members in self.groups.items() if any(self._names_match(m, principal) for m in members)}
            found = [
                grant for grant in self.grants
                if any(self._names_match(p, principal) for p in grant.principals) or grant.groups & member_of
            ]
            with self._lock:
                # Bounded like _cache: without authentication principals are whatever set_ugi claims.
                if len(self._grants_of) >= MAX_CACHED_PRINCIPALS:
                    self._grants_of.clear()
                self._grants_of[principal] = found
        return found

    def allows(self, principal: str, permission: Permission, target: Target) -> bool:
        """True when a grant gives `principal` `permission` (or admin) on `target`."""
        db = target.db.lower() if target.db is not None else None
        table = target.table.lower() if target.table is not None else None
        key = (principal, permission, db, table)
        answer = self._cache.get(key)
        if answer is not None:
            return answer
        answer = any(self._grant_allows(g, permission, db, table) for g in self._applicable(principal))
        with self._lock:
            if len(self._cache) >= MAX_CACHED_ANSWERS:  # bounded: a client inventing names must not grow it
                self._cache.clear()
            self._cache[key] = answer
        return answer

    @staticmethod
    def _grant_allows(grant: Grant, permission: Permission, db: str | None, table: str | None) -> bool:
        if permission not in grant.permissions and Permission.ADMIN not in grant.permissions:
            return False
        if db is None:
            return grant.covers_every_database() and grant.covers_every_table()
        if not any(fnmatch.fnmatchcase(db, pattern) for pattern in grant.databases):
            return False
        if table is None:
            return permission == Permission.READ or grant.covers_every_table()
        return any(fnmatch.fnmatchcase(table, pattern) for pattern in grant.tables)


class PolicyFile:
    """The policy of a file, re-read (at most once a second) when the file changes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._stamp: tuple[int, int] = (0, 0)
        self._checked = 0.0
        self._lock = threading.Lock()
        self.policy = self._load()

    def _load(self) -> Policy:
        try:
            st = os.stat(self.path)
            with open(self.path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise PolicyError(f"cannot read the authorization policy {self.path}: "
                              f"{getattr(exc, 'strerror', None) or exc}") from None
        policy = Policy.parse(text, self.path)
        self._stamp = (st.st_mtime_ns, st.st_size)
        return policy

    def current(self) -> Policy:
        now = time.monotonic()
        if now - self._checked < 1.0:
            return self.policy
        with self._lock:
            self._checked = now
            try:
                st = os.stat(self.path)
            except OSError:
                return self.policy
            if (st.st_mtime_ns, st.st_size) != self._stamp:
                try:
                    self.policy = self._load()
                    log.info("authorization policy reloaded from %s", self.path)
                except PolicyError as exc:
                    self._stamp = (st.st_mtime_ns, st.st_size)
                    log.error("authorization policy not reloaded, keeping the previous one: %s", exc)
        return self.policy


# ------------------------------------------------------------------ the classification of every call


@dataclass(frozen=True)
class Rule:
    """The permission a method needs and on what; `result_filter` trims listing replies to readable objects."""

    permission: Permission | None  # None: any connected client (session calls, status, pure functions)
    targets: Callable[[Any], Iterable[Target]] = lambda _a: ()
    result_filter: Callable[[Any, Any, Callable[[Target], bool]], Any] | None = None
    # Alters whose only changes are statistics parameters need write_stats instead of ddl (see StatsOnlyAlter).
    stats_only_alter: str = ""


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _table(db: str, table: str) -> Callable[[Any], Iterable[Target]]:
    return lambda a: [Target(_s(getattr(a, db)), _s(getattr(a, table)))]


def _database(db: str) -> Callable[[Any], Iterable[Target]]:
    return lambda a: [Target(_s(getattr(a, db)))]


def _in_request(request: str, db: str, table: str | None) -> Callable[[Any], Iterable[Target]]:
    def targets(a: Any) -> Iterable[Target]:
        req = getattr(a, request)
        return [Target(_s(getattr(req, db, None)), None if table is None else _s(getattr(req, table, None)))]
    return targets


def _whole(_a: Any) -> Iterable[Target]:
    return [WHOLE_METASTORE]


def _stats_desc_targets(stats: Iterable[Any]) -> list[Target]:
    out = []
    for cs in stats:
        desc = getattr(cs, "statsDesc", None)
        out.append(Target(_s(getattr(desc, "dbName", None)), _s(getattr(desc, "tableName", None))))
    return out or [Target("", "")]


def _stats_object(attr: str) -> Callable[[Any], Iterable[Target]]:
    return lambda a: _stats_desc_targets([getattr(a, attr)])


def _stats_request(attr: str) -> Callable[[Any], Iterable[Target]]:
    return lambda a: _stats_desc_targets(getattr(getattr(a, attr), "colStats", None) or [])


def _new_table(a: Any) -> Iterable[Target]:
    tbl = a.tbl
    return [Target(_s(getattr(tbl, "dbName", None)), _s(getattr(tbl, "tableName", None)))]


def _altered_table(a: Any) -> Iterable[Target]:
    # The table altered, and the name it gets (a rename must be allowed on both ends).
    out = [Target(_s(a.dbname), _s(a.tbl_name))]
    new = a.new_tbl
    if new is not None and (_s(new.dbName).lower(), _s(new.tableName).lower()) != (
            _s(a.dbname).lower(), _s(a.tbl_name).lower()):
        out.append(Target(_s(new.dbName), _s(new.tableName)))
    return out


def _partitions(attr: str) -> Callable[[Any], Iterable[Target]]:
    def targets(a: Any) -> Iterable[Target]:
        value = getattr(a, attr)
        parts = value if isinstance(value, list) else [value]
        found = {Target(_s(getattr(p, "dbName", None)), _s(getattr(p, "tableName", None))) for p in parts if p}
        return sorted(found, key=lambda t: (t.db or "", t.table or "")) or [Target("", "")]
    return targets


def _foreign_keys(a: Any) -> Iterable[Target]:
    req = a.request
    out = []
    for db, table in (("parent_db_name", "parent_tbl_name"), ("foreign_db_name", "foreign_tbl_name")):
        if getattr(req, db, None) is not None or getattr(req, table, None) is not None:
            out.append(Target(_s(getattr(req, db, None)), _s(getattr(req, table, None))))
    return out or [Target("", "")]


def _functions(a: Any) -> Iterable[Target]:
    out = [Target(_s(a.dbName))]
    new = getattr(a, "newFunc", None)
    if new is not None and _s(new.dbName).lower() != _s(a.dbName).lower():
        out.append(Target(_s(new.dbName)))
    return out


# Result filters: (args, result, may_read) -> result with only what may_read admits.
def _filter_databases(_a: Any, result: Any, may_read: Callable[[Target], bool]) -> Any:
    return [name for name in result or [] if may_read(Target(name))]


def _filter_table_names(db: str) -> Callable[[Any, Any, Callable[[Target], bool]], Any]:
    return lambda a, result, may_read: [t for t in result or [] if may_read(Target(_s(getattr(a, db)), t))]


def _filter_table_meta(_a: Any, result: Any, may_read: Callable[[Target], bool]) -> Any:
    return [m for m in result or [] if may_read(Target(_s(m.dbName), _s(m.tableName)))]


def _filter_tables(_a: Any, result: Any, may_read: Callable[[Target], bool]) -> Any:
    return [t for t in result or [] if may_read(Target(_s(t.dbName), _s(t.tableName)))]


def _filter_tables_result(a: Any, result: Any, may_read: Callable[[Target], bool]) -> Any:
    if result is not None and result.tables is not None:
        result.tables = _filter_tables(a, result.tables, may_read)
    return result


def _filter_functions(_a: Any, result: Any, may_read: Callable[[Target], bool]) -> Any:
    if result is not None and result.functions is not None:
        result.functions = [f for f in result.functions if may_read(Target(_s(f.dbName)))]
    return result


def _filter_indexes(_args: Any, result: Any, may_read: Callable[[Target], bool]) -> Any:
    """Only the indexes of readable tables."""
    if result is None:
        return result
    return [i for i in result if may_read(Target(_s(i.dbName), _s(i.tableName)))]


R, W, D, A = Permission.READ, Permission.WRITE_STATS, Permission.DDL, Permission.ADMIN
_ANYONE = Rule(None)
_ADMIN = Rule(A, _whole)


def _read_table(db: str = "db_name", table: str = "tbl_name") -> Rule:
    return Rule(R, _table(db, table))


def _ddl_table(db: str = "db_name", table: str = "tbl_name") -> Rule:
    return Rule(D, _table(db, table))


#: Every served method: the permission it needs and on which objects.
METHOD_RULES: dict[str, Rule] = {
    # fb303: status for anyone connected, administration for admins
    "getName": _ANYONE, "getVersion": _ANYONE, "getStatus": _ANYONE, "getStatusDetails": _ANYONE,
    "aliveSince": _ANYONE, "getCounters": _ANYONE, "getCounter": _ANYONE, "getOption": _ANYONE,
    "getOptions": _ANYONE,
    "setOption": _ADMIN, "getCpuProfile": _ADMIN,
    # Hive's client calls shutdown() whenever it closes a connection; this server ignores both calls.
    "reinitialize": _ANYONE, "shutdown": _ANYONE,
    # the session: per connection, changes nothing stored
    "set_ugi": _ANYONE, "getMetaConf": _ANYONE, "setMetaConf": _ANYONE, "get_config_value": _ANYONE,
    "partition_name_to_vals": _ANYONE, "partition_name_to_spec": _ANYONE,
    "get_current_notificationEventId": _ANYONE,
    # legacy types are global
    "get_type": _ANYONE, "get_type_all": _ANYONE, "create_type": _ADMIN, "drop_type": _ADMIN,
    # databases
    "create_database": Rule(D, _in_request("database", "name", None)),
    "get_database": Rule(R, _database("name")),
    "drop_database": Rule(D, _database("name")),
    "alter_database": Rule(D, _database("dbname")),
    "get_databases": Rule(None, result_filter=_filter_databases),
    "get_all_databases": Rule(None, result_filter=_filter_databases),
    # functions live in a database
    "create_function": Rule(D, _in_request("func", "dbName", None)),
    "drop_function": Rule(D, _database("dbName")),
    "alter_function": Rule(D, _functions),
    "get_functions": Rule(R, _database("dbName")),
    "get_function": Rule(R, _database("dbName")),
    "get_all_functions": Rule(None, result_filter=_filter_functions),
    # table reads
    "get_table": _read_table("dbname", "tbl_name"),
    "get_table_req": Rule(R, _in_request("req", "dbName", "tblName")),
    "get_fields": _read_table("db_name", "table_name"),
    "get_fields_with_environment_context": _read_table("db_name", "table_name"),
    "get_schema": _read_table("db_name", "table_name"),
    "get_schema_with_environment_context": _read_table("db_name", "table_name"),
    "get_indexes": _read_table(), "get_index_names": _read_table(),
    "get_primary_keys": Rule(R, _in_request("request", "db_name", "tbl_name")),
    "get_foreign_keys": Rule(R, _foreign_keys),
    "get_tables": Rule(None, result_filter=_filter_table_names("db_name")),
    "get_all_tables": Rule(None, result_filter=_filter_table_names("db_name")),
    "get_tables_by_type": Rule(None, result_filter=_filter_table_names("db_name")),
    "get_table_names_by_filter": Rule(None, result_filter=_filter_table_names("dbname")),
    "get_table_meta": Rule(None, result_filter=_filter_table_meta),
    "get_table_objects_by_name": Rule(None, result_filter=_filter_tables),
    "get_table_objects_by_name_req": Rule(None, result_filter=_filter_tables_result),
    # table changes
    "create_table": Rule(D, _new_table),
    "create_table_with_environment_context": Rule(D, _new_table),
    "drop_table": _ddl_table("dbname", "name"),
    "drop_table_with_environment_context": _ddl_table("dbname", "name"),
    "alter_table": Rule(D, _altered_table, stats_only_alter="table"),
    "alter_table_with_environment_context": Rule(D, _altered_table, stats_only_alter="table"),
    "alter_table_with_cascade": Rule(D, _altered_table, stats_only_alter="table"),
    # partition reads
    "get_partition": _read_table(), "get_partition_with_auth": _read_table(),
    "get_partition_by_name": _read_table(), "get_partitions": _read_table(),
    "get_partitions_with_auth": _read_table(), "get_partition_names": _read_table(),
    "get_partitions_ps": _read_table(), "get_partitions_ps_with_auth": _read_table(),
    "get_partition_names_ps": _read_table(), "get_partitions_by_filter": _read_table(),
    "get_num_partitions_by_filter": _read_table(), "get_partitions_by_names": _read_table(),
    "get_partitions_by_names_req": Rule(R, _in_request("req", "db_name", "tbl_name")),
    "get_partition_values": Rule(R, _in_request("request", "dbName", "tblName")),
    # partition changes
    "add_partition": Rule(D, _partitions("new_part")),
    "add_partition_with_environment_context": Rule(D, _partitions("new_part")),
    "add_partitions": Rule(D, _partitions("new_parts")),
    "add_partitions_req": Rule(D, _in_request("request", "dbName", "tblName")),
    "append_partition": _ddl_table(), "append_partition_with_environment_context": _ddl_table(),
    "append_partition_by_name": _ddl_table(), "append_partition_by_name_with_environment_context": _ddl_table(),
    "drop_partition": _ddl_table(), "drop_partition_with_environment_context": _ddl_table(),
    "drop_partition_by_name": _ddl_table(), "drop_partition_by_name_with_environment_context": _ddl_table(),
    "drop_partitions_req": Rule(D, _in_request("req", "dbName", "tblName")),
    "alter_partition": Rule(D, _table("db_name", "tbl_name"), stats_only_alter="partition"),
    "alter_partition_with_environment_context": Rule(D, _table("db_name", "tbl_name"), stats_only_alter="partition"),
    "alter_partitions": Rule(D, _table("db_name", "tbl_name"), stats_only_alter="partitions"),
    "alter_partitions_with_environment_context": Rule(D, _table("db_name", "tbl_name"),
                                                      stats_only_alter="partitions"),
    "rename_partition": _ddl_table(),
    # statistics reads
    "get_table_column_statistics": _read_table(),
    "get_partition_column_statistics": _read_table(),
    "get_table_statistics_req": Rule(R, _in_request("request", "dbName", "tblName")),
    "get_partitions_statistics_req": Rule(R, _in_request("request", "dbName", "tblName")),
    "get_aggr_stats_for": Rule(R, _in_request("request", "dbName", "tblName")),
    # statistics writes and deletes
    "update_table_column_statistics": Rule(W, _stats_object("stats_obj")),
    "update_partition_column_statistics": Rule(W, _stats_object("stats_obj")),
    "update_table_column_statistics_req": Rule(W, _stats_request("req")),
    "update_partition_column_statistics_req": Rule(W, _stats_request("req")),
    "set_aggr_stats_for": Rule(W, _stats_request("request")),
    "delete_table_column_statistics": Rule(W, _table("db_name", "tbl_name")),
    "delete_partition_column_statistics": Rule(W, _table("db_name", "tbl_name")),
    "delete_column_statistics_req": Rule(W, _in_request("req", "db_name", "tbl_name")),
    # issue 10's per-file statistics partials (ANALYZE's shared cache): statistics data of the table
    "metastore_get_file_partials": Rule(R, _in_request("req", "dbName", "tblName")),
    "metastore_put_file_partials": Rule(W, _in_request("req", "dbName", "tblName")),
    "metastore_delete_file_partials": Rule(W, _in_request("req", "dbName", "tblName")),
    # issue 11's split-filtering indexes: index DDL on the table, reads and the split filter read it
    "metastore_create_index": Rule(D, _in_request("index", "dbName", "tableName")),
    "metastore_finish_index_build": Rule(D, _in_request("build", "dbName", "tableName")),
    "metastore_drop_index": _ddl_table("dbName", "tableName"),
    "metastore_get_index": _read_table("dbName", "tableName"),
    "metastore_filter_splits": Rule(R, _in_request("request", "dbName", "tableName")),
    "metastore_list_indexes": Rule(None, result_filter=_filter_indexes),
}

# Parameters ANALYZE (Hive's, Spark's, ours) writes: an alter changing only these is a statistics write.
_STATS_PARAMETERS = frozenset({
    "numRows", "rawDataSize", "totalSize", "numFiles", "numFilesErasureCoded", "COLUMN_STATS_ACCURATE",
    "STATS_GENERATED_VIA_STATS_TASK", "STATS_GENERATED", "transient_lastDdlTime", "last_modified_by",
    "last_modified_time", "metastore.analyze.fingerprint",
})
_STATS_PARAMETER_PREFIXES = ("spark.sql.statistics.",)


def _is_stats_parameter(key: str) -> bool:
    return key in _STATS_PARAMETERS or key.startswith(_STATS_PARAMETER_PREFIXES)


def _other_parameters(params: dict[str, str] | None) -> dict[str, str]:
    return {k: v for k, v in (params or {}).items() if not _is_stats_parameter(k)}


def _sd_shape(sd: Any) -> tuple[Any, ...]:
    if sd is None:
        return ()
    serde = sd.serdeInfo
    return (
        [(_s(c.name).lower(), _s(c.type).lower()) for c in sd.cols or []],
        (sd.location or "").rstrip("/"), sd.inputFormat, sd.outputFormat,
        serde.serializationLib if serde is not None else None,
        list(sd.bucketCols or []), max(sd.numBuckets or 0, 0),
    )


def table_shape(t: Any) -> tuple[Any, ...]:
    """Everything of a Thrift Table but statistics parameters and bookkeeping times."""
    return (
        _s(t.dbName).lower(), _s(t.tableName).lower(), t.tableType, t.viewOriginalText, t.viewExpandedText,
        [(_s(k.name).lower(), _s(k.type).lower()) for k in t.partitionKeys or []],
        _sd_shape(t.sd), _other_parameters(t.parameters),
    )


def partition_shape(p: Any) -> tuple[Any, ...]:
    """Everything of a Thrift Partition but statistics parameters and bookkeeping times."""
    return (list(p.values or []), _sd_shape(p.sd), _other_parameters(p.parameters))


class Authorizer:
    """Checks each call of a connection against the policy; one per worker, shared by its threads."""

    def __init__(self, policy: PolicyFile, current_table: Callable[[str, str], Any] | None = None,
                 current_partition: Callable[[str, str, list[str]], Any] | None = None) -> None:
        self._policy = policy
        self._current_table = current_table
        self._current_partition = current_partition

    @staticmethod
    def principal_of(session: ConnectionSession) -> str:
        return session.principal or "anonymous"

    def denial(self, method: str, args: Any, session: ConnectionSession) -> str | None:
        """None when the call may go ahead, else the message of the MetaException that refuses it."""
        rule = METHOD_RULES.get(method, _ADMIN)
        if rule.permission is None:
            return None
        policy = self._policy.current()
        principal = self.principal_of(session)
        try:
            targets = list(rule.targets(args))
        except AttributeError:
            targets = [Target("", "")]  # a malformed request: only a grant on everything lets it reach the handler
        permission = rule.permission
        if rule.stats_only_alter and all(policy.allows(principal, Permission.WRITE_STATS, t) for t in targets) \
                and self._changes_only_statistics(rule.stats_only_alter, args):
            permission = Permission.WRITE_STATS
        for target in targets:
            if not policy.allows(principal, permission, target):
                return (f"Permission denied: principal {principal} has no {permission.value} permission on "
                        f"{target.describe()} ({method})")
        return None

    def filter_result(self, method: str, args: Any, result: Any, session: ConnectionSession) -> Any:
        """The listing reply with only the objects the principal may read."""
        rule = METHOD_RULES.get(method)
        if rule is None or rule.result_filter is None:
            return result
        policy = self._policy.current()
        principal = self.principal_of(session)
        return rule.result_filter(args, result, lambda t: policy.allows(principal, Permission.READ, t))

    def _changes_only_statistics(self, kind: str, args: Any) -> bool:
        """True when the alter changes nothing but statistics parameters (what ANALYZE writes)."""
        try:
            if kind == "table":
                if self._current_table is None or args.new_tbl is None:
                    return False
                old = self._current_table(args.dbname, args.tbl_name)
                return table_shape(old) == table_shape(args.new_tbl)
            if self._current_partition is None:
                return False
            parts = [args.new_part] if kind == "partition" else list(args.new_parts or [])
            if not parts:
                return False
            for part in parts:
                old = self._current_partition(args.db_name, args.tbl_name, list(part.values or []))
                if partition_shape(old) != partition_shape(part):
                    return False
            return True
        except Exception:  # noqa: BLE001 - anything unreadable (missing table, bad struct) is judged as DDL
            return False
