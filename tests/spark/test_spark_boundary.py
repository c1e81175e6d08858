"""pyspark stays the optional extra: nothing outside metastore/spark imports it, and importing metastore.spark
itself loads no pyspark (it is imported where a Spark job is built)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "metastore"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_only_metastore_spark_imports_pyspark() -> None:
    offenders = [
        str(path.relative_to(PACKAGE.parent))
        for path in PACKAGE.rglob("*.py")
        if "spark" not in path.relative_to(PACKAGE).parts[:1]
        and any(name == "pyspark" or name.startswith("pyspark.") for name in _imports(path))
    ]
    assert offenders == []


def test_importing_metastore_spark_loads_no_pyspark() -> None:
    code = ("import sys, metastore.spark, metastore.spark.analyze, metastore.spark.tasks, metastore.spark.cli; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark'))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
