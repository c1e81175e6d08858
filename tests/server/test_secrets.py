"""Secrets stay out of the server's output: database passwords are masked in the startup line and in errors, and no
command's --help shows a secret set in the environment."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import sqlalchemy as sa

from metastore.store.migrate import display_url
from server.harness import ServerFailed, fresh_pg_database, metastore_exe, start_server


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


# Every way a secret can reach a command through the environment: the database URL (serve, sql, db), the shell's
# PLAIN password, and secrets inside paths or URLs the server reads from METASTORE_<FLAG>.
SECRET_ENV = {
    "METASTORE_DB": "postgresql://u:Env-Db-Secret-1@127.0.0.1:1/db",
    "METASTORE_PASSWORD": "Env-Plain-Secret-2",
    "METASTORE_LDAP_URL": "ldap://u:Env-Ldap-Secret-3@127.0.0.1:1",
    "METASTORE_KERBEROS_KEYTAB": "/Env-Keytab-Secret-4",
    "METASTORE_PASSWORD_FILE": "/Env-Passwords-Secret-5",
    "METASTORE_TLS_KEY": "/Env-Tls-Key-Secret-6",
}


@pytest.mark.parametrize("command", [[], ["serve"], ["sql"], ["db"], ["db", "upgrade"], ["db", "current"],
                                     ["passwd"]])
def test_help_shows_no_secret_from_the_environment(command: list[str]) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("METASTORE_")}, **SECRET_ENV}
    out = subprocess.run([metastore_exe(), *command, "--help"], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0 and "usage: metastore" in out.stdout, out.stderr
    shown = out.stdout + out.stderr
    assert "Secret-" not in shown, [name for name, value in SECRET_ENV.items() if value in shown]
