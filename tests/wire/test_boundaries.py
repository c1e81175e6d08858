"""Thrift stays at the edge: the statistics domain loads no Thrift, and the wire package no store or service."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Imports every module of a package in a fresh interpreter and prints the loaded modules under the given roots.
_LOADED_UNDER = """
import json, pkgutil, importlib, sys
package = importlib.import_module(sys.argv[1])
for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
    importlib.import_module(info.name)
roots = sys.argv[2:]
print(json.dumps(sorted(m for m in sys.modules if any(m == r or m.startswith(r + ".") for r in roots))))
"""


def _loaded_under(package: str, *roots: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _LOADED_UNDER, package, *roots], capture_output=True, text=True, timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("metastore.stats", ("thrift", "metastore.api", "metastore.wire", "sqlalchemy")),
        ("metastore.wire", ("sqlalchemy", "metastore.store", "metastore.service", "metastore.server")),
    ],
)
def test_package_loads_nothing_across_its_boundary(package: str, forbidden: tuple[str, ...]) -> None:
    assert _loaded_under(package, *forbidden) == []
