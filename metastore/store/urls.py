"""Database URLs as users write them, turned into the URL an engine is made from.

SQLAlchemy 2.1 made psycopg (version 3) the driver of a plain `postgresql://` URL; earlier versions picked
psycopg2. The project ships psycopg2, and users (and our own messages) write `postgresql://`, so a URL that names
no driver gets the one we ship. A URL naming its driver (`postgresql+psycopg://`, `postgresql+psycopg2://`) is
kept as written.
"""

from __future__ import annotations

import sqlalchemy as sa

from metastore.errors import MetastoreError

#: The PostgreSQL driver installed with the project (the `psycopg2-binary` dependency).
POSTGRESQL_DRIVER = "psycopg2"


def database_url(url: str | sa.engine.URL) -> sa.engine.URL:
    """`url` parsed, with the shipped PostgreSQL driver filled in when none is named; MetastoreError when it is
    not a database URL."""
    if isinstance(url, sa.engine.URL):
        parsed = url
    else:
        try:
            parsed = sa.engine.make_url(url)
        except sa.exc.ArgumentError as exc:
            raise MetastoreError(f"not a database URL: {url!r} ({exc})") from None
    if parsed.drivername == "postgresql":
        return parsed.set(drivername=f"postgresql+{POSTGRESQL_DRIVER}")
    return parsed


def database_url_text(url: str) -> str:
    """`database_url` as a string (password kept), for APIs that take URLs as text, such as Alembic's."""
    return database_url(url).render_as_string(hide_password=False)
