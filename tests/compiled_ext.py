"""Tests of our optional compiled extensions (built by `pip install -e .`): whether one is built."""

from __future__ import annotations

import os
from types import ModuleType

import pytest


def built_or_skip(module: ModuleType | None, name: str, missing: str | None) -> pytest.MarkDecorator:
    """A marker skipping the tests that compare an extension with its numpy reference when it is not built; under
    CI an unbuilt extension fails the test module instead (the install must have built it)."""
    if module is None and os.environ.get("CI"):
        pytest.fail(f"{name} is not built under CI ({missing})", pytrace=False)
    return pytest.mark.skipif(module is None, reason=f"{name} not built (pip install -e .)")
