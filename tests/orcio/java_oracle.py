"""Runs ORC Java (orc-core from pyspark's jars) as a test oracle: see java/OrcJavaOracle.java for the protocol."""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "OrcJavaOracle.java"


def pyspark_jars() -> str | None:
    """The directory of pyspark's bundled jars (orc-core, hive-storage-api, hadoop...), if pyspark is installed."""
    try:
        import pyspark
    except ImportError:
        return None
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    return str(jars) if glob.glob(str(jars / "orc-core-*.jar")) else None


@functools.lru_cache(maxsize=1)
def compiled_oracle() -> tuple[str, str] | None:
    """Compile the oracle once per test run; returns (class directory, classpath) or None without javac/pyspark."""
    jars = pyspark_jars()
    if jars is None or shutil.which("javac") is None or shutil.which("java") is None:
        return None
    out_dir = tempfile.mkdtemp(prefix="orc-java-oracle-")
    classpath = os.pathsep.join([out_dir, os.path.join(jars, "*")])
    subprocess.run(
        ["javac", "-nowarn", "-cp", os.path.join(jars, "*"), "-d", out_dir, str(JAVA_SOURCE)],
        check=True,
        capture_output=True,
    )
    return out_dir, classpath


def ask_java(requests: list[str], timeout: float = 240) -> list[str]:
    """Send request lines to one JVM running the oracle and return its answer lines (one per request)."""
    compiled = compiled_oracle()
    if compiled is None:
        raise RuntimeError("java, javac or pyspark's jars are missing")
    _, classpath = compiled
    proc = subprocess.run(
        ["java", "-Xmx1g", "-cp", classpath, "OrcJavaOracle", *([] if not requests else [])],
        input="\n".join(requests) + "\n",
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    answers = proc.stdout.splitlines()
    if len(answers) != len(requests):
        raise RuntimeError(f"oracle answered {len(answers)} lines for {len(requests)} requests: {proc.stderr[-2000:]}")
    bad = [a for a in answers if a.startswith("ERROR")]
    if bad:
        raise RuntimeError(f"oracle failed: {bad[:3]}")
    return answers
