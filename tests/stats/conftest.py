"""Fixtures for the statistics tests: compiling and running small Java oracles against pyspark's jars."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

RESOURCES = Path(__file__).resolve().parent / "resources"


def _pyspark_jars() -> Path | None:
    try:
        import pyspark
    except ImportError:
        return None
    jars = Path(os.path.dirname(pyspark.__file__)) / "jars"
    return jars if jars.is_dir() else None


@pytest.fixture(scope="session")
def java_oracle(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], list[str]]:
    """Compile ``resources/<Name>.java`` once and return ``run(name, input_text) -> output lines``.

    Skips when no JDK or no pyspark jars are present (both are part of the project's test environment).
    """
    javac, java = shutil.which("javac"), shutil.which("java")
    jars = _pyspark_jars()
    if not javac or not java or jars is None:
        pytest.skip("needs javac/java and pyspark's jars")
    classes = tmp_path_factory.mktemp("java-oracle")
    classpath = f"{classes}{os.pathsep}{jars}/*"
    compiled = False

    def run(name: str, input_text: str) -> list[str]:
        nonlocal compiled
        if not compiled:
            # One javac for every oracle that pyspark's jars can build (HllGolden needs Hive >= 3 classes).
            sources = [str(p) for p in sorted(RESOURCES.glob("*Oracle.java"))]
            subprocess.run(
                [javac, "-nowarn", "-d", str(classes), "-cp", classpath, *sources],
                check=True,
                capture_output=True,
            )
            compiled = True
        inp = classes / f"{name}.in"
        inp.write_text(input_text)
        proc = subprocess.run(
            [java, "-cp", classpath, name, str(inp)], check=True, capture_output=True, text=True
        )
        return proc.stdout.splitlines()

    return run
