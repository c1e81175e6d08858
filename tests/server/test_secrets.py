"""Secrets stay out of the server's output: database passwords are masked in the startup line and in errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from metastore.store.migrate import display_url
from server.harness import ServerFailed, fresh_pg_database, start_server


def test_display_url_masks_passwords_even_in_urls_sqlalchemy_cannot_parse() -> None:
    assert display_url("postgresql+psycopg2://u:s3cr3t@h:5432/db") == "postgresql+psycopg2://u:***@h:5432/db"
    assert "s3cr3t" not in display_url("not a scheme://u:s3cr3t@h/db")
    assert display_url("sqlite:////tmp/x.db") == "sqlite:////tmp/x.db"


@pytest.mark.pg
def test_startup_line_and_errors_mask_the_database_password(pg_server: str, pg_schema_template: str,
                                                            tmp_path: Path) -> None:
    with fresh_pg_database(pg_server, template=pg_schema_template) as url:
        # The test server trusts local connections, so any password is accepted: it only has to stay hidden.
        with_password = sa.engine.make_url(url).set(password="Very-Secret-Pw").render_as_string(hide_password=False)
        server = start_server(tmp_path / "ok", with_password, workers=1)
        try:
            assert ":***@" in server.ready_line
        finally:
            assert server.stop() == 0
        assert "Very-Secret-Pw" not in server.output
        # A database that does not exist: the error names it, not the password.
        missing = sa.engine.make_url(with_password).set(database="no_such_db_here").render_as_string(
            hide_password=False)
        with pytest.raises(ServerFailed) as failed:
            start_server(tmp_path / "bad", missing, workers=1)
        assert "Very-Secret-Pw" not in str(failed.value)
