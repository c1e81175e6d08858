"""The boundaries DESIGN.md draws, checked by importing every module of a package in a fresh interpreter (so
nothing another test imported counts): Thrift stays at the edge (metastore.wire, server, client), the statistics
domain speaks neither Thrift nor SQL, the store and the services speak no Thrift (the store keeps the edge's
encoding of a served statistic, but gets the function from the edge: StatsRepository), and the edge reaches no
store or service."""

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


_THRIFT = ("thrift", "metastore.api", "metastore.wire", "metastore.server")


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("metastore.stats", (*_THRIFT, "sqlalchemy", "metastore.store")),
        ("metastore.store", _THRIFT),
        ("metastore.service", _THRIFT),
        ("metastore.wire", ("sqlalchemy", "metastore.store", "metastore.service", "metastore.server")),
    ],
)
def test_package_loads_nothing_across_its_boundary(package: str, forbidden: tuple[str, ...]) -> None:
    assert _loaded_under(package, *forbidden) == []


def test_the_walk_reaches_subpackages() -> None:
    # A module moved into a subpackage is still imported (and so still checked) by the walk above.
    loaded = _loaded_under("metastore.stats", "metastore.stats.harvest.scan", "metastore.stats.kinds")
    assert loaded == ["metastore.stats.harvest.scan", "metastore.stats.kinds"]
    assert "metastore.store.column_stats.rows" in _loaded_under("metastore.store", "metastore.store.column_stats")
