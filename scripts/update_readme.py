"""Rewrite the README's list of intentional differences from tests/interop/intentional_differences.py."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START = "<!-- intentional-differences: generated from tests/interop/intentional_differences.py; a test keeps it in sync -->"
END = "<!-- /intentional-differences -->"


def rendered_readme(readme: str) -> str:
    """The README text with the generated block replaced by the current list."""
    sys.path.insert(0, str(ROOT))
    from tests.interop.intentional_differences import as_markdown

    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    if not pattern.search(readme):
        raise SystemExit("README.md has no intentional-differences block")
    return pattern.sub(lambda _m: f"{START}\n{as_markdown()}\n{END}", readme)


if __name__ == "__main__":
    path = ROOT / "README.md"
    path.write_text(rendered_readme(path.read_text()))
