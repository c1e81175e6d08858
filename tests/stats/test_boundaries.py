"""metastore.stats is the domain: it imports neither Thrift nor SQL (issue 16 §2, §3).

Every module of the package is imported in a fresh interpreter (so nothing another test imported counts)
and the interpreter's modules are checked afterwards.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import metastore.stats

FORBIDDEN = ("thrift", "sqlalchemy", "metastore.api", "metastore.wire", "metastore.store", "metastore.server")


def _stats_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(metastore.stats.__path__, "metastore.stats."))


def test_the_stats_package_has_the_modules_this_test_expects() -> None:
    modules = _stats_modules()
    # the walk finds subpackages too, so a module moved into one is still checked
    assert {"metastore.stats.model", "metastore.stats.kinds", "metastore.stats.harvest.scan"} <= set(modules)


def test_stats_modules_import_neither_thrift_nor_sql() -> None:
    modules = _stats_modules()
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    offending = [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert offending == [], f"importing metastore.stats loads {offending}"
