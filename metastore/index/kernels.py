"""The compiled per-key loops of index builds (metastore/index/_kernels.c, built by ``pip install -e .``).

``native()`` gives the extension module, or None when it is not importable (not built: a checkout used without
installing, or no C compiler at install time); the callers then run their numpy code, which is the reference the
kernels are tested against (same bytes), only slower. That case warns once per process.
"""

from __future__ import annotations

import warnings
from types import ModuleType

try:
    from metastore.index import _kernels as _native

    _missing: str | None = None
except ImportError as exc:  # not built: the numpy code runs instead
    _native = None  # type: ignore[assignment]
    _missing = str(exc)

_warned = False


def native() -> ModuleType | None:
    """The compiled kernels, or None (with a warning the first time) when they are not built."""
    global _warned
    if _native is None and not _warned:
        _warned = True
        warnings.warn(
            f"metastore.index._kernels is not built ({_missing}); index builds use the slower numpy code "
            "(reinstall with `pip install -e .` and a C compiler to build it)", RuntimeWarning, stacklevel=2)
    return _native
