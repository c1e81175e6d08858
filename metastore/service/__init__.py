"""The metastore's domain API: catalog and statistics operations, one transaction per call.

The Thrift handler is a thin adapter over it; the embedded SQL shell uses it directly.
"""

from __future__ import annotations

from dataclasses import dataclass

from metastore.config import Settings
from metastore.service.catalog import CatalogService
from metastore.service.statistics import AggregateResult, StatisticsService, StatsWrite
from metastore.store import Store

__all__ = ["AggregateResult", "CatalogService", "Metastore", "StatisticsService", "StatsWrite"]


@dataclass
class Metastore:
    """Everything a request may do, over one store."""

    store: Store
    catalog: CatalogService
    stats: StatisticsService

    @classmethod
    def open(cls, settings: Settings, *, auto_upgrade: bool = False) -> Metastore:
        """Open the store of `settings.db` (checking its schema) and build the services over it."""
        store = Store.open(settings.db, auto_upgrade=auto_upgrade)
        return cls(
            store=store,
            catalog=CatalogService(store, settings.warehouse),
            stats=StatisticsService(store, fetch_bitvector=settings.fetch_bitvector, fetch_kll=settings.fetch_kll),
        )

    def close(self) -> None:
        self.store.dispose()
