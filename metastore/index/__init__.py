"""metastore.index: split-filtering indexes (BTREE, BLOOM, MINMAX) over ORC stripes, and the split filter.

    from metastore.index import filter_splits, Split, from_json
    result = filter_splits(table, from_json('{"op": "=", "column": "id", "value": {"type": "integer", "value": "42"}}'),
                           [Split("file:/warehouse/t/part-0.orc", 0, 1 << 26)], indexes=client.list_indexes("db", "t"))

Modules: ``predicate`` (the expression tree and its JSON form), ``bind`` (literals to keys, NOT pushed down,
three-valued logic), ``columns`` (types and canonical keys), ``container`` (the checksummed file format),
``btree``/``bloom``/``minmax`` (the structures), ``coverage``/``parts`` (index files), ``scan``/``build``
(building from ORC files), ``filter`` (the split filter), ``select`` (the planner-side reader), ``model`` (the
records the metastore keeps). Importing this package is cheap: the names below load their module on first
use, so the store and the Thrift layers can import ``metastore.index.model`` without numpy or orcio.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "filter_splits": "metastore.index.filter",
    "FilterResult": "metastore.index.model",
    "IndexCount": "metastore.index.model",
    "Split": "metastore.index.model",
    "from_json": "metastore.index.predicate",
    "to_json": "metastore.index.predicate",
    "IndexRecord": "metastore.index.model",
    "IndexPart": "metastore.index.model",
    "DataFile": "metastore.index.model",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'metastore.index' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
