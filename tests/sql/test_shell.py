"""The shell as users run it: batch mode through a subprocess (-e, -f, stdin), output formats, error lines and exit
codes, and the `metastore sql` entry point."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from metastore.sql.shell import error_line

ENTRY = [sys.executable, "-m", "metastore.sql"]


def shell(tmp_path: Path, *args: str, stdin: str | None = None, entry: list[str] | None = None,
          timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the shell embedded on the test's own database, warehouse and statistics cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("METASTORE_")}
    env["METASTORE_ANALYZE_CACHE"] = str(tmp_path / "cache.sqlite")
    cmd = [*(entry or ENTRY), "--db", f"sqlite:///{tmp_path / 'ms.db'}", "--warehouse", str(tmp_path / "wh"), *args]
    return subprocess.run(cmd, input=stdin if stdin is not None else "", capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=tmp_path)


SETUP = (
    "CREATE DATABASE shop; USE shop; "
    "CREATE TABLE items (id bigint, name string, price decimal(8,2)) PARTITIONED BY (ds string); "
    "INSERT INTO items PARTITION (ds='2024-01-01') VALUES (1, 'apple', 0.5), (2, 'pear, green', 1.25), (3, NULL, 2);"
)


def test_batch_table_output_and_status_lines(tmp_path: Path) -> None:
    proc = shell(tmp_path, "-e", SETUP + "SHOW PARTITIONS items; DESCRIBE items;")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[:5] == [
        "+---------------+",
        "| partition     |",
        "+---------------+",
        "| ds=2024-01-01 |",
        "+---------------+",
    ]
    assert "| id                      | bigint       |         |" in proc.stdout
    assert "| # Partition Information |              |         |" in proc.stdout
    # status lines go to stderr, so stdout stays data only
    assert proc.stderr.splitlines()[:3] == ["OK", "OK", "OK"]
    assert "3 row(s) written to shop.items into 1 partition(s) (1 new)" in proc.stderr


def test_json_and_csv_output(tmp_path: Path) -> None:
    assert shell(tmp_path, "-e", SETUP).returncode == 0
    analyze = "USE shop; ANALYZE TABLE items COMPUTE STATISTICS FOR COLUMNS; DESCRIBE FORMATTED items price;"
    proc = shell(tmp_path, "--output", "json", "-e", analyze)
    assert proc.returncode == 0, proc.stderr
    analyzed, described = (json.loads(line) for line in proc.stdout.splitlines())
    assert analyzed == [{
        "partition": "ds=2024-01-01", "num_rows": 3, "num_files": 1, "total_size": analyzed[0]["total_size"],
        "raw_data_size": analyzed[0]["raw_data_size"], "files_read": 1, "files_reused": 0,
    }]
    assert described == [{
        "col_name": "price", "data_type": "decimal(8,2)", "min": "0.5", "max": "2", "num_nulls": 0,
        "distinct_count": 3, "avg_col_len": "", "max_col_len": "", "num_trues": "", "num_falses": "",
        "bitVector": "HL", "comment": "",
    }]
    assert "analyzed 1 partition(s) of shop.items, 3 column(s): 1 file(s) read" in proc.stderr
    proc = shell(tmp_path, "--output", "csv", "--database", "shop", "-e", "SHOW TABLES; SHOW TBLPROPERTIES items;")
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.split("prpt_name", 1)
    assert list(csv.reader(io.StringIO(first))) == [["tab_name"], ["items"]]
    props = list(csv.reader(io.StringIO("prpt_name" + second)))
    assert props[0] == ["prpt_name", "prpt_value"]
    assert ["COLUMN_STATS_ACCURATE", '{"COLUMN_STATS":{"id":"true","name":"true","price":"true"}}'] in props


def test_syntax_error_stops_the_batch_with_the_position(tmp_path: Path) -> None:
    proc = shell(tmp_path, "-e", "CREATE DATABASE a; CREATE TABEL x (i int); CREATE DATABASE b;")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == ["OK", "Error: line 1:27: expected DATABASE, TABLE or INDEX after CREATE, found 'TABEL'"]
    shown = shell(tmp_path, "--output", "csv", "-e", "SHOW DATABASES")
    assert shown.stdout.split() == ["database_name", "a", "default"], "statements after the error did not run"


def test_execution_error_in_a_file_names_its_line(tmp_path: Path) -> None:
    script = tmp_path / "script.sql"
    script.write_text("-- set up\nCREATE DATABASE d;\nUSE d;\n  DESCRIBE missing;\nCREATE TABLE never (a int);\n")
    proc = shell(tmp_path, "-f", str(script))
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == "Error: line 4:12: table d.missing does not exist"
    assert shell(tmp_path, "--database", "d", "-e", "SHOW TABLES").stdout == "+----------+\n| tab_name |\n+----------+\n+----------+\n"
    missing = shell(tmp_path, "-f", str(tmp_path / "nope.sql"))
    assert missing.returncode == 1 and missing.stderr.startswith("Error: cannot read")


def test_statements_from_stdin_run_as_a_batch(tmp_path: Path) -> None:
    proc = shell(tmp_path, "--output", "json", stdin="SHOW DATABASES;\nSHOW TABLES;\n")
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line) for line in proc.stdout.splitlines()] == [[{"database_name": "default"}], []]


def test_load_data_and_progress_bar(tmp_path: Path) -> None:
    data = tmp_path / "rows.csv"
    data.write_text("".join(f"{i},name{i % 7}\n" for i in range(500)))
    proc = shell(
        tmp_path, "--progress", "-e",
        f"CREATE TABLE t (i int, s string); LOAD DATA LOCAL INPATH '{data}' INTO TABLE t; "
        "ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS; DESCRIBE FORMATTED t s;",
    )
    assert proc.returncode == 0, proc.stderr
    assert "500 row(s) loaded from CSV into default.t" in proc.stderr
    assert "analyze default.t" in proc.stderr and "file" in proc.stderr  # tqdm's bar
    assert "| s        | string    |     |     | 0         | 7              | 5.0         | 5           |" in proc.stdout


def test_connection_errors_are_one_line(tmp_path: Path) -> None:
    from server.harness import free_port

    proc = subprocess.run([*ENTRY, "--connect", f"thrift://127.0.0.1:{free_port()}", "-e", "SHOW DATABASES"],
                          capture_output=True, text=True, timeout=60, input="")
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("Error: cannot connect to the metastore")
    bad = subprocess.run([*ENTRY, "--connect", "http://x", "-e", "SHOW DATABASES"], capture_output=True, text=True,
                         timeout=60, input="")
    assert bad.returncode == 1 and "is not of the form thrift://host:port" in bad.stderr


def test_error_line_keeps_one_line() -> None:
    from metastore.errors import NoSuchObject
    from metastore.sql.errors import Position

    assert error_line(NoSuchObject("a\nb"), Position(2, 3)) == "Error: line 2:3: a b"


def test_metastore_command_has_sql(tmp_path: Path) -> None:
    """`metastore sql` is wired into the main command (metastore/cli.py calls add_sql_commands)."""
    exe = Path(sys.executable).with_name("metastore")
    proc = shell(tmp_path, "-e", "SHOW DATABASES", entry=[str(exe), "sql"])
    assert proc.returncode == 0, proc.stderr
    assert "| default       |" in proc.stdout


@pytest.mark.parametrize("flags", [["-e", "x", "-f", "y"], ["--connect", "thrift://h:1", "--db", "sqlite://"]])
def test_conflicting_flags(tmp_path: Path, flags: list[str]) -> None:
    proc = subprocess.run([*ENTRY, *flags], capture_output=True, text=True, timeout=60, input="")
    assert proc.returncode == 2 and "not allowed with argument" in proc.stderr


def test_interactive_session_through_a_pseudo_terminal(tmp_path: Path) -> None:
    """Multi-line statements, an error that does not end the session, the prompt following USE, history."""
    import pty
    import re
    import select
    import time

    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("METASTORE_")}
    env.update({"TERM": "xterm", "XDG_DATA_HOME": str(tmp_path / "data"), "COLUMNS": "120", "LINES": "40"})
    proc = subprocess.Popen(
        [*ENTRY, "--db", f"sqlite:///{tmp_path / 'ms.db'}", "--warehouse", str(tmp_path / "wh")],
        stdin=slave, stdout=slave, stderr=slave, env=env, cwd=tmp_path, start_new_session=True,
    )
    os.close(slave)
    output = ""
    position = 0
    ansi = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[>=]|\r")

    def wait_for(text: str, timeout: float = 90.0) -> None:
        """Wait until `text` appears in the terminal output after what earlier waits matched."""
        nonlocal output, position
        deadline = time.monotonic() + timeout
        while True:
            clean = ansi.sub("", output)
            found = clean.find(text, position)
            if found >= 0:
                position = found + len(text)
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0 or proc.poll() is not None:
                raise AssertionError(f"{text!r} did not appear; output so far:\n{clean[-2000:]}")
            ready, _, _ = select.select([master], [], [], min(remaining, 0.5))
            if ready:
                try:
                    output += os.read(master, 65536).decode("utf-8", "replace")
                except OSError:
                    pass

    def send(line: str) -> None:
        os.write(master, line.encode() + b"\r")

    try:
        wait_for("metastore:default>")
        send("CREATE DATABASE inter;")
        wait_for("OK")
        send("SHOW")  # no ';' yet: the statement goes on on the next line
        send("  DATABASES;")
        wait_for("| inter         |")
        send("SHOW TABLEZ;")
        wait_for("Error: line 1:6: expected DATABASES, TABLES, PARTITIONS, TBLPROPERTIES or INDEX after SHOW, found 'TABLEZ'")
        send("USE inter;")
        wait_for("metastore:inter>")
        send("quit")
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        os.close(master)
    history = (tmp_path / "data" / "metastore" / "sql_history").read_text()
    assert "CREATE DATABASE inter;" in history and "USE inter;" in history


def test_completion_of_keywords_and_names(session, tmp_path: Path) -> None:
    from prompt_toolkit.document import Document

    from metastore.sql.completion import SqlCompleter

    session.run("CREATE DATABASE shop; CREATE TABLE shop.items (item_id int, item_name string); "
                "CREATE TABLE orders (order_id int)")
    completer = SqlCompleter(session.executor)

    def complete(text: str) -> list[str]:
        return sorted(c.text for c in completer.get_completions(Document(text), None))

    assert complete("ANALY") == ["ANALYZE"]
    assert complete("analy") == ["ANALYZE"]
    assert complete("USE sh") == ["SHOW", "shop"]  # keywords too: completion does not follow the grammar
    assert complete("DESCRIBE ord") == ["orders"]
    assert complete("DESCRIBE shop.it") == ["items"]
    assert complete("ANALYZE TABLE shop.items COMPUTE STATISTICS FOR COLUMNS item_") == ["item_id", "item_name"]
    assert complete("DESCRIBE orders ord") == ["order_id", "orders"]
    session.run("CREATE TABLE ordinals (n int)")
    assert complete("DESCRIBE ord") == ["orders"], "names are cached until the catalog changes"
    completer.invalidate()
    assert complete("DESCRIBE ord") == ["orders", "ordinals"]
