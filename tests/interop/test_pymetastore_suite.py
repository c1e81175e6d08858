"""pymetastore's own integration tests (criccomini/pymetastore, tests/integration) against our server (issue 14).

Their code is not part of this project: the test downloads pymetastore's sdist from the package index with pip
(`pip download --no-binary :all:`) into the test cache, unpacks it there once, and runs its integration tests with
pytest inside a virtualenv holding pymetastore and pytest, pointed at our server through the suite's own HMS_HOST /
HMS_PORT variables. All of them must pass, on SQLite and on PostgreSQL; each server gets a database of its own
(the suite creates fixed names).
"""

from __future__ import annotations

import os
import subprocess
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from interop.client_venvs import ClientVenvError, OutsideClient, cache_root, ensure_venv
from interop.our_server import OurServer, OurServerUnavailable, start_our_server
from interop.postgres_db import create_scratch_database, drop_scratch_database

PYMETASTORE_VERSION = "0.4.2"
# The version the project's own tests run with; the suite's tests need nothing newer.
SUITE_CLIENT = OutsideClient(
    "pymetastore-suite", (f"pymetastore=={PYMETASTORE_VERSION}", "pytest==9.2.0"), "(pymetastore's own tests)"
)
#: pymetastore 0.4.2's tests/integration/test_metastore.py holds 13 tests.
EXPECTED_TESTS = 13


def pymetastore_tests(python: Path) -> Path:
    """tests/integration of pymetastore's sdist, downloaded and unpacked once into the test cache."""
    root = cache_root() / "sdists"
    unpacked = root / f"pymetastore-{PYMETASTORE_VERSION}"
    tests = unpacked / "tests" / "integration"
    if (tests / "test_metastore.py").is_file():
        return tests
    root.mkdir(parents=True, exist_ok=True)
    archive = root / f"pymetastore-{PYMETASTORE_VERSION}.tar.gz"
    if not archive.is_file():
        done = subprocess.run(
            [str(python), "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
             "--no-binary", ":all:", f"pymetastore=={PYMETASTORE_VERSION}", "-d", str(root)],
            capture_output=True, text=True, timeout=300,
        )
        if done.returncode != 0 or not archive.is_file():
            pytest.fail(
                f"pip download of pymetastore=={PYMETASTORE_VERSION}'s sdist failed (PyPI must be reachable):\n"
                f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}",
                pytrace=False,
            )
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    if not (tests / "test_metastore.py").is_file():
        pytest.fail(f"pymetastore's sdist {archive} has no tests/integration/test_metastore.py", pytrace=False)
    return tests


def run_suite(python: Path, tests: Path, address: tuple[str, int], report: Path) -> dict[str, str | None]:
    """Run the suite against host:port; each test's name mapped to None (passed) or its failure's first line."""
    host, port = address
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(HMS_HOST=host, HMS_PORT=str(port))
    done = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
         "--rootdir", str(tests), str(tests / "test_metastore.py")],
        capture_output=True, text=True, timeout=600, env=env, cwd=tests,
    )
    if not report.is_file():
        pytest.fail(f"pymetastore's suite wrote no report (exit {done.returncode}):\n{done.stdout[-4000:]}", pytrace=False)
    results: dict[str, str | None] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        problem = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        results[case.get("name", "?")] = (
            None if problem is None else f"{problem.tag}: {(problem.get('message') or '').splitlines()[0:1]}"
        )
    return results


def _serve(workdir: Path, db_url: str) -> OurServer:
    try:
        return start_our_server(workdir, db_url)
    except OurServerUnavailable as exc:
        pytest.fail(f"our server did not start: {exc}", pytrace=False)


@pytest.mark.clients
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.pg)])
def test_pymetastores_own_integration_tests_pass(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    try:
        python = ensure_venv(SUITE_CLIENT)
    except ClientVenvError as exc:
        pytest.fail(str(exc), pytrace=False)
    tests = pymetastore_tests(python)
    scratch = None
    if backend == "postgresql":
        scratch = create_scratch_database(request.getfixturevalue("pg_server"), "mspyms")
        db_url = scratch.url
    else:
        db_url = f"sqlite:///{tmp_path / 'metastore.db'}"
    server = _serve(tmp_path / "server", db_url)
    try:
        results = run_suite(python, tests, server.address, tmp_path / "junit.xml")
    finally:
        server.stop()
        if scratch is not None:
            drop_scratch_database(scratch)
    failed = {name: why for name, why in results.items() if why is not None}
    assert not failed, f"{len(failed)} of pymetastore's {len(results)} tests fail on ours ({backend}):\n" + "\n".join(
        f"  {name}: {why}" for name, why in sorted(failed.items())
    )
    assert len(results) == EXPECTED_TESTS, f"pymetastore's suite ran {sorted(results)}, expected {EXPECTED_TESTS} tests"
