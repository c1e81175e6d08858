"""The catalog's directory work (Hive's warehouse work) on an object store: a real S3 server (moto_server).

A managed table's data moves with a renamed partition or table and goes with a dropped one, on s3a:// as on
local disk; nothing is skipped because the location is not local.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import fsspec
import pytest

from metastore.catalog import Database, FieldSchema, Partition, StorageDescriptor, Table
from metastore.errors import InvalidOperation
from metastore.service.catalog import CatalogService
from metastore.store import Store, migrate


@pytest.fixture
def catalog(tmp_path: Path) -> CatalogService:
    url = f"sqlite:///{tmp_path / 'metastore.db'}"
    migrate.upgrade(url)
    store = Store(url)
    store.ensure_default_database(str(tmp_path / "warehouse"))
    return CatalogService(store, str(tmp_path / "warehouse"))


def _keys(fs: fsspec.AbstractFileSystem, bucket: str) -> list[str]:
    fs.invalidate_cache()
    return sorted(p.removeprefix(f"{bucket}/") for p in fs.find(bucket))


def test_managed_data_on_s3_moves_and_goes_with_the_catalog(catalog: CatalogService, s3_bucket: str) -> None:
    fs = fsspec.filesystem("s3", skip_instance_cache=True)
    root = f"s3a://{s3_bucket}/warehouse/s.db"
    catalog.create_database(Database(name="s", location_uri=root))
    sd = StorageDescriptor(cols=[FieldSchema("a", "string")])
    catalog.create_table(Table(db_name="s", table_name="t", sd=sd, partition_keys=[FieldSchema("p", "string")]))
    catalog.add_partitions("s", "t", [Partition(db_name="s", table_name="t", values=["1"])])
    assert _keys(fs, s3_bucket) == [], "making a directory on an object store writes nothing"
    fs.pipe_file(f"{s3_bucket}/warehouse/s.db/t/p=1/f.orc", b"data")

    renamed = replace(catalog.get_partition("s", "t", ["1"]), values=["2"])
    catalog.rename_partition("s", "t", ["1"], renamed)
    assert catalog.get_partition("s", "t", ["2"]).sd.location == f"{root}/t/p=2"
    assert _keys(fs, s3_bucket) == ["warehouse/s.db/t/p=2/f.orc"]

    # A target that holds data already: nothing changes, as in Hive.
    fs.pipe_file(f"{s3_bucket}/warehouse/s.db/t/p=3/g.orc", b"other")
    with pytest.raises(InvalidOperation, match="already exists"):
        catalog.rename_partition("s", "t", ["2"], replace(renamed, values=["3"]))
    assert catalog.get_partition("s", "t", ["2"]).sd.location == f"{root}/t/p=2"

    table = catalog.get_table("s", "t")
    catalog.alter_table("s", "t", replace(table, table_name="u"))
    assert catalog.get_table("s", "u").sd.location == f"{root}/u"
    assert _keys(fs, s3_bucket) == ["warehouse/s.db/u/p=2/f.orc", "warehouse/s.db/u/p=3/g.orc"]

    catalog.drop_table("s", "u", delete_data=True)
    assert _keys(fs, s3_bucket) == []
