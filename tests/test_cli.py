"""The `metastore` command: --help everywhere, the ORC tools end to end, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

COMMANDS = [
    [],
    ["serve"],
    ["db"],
    ["db", "upgrade"],
    ["db", "current"],
    ["sql"],
    ["orc"],
    ["orc", "meta"],
    ["orc", "cat"],
    ["orc", "write"],
]


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "metastore.cli", *args], capture_output=True, text=True, timeout=120, check=check
    )


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "metastore")
def test_every_command_has_help(command: list[str]) -> None:
    result = run(*command, "--help")
    assert result.stdout.startswith("usage: metastore")
    assert "--help" in result.stdout


def test_orc_write_cat_meta(tmp_path: Path) -> None:
    csv = tmp_path / "in.csv"
    csv.write_text("id,name,price\n1,a,1.5\n2,,2.25\n3,ccc,\n")
    out = tmp_path / "out.orc"
    result = run(
        "orc", "write", "--schema", "struct<id:bigint,name:string,price:double>", "--header",
        "-o", "orc.compress=SNAPPY", str(csv), str(out),
    )
    assert "wrote 3 rows" in result.stderr
    rows = [json.loads(line) for line in run("orc", "cat", str(out)).stdout.splitlines()]
    assert rows == [
        {"id": 1, "name": "a", "price": 1.5},
        {"id": 2, "name": None, "price": 2.25},
        {"id": 3, "name": "ccc", "price": None},
    ]
    projected = [json.loads(line) for line in run("orc", "cat", "--columns", "name", str(out)).stdout.splitlines()]
    assert projected == [{"name": "a"}, {"name": None}, {"name": "ccc"}]
    meta = run("orc", "meta", str(out)).stdout
    assert "Rows: 3" in meta
    assert "Compression: SNAPPY" in meta
    assert "Type: struct<id:bigint,name:string,price:double>" in meta

    import pyarrow.orc

    assert pyarrow.orc.ORCFile(str(out)).read().to_pylist() == rows


def test_orc_errors_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.orc"
    bad.write_bytes(b"\x00ORC" * 50)
    for args in (["orc", "meta", str(bad)], ["orc", "cat", str(tmp_path / "missing.orc")]):
        result = run(*args, check=False)
        assert result.returncode == 1
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("metastore orc: error:"), result.stderr
    result = run("orc", "write", "--schema", "struct<a:int>", "-o", "novalue", str(bad), str(tmp_path / "x.orc"), check=False)
    assert result.returncode == 1 and "KEY=VALUE" in result.stderr
