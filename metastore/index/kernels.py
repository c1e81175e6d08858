"""The compiled per-key loops of index builds (metastore/index/_kernels.c, built by ``pip install -e .``).

``native()`` gives the extension module, or None when it is not importable (not built: a checkout used without
installing, or no C compiler at install time); the callers then run their numpy code, which is the reference the
kernels are tested against (same bytes), only slower. That case warns once per process.
"""

from __future__ import annotations

from types import ModuleType

from metastore.compiled import OptionalExtension

_EXTENSION = OptionalExtension("metastore.index._kernels", "index builds use the slower numpy code")
_native = _EXTENSION.module
_missing = _EXTENSION.missing


def native() -> ModuleType | None:
    """The compiled kernels, or None (with a warning the first time) when they are not built."""
    return _EXTENSION.get()
