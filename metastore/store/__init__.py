"""SQL persistence of the metastore: Hive-named tables (schema.py), Alembic migrations (migrate.py) and one
repository per kind of object, used through Store.transaction()."""

from metastore.store.store import Store, UnitOfWork

__all__ = ["Store", "UnitOfWork"]
