"""Per-file partials in the metastore database (DATA_FILES, DATA_FILE_PARTIALS), on SQLite and PostgreSQL:
stored per file version, replaced when a file changes, gone with their table or partition, one transaction
per call."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa

from metastore.catalog import Database, FieldSchema, StorageDescriptor, Table
from metastore.errors import InvalidInput, NoSuchObject
from metastore.service.file_partials import FilePartialsService
from metastore.stats.partial_store import FilePartials
from metastore.store import Store
from metastore.store.schema import DATA_FILE_PARTIALS, DATA_FILES

P1, P2 = "ds=2024-01-01/hr=0", "ds=2024-01-02/hr=5"


def _file(path: str, partition: str | None = P1, *, size: int = 100, mtime: int = 7, version: str = "",
          entries: dict[str, bytes] | None = None, rows: int = 10) -> FilePartials:
    return FilePartials(path, size, mtime, version, partition, rows, rows * 8, b'{"v":1}',
                        entries if entries is not None else {"1:bigint|bigint": b"id@" + path.encode()})


def _counts(store: Store) -> tuple[int, int]:
    with store.read() as uow:
        files = uow.connection.execute(sa.select(sa.func.count()).select_from(DATA_FILES)).scalar()
        partials = uow.connection.execute(sa.select(sa.func.count()).select_from(DATA_FILE_PARTIALS)).scalar()
    return int(files or 0), int(partials or 0)


def test_files_round_trip_by_partition_and_path(sales: Store) -> None:
    service = FilePartialsService(sales)
    a, b = _file("s3://b/t/ds=2024-01-01/hr=0/a.orc", version="e1"), _file("/w/t/ds=2024-01-01/hr=0/b.orc")
    c = _file("/w/t/ds=2024-01-02/hr=5/c.orc", P2, entries={"1:bigint|bigint": b"x", "3:string|string": b"\x00\xff"})
    service.put("sales", "orders", [a, b, c])
    assert service.get("sales", "orders") == sorted([a, b, c], key=lambda f: f.path)
    assert service.get("SALES", "Orders", [P2]) == [c]
    assert service.get("sales", "orders", [P1], [a.path]) == [a]
    assert service.get("sales", "orders", paths=[c.path]) == [c]
    assert service.get("sales", "orders", ["ds=2099-01-01/hr=0"]) == []
    assert _counts(sales) == (3, 4)


def test_a_changed_file_is_replaced_whole_and_the_same_version_is_added_to(sales: Store) -> None:
    service = FilePartialsService(sales)
    path = "/w/t/ds=2024-01-01/hr=0/a.orc"
    service.put("sales", "orders", [_file(path, entries={"k1": b"old1", "k2": b"old2"})])
    # the same version: another column's partial is added, a recomputed one replaces its key
    service.put("sales", "orders", [_file(path, entries={"k2": b"new2", "k3": b"new3"}, rows=11)])
    (stored,) = service.get("sales", "orders")
    assert dict(stored.entries) == {"k1": b"old1", "k2": b"new2", "k3": b"new3"} and stored.num_rows == 11
    # rewritten (other mtime, size, version or partition): nothing of the old bytes survives
    for changed in (_file(path, mtime=8, entries={"k9": b"v"}), _file(path, mtime=8, size=101, entries={"k8": b"v"}),
                    _file(path, mtime=8, size=101, version="x", entries={"k7": b"v"}),
                    _file(path, P2, mtime=8, size=101, version="x", entries={"k6": b"v"})):
        service.put("sales", "orders", [changed])
        assert service.get("sales", "orders") == [changed]
    assert _counts(sales) == (1, 1)


def test_partials_go_with_their_partition_and_table(sales: Store) -> None:
    service = FilePartialsService(sales)
    service.put("sales", "orders", [_file("/w/a.orc"), _file("/w/b.orc"), _file("/w/c.orc", P2)])
    with sales.transaction() as uow:
        uow.partitions.drop_by_name("sales", "orders", P1)
    assert [f.path for f in service.get("sales", "orders")] == ["/w/c.orc"]
    with sales.transaction() as uow:
        uow.tables.drop("sales", "orders")
    assert _counts(sales) == (0, 0)


def test_bad_requests_write_nothing(sales: Store) -> None:
    service = FilePartialsService(sales)
    good = _file("/w/good.orc")
    cases = [
        (InvalidInput, "given twice", [good, _file("/w/x.orc"), _file("/w/x.orc")]),
        (InvalidInput, "must not be negative", [good, _file("/w/n.orc", size=-1)]),
        (InvalidInput, "must name its partition", [good, _file("/w/t.orc", None)]),
        (InvalidInput, "empty path", [good, _file("")]),
        (InvalidInput, "longer than 4000", [good, _file("/w/" + "x" * 4000)]),
        (NoSuchObject, "partition ds=2099-01-01/hr=0 of sales.orders does not exist",
         [good, _file("/w/m.orc", "ds=2099-01-01/hr=0")]),
    ]
    for error, message, files in cases:
        with pytest.raises(error, match=message):
            service.put("sales", "orders", files)
    assert _counts(sales) == (0, 0)
    with pytest.raises(NoSuchObject, match="table sales.nope does not exist"):
        service.put("sales", "nope", [good])
    with pytest.raises(NoSuchObject, match="table sales.nope does not exist"):
        service.get("sales", "nope")


def test_unpartitioned_tables_keep_table_level_files(sales: Store) -> None:
    service = FilePartialsService(sales)
    with sales.transaction() as uow:
        uow.tables.create(Table(db_name="sales", table_name="flat", sd=StorageDescriptor(
            cols=[FieldSchema("id", "bigint")], location="/warehouse/sales.db/flat")))
    flat = _file("/w/flat/a.orc", None)
    service.put("sales", "flat", [flat])
    assert service.get("sales", "flat") == [flat]
    with pytest.raises(InvalidInput, match="sales.flat is not partitioned"):
        service.put("sales", "flat", [_file("/w/flat/b.orc", P1)])


def test_delete_by_path_partition_or_all(sales: Store) -> None:
    service = FilePartialsService(sales)
    files = [_file("/w/a.orc"), _file("/w/b.orc"), _file("/w/c.orc", P2), _file("/w/d.orc", P2)]
    service.put("sales", "orders", files)
    assert service.delete("sales", "orders", paths=["/w/a.orc", "/w/zzz.orc"]) == 1
    assert service.delete("sales", "orders", [P1], ["/w/c.orc"]) == 0  # c is of P2
    assert service.delete("sales", "orders", [P2]) == 2
    assert [f.path for f in service.get("sales", "orders")] == ["/w/b.orc"]
    assert service.delete("sales", "orders") == 1
    assert _counts(sales) == (0, 0)


def test_concurrent_writers_of_two_versions_never_mix_them(sales: Store) -> None:
    """Two hosts storing the same file as they each saw it: whichever wins, every stored partial is of the
    stored version."""
    path = "/w/t/ds=2024-01-01/hr=0/raced.orc"
    errors: list[BaseException] = []

    def writer(mtime: int) -> None:
        service = FilePartialsService(sales)
        try:
            for _ in range(15):
                service.put("sales", "orders", [
                    _file(path, mtime=mtime, entries={f"k{i}": f"m{mtime}".encode() for i in range(4)})
                ])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(m,)) for m in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    (stored,) = FilePartialsService(sales).get("sales", "orders")
    assert set(stored.entries.values()) == {f"m{stored.mtime_ns}".encode()} and len(stored.entries) == 4


def test_create_database_for_isolation(store: Store) -> None:
    """A table in another database with the same file path keeps its own rows."""
    with store.transaction() as uow:
        for db in ("d1", "d2"):
            uow.databases.create(Database(name=db, location_uri=f"/warehouse/{db}.db"))
            uow.tables.create(Table(db_name=db, table_name="t", sd=StorageDescriptor(
                cols=[FieldSchema("id", "bigint")], location=f"/warehouse/{db}.db/t")))
    service = FilePartialsService(store)
    service.put("d1", "t", [_file("/shared/a.orc", None, entries={"k": b"d1"})])
    service.put("d2", "t", [_file("/shared/a.orc", None, mtime=9, entries={"k": b"d2"})])
    assert service.get("d1", "t")[0].entries == {"k": b"d1"}
    assert service.get("d2", "t")[0].entries == {"k": b"d2"}
