"""Database URLs as users write them: a plain postgresql:// gets the psycopg2 driver the project ships."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from metastore.errors import MetastoreError
from metastore.store.urls import database_url, database_url_text


@pytest.mark.parametrize(
    ("written", "driver"),
    [
        ("postgresql://postgres@127.0.0.1/metastore", "postgresql+psycopg2"),
        ("postgresql://u:p%40ss@db.example:6543/ms?sslmode=require", "postgresql+psycopg2"),
        ("postgresql+psycopg2://postgres@127.0.0.1/metastore", "postgresql+psycopg2"),
        ("postgresql+psycopg://postgres@127.0.0.1/metastore", "postgresql+psycopg"),
        ("sqlite:////tmp/ms.db", "sqlite"),
        ("sqlite://", "sqlite"),
    ],
)
def test_driver_is_filled_in_only_when_none_is_named(written: str, driver: str) -> None:
    url = database_url(written)
    assert url.drivername == driver
    # Everything but the driver is kept as written (password, port, query included).
    assert url.set(drivername="x") == sa.engine.make_url(written).set(drivername="x")


def test_text_form_keeps_the_password() -> None:
    assert database_url_text("postgresql://u:s3cret@h/db") == "postgresql+psycopg2://u:s3cret@h/db"


def test_a_plain_postgresql_url_makes_a_psycopg2_engine_on_the_installed_sqlalchemy() -> None:
    # Without the normalisation SQLAlchemy 2.1 would load psycopg (3), which is not installed.
    engine = sa.create_engine(database_url("postgresql://postgres@127.0.0.1/metastore"))
    try:
        assert engine.dialect.driver == "psycopg2"
    finally:
        engine.dispose()


@pytest.mark.parametrize("bad", ["", "not a url", "://nothing"])
def test_not_a_url_is_one_clear_error(bad: str) -> None:
    with pytest.raises(MetastoreError, match="not a database URL"):
        database_url(bad)
