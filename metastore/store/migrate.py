"""Schema migrations with Alembic: upgrade, report the current revision, refuse an out-of-date schema."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa

import metastore
from metastore.errors import MetastoreError, SchemaOutOfDate

if TYPE_CHECKING:
    from alembic.config import Config  # imported lazily at run time: the server never loads Alembic

VERSION_TABLE = "alembic_version"


def alembic_dir() -> Path:
    """The Alembic script directory at the top of the source tree (the package is installed editable)."""
    path = Path(metastore.__file__).resolve().parents[1] / "alembic"
    if not (path / "env.py").is_file():
        raise MetastoreError(
            f"Alembic migrations not found at {path}: run from a source checkout installed with `pip install -e .`"
        )
    return path


def alembic_config(url: str | None = None) -> Config:
    """An Alembic Config for our script directory, targeting `url` when given."""
    from alembic.config import Config

    directory = alembic_dir()
    ini = directory.parent / "alembic.ini"
    cfg = Config(str(ini)) if ini.is_file() else Config()
    cfg.set_main_option("script_location", str(directory))
    if url is not None:
        # ConfigParser interpolation would treat '%' in passwords as syntax.
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def head_revision() -> str:
    """The newest migration this code knows."""
    return _head_revision(alembic_dir())


#: ``revision = "..."`` and ``down_revision = "..." | None`` as our migration scripts spell them
_REVISION_LINE = re.compile(r"^(down_revision|revision)\s*(?::[^=]*)?=\s*(?:[\"']([^\"']+)[\"']|(None))\s*$", re.M)


@functools.cache
def _head_revision(directory: Path) -> str:
    """The head of the scripts in `directory`, read once per process. The scripts' own ``revision`` and
    ``down_revision`` lines give it without importing Alembic (~60 ms of a command's start-up: a cron job's
    re-ANALYZE connects an embedded client and does little else); a script those lines do not describe (a merge
    of branches, a computed id) or a graph without exactly one head is left to Alembic's own reading."""
    head = _head_of_lines(directory / "versions")
    if head is not None:
        return head
    from alembic.script import ScriptDirectory

    found = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if found is None:  # pragma: no cover - the migrations ship with the code
        raise MetastoreError(f"no migrations in {directory}")
    return found


def _head_of_lines(versions: Path) -> str | None:
    """The one revision no script names as its ``down_revision``, from the scripts' text; None when a script
    has no plain ``revision``/``down_revision`` pair or the scripts do not form one line of history with one head."""
    revisions: set[str] = set()
    downs: set[str] = set()
    for script in sorted(versions.glob("*.py")):
        found: dict[str, str | None] = {}
        for name, value, none in _REVISION_LINE.findall(script.read_text(encoding="utf-8")):
            if name in found:
                return None
            found[name] = None if none else value
        if "revision" not in found or "down_revision" not in found or found["revision"] is None:
            return None
        revision, down = found["revision"], found["down_revision"]
        if revision in revisions:
            return None
        revisions.add(revision)
        if down is not None:
            downs.add(down)
    heads = revisions - downs
    if len(heads) != 1 or not downs <= revisions:
        return None
    return heads.pop()


def current_revision(url: str, engine: sa.Engine | None = None) -> str | None:
    """The revision the database at `url` is at; None for a database never migrated. ``engine``: one of the
    caller's on that database (a connection from its pool is used and returned), else one just for this."""
    from metastore.store.engine import create_engine

    own = engine is None
    engine = create_engine(url) if engine is None else engine
    try:
        if engine.dialect.name == "sqlite":
            found = _sqlite_revisions(engine)
            if found is None or len(found) <= 1:
                return found[0] if found else None
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table(VERSION_TABLE):
                return None
            rows = conn.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
            if len(rows) <= 1:  # Alembic's own reading, without importing Alembic
                return rows[0] if rows else None
            from alembic.runtime.migration import MigrationContext

            return MigrationContext.configure(conn).get_current_revision()  # several heads: Alembic's error
    finally:
        if own:
            engine.dispose()


def _sqlite_revisions(engine: sa.Engine) -> list[str] | None:
    """The rows of an SQLite database's version table (None: it has none), read through a pooled connection's
    DB-API cursor: no SQLAlchemy inspector, statement compilation or transaction (a plain SELECT in SQLite's
    autocommit mode takes no write lock). An embedded client checks the schema on every open, so this is part of
    every re-ANALYZE; the answer is the one the inspector and the SELECT give."""
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        try:
            cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (VERSION_TABLE,))
            if cursor.fetchone() is None:
                return None
            cursor.execute(f"SELECT version_num FROM {VERSION_TABLE}")
            return [row[0] for row in cursor.fetchall()]
        finally:
            cursor.close()
    finally:
        raw.close()


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate the database at `url` to `revision` (the newest by default). Concurrent callers queue on a
    lock and the later ones find nothing to do."""
    from alembic import command

    command.upgrade(alembic_config(url), revision)


def check_schema(url: str, *, auto_upgrade: bool, engine: sa.Engine | None = None) -> None:
    """Make sure the schema at `url` is the one this code needs. When it is older (or empty):
    auto_upgrade upgrades it, otherwise SchemaOutOfDate names the command that does. ``engine``: the caller's
    on that database, read through instead of opening one (an upgrade still runs on its own)."""
    head = head_revision()
    current = current_revision(url, engine)
    if current == head:
        return
    from alembic.script import ScriptDirectory

    known = {s.revision for s in ScriptDirectory.from_config(alembic_config()).walk_revisions()}
    if current is not None and current not in known:
        raise SchemaOutOfDate(
            f"database {display_url(url)} has schema revision {current}, which this version of metastore does not "
            f"know (it needs {head}); it was upgraded by a newer metastore: run that version instead"
        )
    if auto_upgrade:
        upgrade(url)
        return
    state = "is empty (no metastore schema)" if current is None else f"has schema revision {current}"
    raise SchemaOutOfDate(
        f"database {display_url(url)} {state}; this version of metastore needs revision {head}. "
        f"Run: metastore db upgrade --db {display_url(url)}"
    )


def display_url(url: str) -> str:
    """The URL with any password hidden, for messages."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        # Not a URL SQLAlchemy can parse, but it may still carry user:password@: hide whatever sits there.
        return re.sub(r"(://[^/@:]*:)[^@]*@", r"\1***@", url)
