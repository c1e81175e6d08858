"""Outside Hive Metastore clients, each in its own cached virtualenv, and a runner for their scenario scripts.

The three clients pin conflicting versions of `thrift` (hive-metastore-client wants 0.13, the others float), so
each gets a virtualenv of its own under the cache folder, named by the client and a hash of its requirements, and
reused while the hash matches. A scenario script runs in that virtualenv as a subprocess and prints one JSON
document on stdout.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SCENARIO_DIR = Path(__file__).resolve().parent / "scenarios"


@dataclass(frozen=True)
class OutsideClient:
    """An outside client: its name, the pip requirements of its virtualenv and its scenario script."""

    name: str
    requirements: tuple[str, ...]
    scenario: str

    @property
    def scenario_path(self) -> Path:
        return SCENARIO_DIR / self.scenario


CLIENTS: dict[str, OutsideClient] = {
    c.name: c
    for c in (
        OutsideClient("pymetastore", ("pymetastore==0.4.2",), "pymetastore_scenario.py"),
        OutsideClient("hmsclient", ("hmsclient==0.1.1",), "hmsclient_scenario.py"),
        OutsideClient(
            "hive-metastore-client", ("hive-metastore-client==1.0.9",), "hive_metastore_client_scenario.py"
        ),
    )
}


class ClientVenvError(RuntimeError):
    """A client's virtualenv could not be built, or its scenario did not produce a JSON result."""


def cache_root() -> Path:
    """METASTORE_TEST_CACHE, else ~/.cache/metastore-tests."""
    env = os.environ.get("METASTORE_TEST_CACHE")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "metastore-tests"


def base_python() -> str:
    """The interpreter that builds the client virtualenvs (the one running the tests)."""
    return sys.executable


def requirements_hash(client: OutsideClient, python: str) -> str:
    """Names a virtualenv by what went into it: the requirements and the Python version building it."""
    version = subprocess.run(
        [python, "-c", "import sys; print(sys.version)"], capture_output=True, text=True, check=True
    ).stdout.strip()
    digest = hashlib.sha256("\n".join((*client.requirements, version)).encode()).hexdigest()
    return digest[:12]


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def ensure_venv(client: OutsideClient, python: str | None = None) -> Path:
    """The client's virtualenv, built once and reused; returns its python. Safe against parallel builders."""
    python = python or base_python()
    root = cache_root() / "venvs"
    root.mkdir(parents=True, exist_ok=True)
    venv = root / f"{client.name}-{requirements_hash(client, python)}"
    done = venv / ".complete"
    if done.exists():
        return venv_python(venv)
    with open(root / f"{client.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return venv_python(venv)
        if venv.exists():
            shutil.rmtree(venv)  # a half-built leftover of an interrupted run
        _run_checked([python, "-m", "venv", str(venv)], f"creating the virtualenv for {client.name}")
        _run_checked(
            [
                str(venv_python(venv)),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                *client.requirements,
            ],
            f"pip install {' '.join(client.requirements)} (PyPI must be reachable)",
        )
        done.write_text("\n".join(client.requirements) + "\n")
    return venv_python(venv)


def _run_checked(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ClientVenvError(
            f"{what} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )


def run_scenario(
    client: OutsideClient, host: str, port: int, timeout: float = 300.0, prefix: str = "interop"
) -> dict:
    """Run the client's scenario against host:port in its virtualenv; return the JSON it printed."""
    return run_in_venv(
        client,
        client.scenario_path,
        ["--host", host, "--port", str(port), "--prefix", prefix],
        timeout=timeout,
    )


def run_in_venv(client: OutsideClient, script: Path, args: list[str], timeout: float = 300.0) -> dict:
    """Run a script of tests/interop/scenarios in the client's virtualenv; return the JSON it printed."""
    python = ensure_venv(client)
    cmd = [str(python), str(script), *args]
    # PYTHONPATH is cleared so the script sees only its own virtualenv (and the shared scenario helpers).
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=SCENARIO_DIR)
    except subprocess.TimeoutExpired as exc:
        raise ClientVenvError(
            f"{client.name}: {script.name} did not finish in {timeout:.0f} s; stderr:\n{exc.stderr}"
        ) from exc
    if proc.returncode != 0:
        raise ClientVenvError(
            f"{client.name}: {script.name} {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-6000:]}"
        )
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise ClientVenvError(
            f"{client.name}: {script.name} printed no JSON ({exc}); stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
        ) from exc
