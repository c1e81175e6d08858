"""Optional compiled extensions of ours and their numpy fallbacks: :class:`OptionalExtension`, defined in
metastore.orcio (which imports nothing from the rest of the project and loads its own extensions with it)."""

from __future__ import annotations

from metastore.orcio._optional import OptionalExtension

__all__ = ["OptionalExtension"]
