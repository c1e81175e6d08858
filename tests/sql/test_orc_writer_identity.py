"""The ORC files the application writes name it (and its release) in the footer's softwareVersion; orcio
itself knows nothing of its host and takes that identity from the caller."""

from __future__ import annotations

from pathlib import Path

from metastore import ORC_SOFTWARE_VERSION, __version__
from metastore.cli import main
from metastore.orcio import OrcReader

from .session import SqlSession


def test_insert_writes_files_naming_the_application(session: SqlSession, tmp_path: Path) -> None:
    location = tmp_path / "t"
    session.run(f"CREATE EXTERNAL TABLE t (a int) LOCATION '{location}'")
    session.run("INSERT INTO t VALUES (1), (2)")
    files = sorted(location.rglob("*.orc"))
    assert files
    for path in files:
        with OrcReader(path) as reader:
            assert reader.software_version == ORC_SOFTWARE_VERSION == f"metastore-orcio {__version__}"


def test_orc_write_names_the_application(tmp_path: Path) -> None:
    csv = tmp_path / "in.csv"
    csv.write_text("1,a\n2,b\n")
    out = tmp_path / "out.orc"
    assert main(["orc", "write", "--schema", "struct<id:bigint,name:string>", str(csv), str(out)]) == 0
    with OrcReader(out) as reader:
        assert reader.software_version == ORC_SOFTWARE_VERSION
        assert reader.num_rows == 2
