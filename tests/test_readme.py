"""The README's promises: its commands exist and its list of differences from Hive is current."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load_updater():
    spec = importlib.util.spec_from_file_location("update_readme", ROOT / "scripts" / "update_readme.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_intentional_differences_in_readme_are_current() -> None:
    readme = (ROOT / "README.md").read_text()
    assert _load_updater().rendered_readme(readme) == readme, "run: python scripts/update_readme.py"


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"```sh\n(.*?)\n```", readme, re.S)
    test_command = next(c for c in commands if "pytest" in c)
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_command in ci
