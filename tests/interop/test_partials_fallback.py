"""Against a Hive Metastore, which lacks our extension calls, the metastore-backed PartialStore says so once and
keeps per-file results in its fallback (the local cache): incremental ANALYZE still works, nothing fails."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pytest

from metastore.catalog import Database, FieldSchema, StorageDescriptor, Table
from metastore.client import ThriftMetastoreClient
from metastore.client.file_partials import MetastorePartialStore
from metastore.stats.filecache import FileStatsCache
from metastore.stats.harvest import analyze_files
from metastore.storage import list_files

pytestmark = pytest.mark.reference


def test_a_hive_metastore_without_the_calls_falls_back_to_the_local_cache(
    reference_hms, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    host, port = reference_hms
    db = f"fb_{uuid.uuid4().hex[:8]}"
    data = tmp_path / "t"
    data.mkdir()
    po.write_table(pa.table({"id": np.arange(5000, dtype=np.int64)}), data / "f.orc")
    with ThriftMetastoreClient(f"thrift://{host}:{port}") as client:
        client.create_database(Database(name=db, location_uri=str(tmp_path / "db")))
        client.create_table(Table(db_name=db, table_name="t", sd=StorageDescriptor(
            cols=[FieldSchema("id", "bigint")], location=str(data))))
        with FileStatsCache(tmp_path / "cache.sqlite") as local:
            store = MetastorePartialStore(client, db, "t", fallback=local)
            refs = list_files(str(data))
            with caplog.at_level(logging.WARNING):
                first = analyze_files(refs, ["id"], hive_types={"id": "bigint"}, cache=store, workers=1)
            assert not store.supported and first.files_read == 1
            assert "does not keep per-file results" in caplog.text and "the local cache" in caplog.text
            again = analyze_files(refs, ["id"], hive_types={"id": "bigint"}, cache=store, workers=1)
            assert (again.files_read, again.files_reused) == (0, 1)
            assert again.columns["id"] == first.columns["id"]
            store.retain(refs)  # no call reaches the server any more
        # the connection still serves Hive's calls
        assert client.get_table(db, "t").table_name == "t"
