"""Fixtures shared by the metastore.orcio tests (reader and writer helpers both add here)."""

from __future__ import annotations

from pathlib import Path

import pytest

ORC_DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "orc"


@pytest.fixture(scope="session")
def orc_examples() -> Path:
    """Directory of the Apache ORC example files copied into tests/data/orc (see its README for origin)."""
    if not ORC_DATA_DIR.is_dir():
        pytest.fail(f"ORC example files are missing: {ORC_DATA_DIR}", pytrace=False)
    return ORC_DATA_DIR


_PYORC_PRELUDE = """
import pickle, sys
import pyorc
inputs = pickle.load(sys.stdin.buffer)
"""


def _run_pyorc(code: str, **inputs):
    """Run ``code`` (which must set ``result``) in a fresh interpreter that imports pyorc but not pyarrow.

    pyorc and pyarrow each link their own copy of ORC C++ and protobuf; used in one process they can crash it
    (SIGSEGV), so every pyorc call of the suite goes through here. ``inputs`` and ``result`` travel pickled, so
    the code should return plain Python values.
    """
    import pickle
    import subprocess
    import sys

    script = _PYORC_PRELUDE + code + "\npickle.dump(result, sys.stdout.buffer)\n"
    proc = subprocess.run(
        [sys.executable, "-c", script], input=pickle.dumps(inputs), capture_output=True, timeout=300, check=False
    )
    if proc.returncode != 0:
        raise AssertionError(f"pyorc subprocess failed ({proc.returncode}): {proc.stderr.decode(errors='replace')}")
    return pickle.loads(proc.stdout)


@pytest.fixture(scope="session")
def run_pyorc():
    """Call pyorc in a separate interpreter: ``run_pyorc(code, **inputs) -> result`` (see _run_pyorc)."""
    pytest.importorskip("pyorc")
    return _run_pyorc
