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
