"""Optional compiled extensions (C code of our own, built by ``pip install -e .``) and their numpy fallbacks.

Each extension speeds up per-item loops whose numpy code stays the reference it is tested against (same
bytes). When one is not importable (a checkout used without installing it, no C compiler at install time) the
numpy code runs instead, and the first use in a process warns once. This is orcio's own loader, for its
Murmur3 and integer decoding extensions: orcio imports nothing from the rest of the project, which has its own
(:mod:`metastore.compiled`) for the index kernels and the HyperLogLog registers.
"""

from __future__ import annotations

import importlib
import warnings
from types import ModuleType

__all__ = ["OptionalExtension"]


class OptionalExtension:
    """The extension module ``name`` if it imports (``module``), else None and why (``missing``)."""

    def __init__(self, name: str, fallback: str) -> None:
        self.name = name
        self.fallback = fallback  # what runs instead, for the warning: "index builds use the slower numpy code"
        self.missing: str | None = None
        self.module: ModuleType | None
        try:
            self.module = importlib.import_module(name)
        except ImportError as exc:
            self.module = None
            self.missing = str(exc)
        self._warned = False

    def get(self) -> ModuleType | None:
        """The module, or None (with a RuntimeWarning the first time in a process) when it is not built."""
        if self.module is None and not self._warned:
            self._warned = True
            warnings.warn(
                f"{self.name} is not built ({self.missing}); {self.fallback} (reinstall with `pip install -e .` "
                "and a C compiler to build it)", RuntimeWarning, stacklevel=3)
        return self.module
