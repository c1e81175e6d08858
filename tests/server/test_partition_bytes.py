"""Partition listings encoded from rows (metastore.wire.partition_bytes, metastore.store.partition_listing) are
byte-identical to the object path (PartitionRepository's Partition objects → wire.catalog.partition_to_thrift →
the generated encoder), on SQLite and PostgreSQL, for random tables: column types and comments (None too),
parameters, SerDe and storage descriptor parameters, skewed info, bucketing and sort columns, unset columns,
partitions with their own columns, a partition without a storage descriptor, unicode everywhere; for the whole
table, real filters, partial values, names, max_parts limits and pages of any size; with and without catName."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
import sqlalchemy as sa

from metastore.api.hive_metastore import ttypes as tt
from metastore.catalog import (
    Database,
    FieldSchema,
    Order,
    Partition,
    SerDeInfo,
    SkewedInfo,
    StorageDescriptor,
    Table,
)
from metastore.service import CatalogService
from metastore.store import Store, migrate
from metastore.store.partition_listing import RowPage
from metastore.store.schema import PARTITIONS
from metastore.wire.catalog import partitions_to_thrift
from metastore.wire.encoded import encode_struct
from metastore.wire.partition_bytes import PartitionEncoder, encode_partitions
from server.handler_support import handler_over, reply_bytes

TYPES = ["bigint", "int", "string", "double", "decimal(12,2)", "date", "timestamp", "boolean", "varchar(20)",
         "array<string>", "map<string,int>", "struct<a:int,b:string>"]
WORDS = ["a", "b", "x1", "ü", "日本", "naïve", "key.with.dots", "space here", "emoji😀", "zz", "A", "10"]


@pytest.fixture
def store(db_url: str):
    migrate.upgrade(db_url)
    st = Store(db_url)
    st.ensure_default_database("/tmp/warehouse")
    yield st
    st.dispose()


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 3)))


def _params(rng: random.Random, most: int = 5) -> dict[str, str]:
    return {_word(rng) + str(i): _word(rng) for i in range(rng.randrange(0, most + 1))}


def _cols(rng: random.Random, n: int) -> list[FieldSchema]:
    return [
        FieldSchema(f"c{i}_{rng.choice(['x', 'y'])}", rng.choice(TYPES), rng.choice([None, "", _word(rng)]))
        for i in range(n)
    ]


def _sd(rng: random.Random, table_cols: list[FieldSchema], i: int) -> StorageDescriptor:
    kind = rng.randrange(6)
    skewed = None
    if rng.random() < 0.3:
        names = ["c0_x", "c1_y"][: rng.randrange(1, 3)]
        values = [[_word(rng) for _ in names] for _ in range(rng.randrange(0, 3))]
        skewed = SkewedInfo(
            skewed_col_names=names, skewed_col_values=values,
            skewed_col_value_location_maps={tuple(v): f"/loc/{_word(rng)}" for v in values},
        )
    return StorageDescriptor(
        cols=table_cols if kind < 3 else ([] if kind == 3 else _cols(rng, rng.randrange(1, 6))),
        cols_unset=kind == 3 and rng.random() < 0.7,
        location=None if rng.random() < 0.1 else f"/tmp/warehouse/t/p{i}/{_word(rng)}",
        input_format=rng.choice([None, "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"]),
        output_format=rng.choice([None, "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat", "ü"]),
        compressed=rng.random() < 0.3,
        num_buckets=rng.choice([-1, 0, 4, 32]),
        serde_info=SerDeInfo(
            name=rng.choice([None, "", "serde", "日本"]),
            serialization_lib=rng.choice([None, "org.apache.hadoop.hive.ql.io.orc.OrcSerde"]),
            parameters=rng.choice([{}, {"serialization.format": "1"}, _params(rng, 3)]),
        ),
        bucket_cols=rng.choice([[], ["c0_x"], ["c1_y", "c0_x"]]),
        sort_cols=rng.choice([[], [Order("c0_x", 1)], [Order("c1_y", 0), Order("c0_x", 1)]]),
        parameters=rng.choice([{}, {}, _params(rng, 3)]),
        skewed_info=skewed,
        stored_as_sub_directories=rng.random() < 0.2,
    )


def _make_table(store: Store, rng: random.Random, name: str, n: int) -> list[Partition]:
    catalog = CatalogService(store, "/tmp/warehouse")
    cols = _cols(rng, rng.randrange(1, 12))
    catalog.create_table(
        Table(db_name="lst", table_name=name, sd=StorageDescriptor(cols=cols, location=f"/tmp/warehouse/lst.db/{name}"),
              partition_keys=[FieldSchema("ds", "string"), FieldSchema("hr", "int")])
    )
    parts = []
    seen = set()
    while len(parts) < n:
        values = [_word(rng) + rng.choice(["", "-01", "é"]), str(rng.randrange(0, 30))]
        if tuple(values) in seen:
            continue
        seen.add(tuple(values))
        parts.append(Partition(
            db_name="lst", table_name=name, values=values, create_time=rng.randrange(0, 2**31 - 1),
            last_access_time=rng.choice([0, rng.randrange(0, 2**31 - 1)]), sd=_sd(rng, cols, len(parts)),
            parameters=_params(rng), write_id=rng.choice([-1, 0, rng.randrange(0, 2**40)]),
        ))
    with store.transaction() as uow:
        uow.partitions.add(parts)
    return parts


def _old(parts: Sequence[Partition], catalog: bool) -> bytes:
    values = partitions_to_thrift(parts)
    if not catalog:
        for v in values:
            v.catName = None
    return b"".join(encode_struct(v) for v in values)


def _new(pages: Sequence[RowPage], catalog: bool) -> bytes:
    out = []
    encoder = None
    for page in pages:
        if encoder is None:
            encoder = PartitionEncoder(page.db_name, page.table_name, page.catalog if catalog else None, dict(page.columns))
        else:
            encoder.columns.update(page.columns)
        out.append(encoder.encode(page.rows))
    return b"".join(out)


def _check(old: Sequence[Partition], count: int, pages: Sequence[RowPage], what: object) -> None:
    assert count == len(old) == sum(len(p) for p in pages), what
    for catalog in (True, False):
        want = _old(old, catalog)
        got = _new(pages, catalog)
        assert got == want, (what, catalog)
        # and each decodes to the Thrift values of the object path
        assert encode_partitions(old, catalog=catalog) == want, what


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rows_encode_to_the_object_paths_bytes(store: Store, seed: int) -> None:
    rng = random.Random(seed)
    CatalogService(store, "/tmp/warehouse").create_database(Database(name="lst", location_uri="/tmp/warehouse/lst.db"))
    parts = _make_table(store, rng, "t", 70)
    _make_table(store, rng, "other", 5)  # another table's partitions never appear
    # A partition whose storage descriptor is gone (SD_ID NULL), as Hive's schema allows.
    with store.transaction() as uow:
        name = uow.partitions.list_names("lst", "t")[rng.randrange(len(parts))]
        uow.connection.execute(sa.update(PARTITIONS).where(PARTITIONS.c.PART_NAME == name).values(SD_ID=None))
    filters = ["ds >= \"\"", "hr > 10", "ds like 'a%'", "hr = 3 or hr = 4", "ds = 'nothing'"]
    with store.snapshot() as uow:
        repo = uow.partitions
        names = repo.list_names("lst", "t")
        assert len(names) == 70
        for text in filters:
            for max_parts in (-1, 0, 1, 13, 1000):
                old = repo.list_by_filter("lst", "t", text, max_parts=max_parts)
                for page in (1, 7, 2000):
                    count, pages = repo.stream_rows_by_filter("lst", "t", text, max_parts=max_parts, page=page)
                    _check(old, count, list(pages), (text, max_parts, page))
        for max_parts in (-1, 5):
            old = repo.list("lst", "t", max_parts=max_parts)
            count, pages = repo.stream_rows("lst", "t", max_parts=max_parts, page=9)
            _check(old, count, list(pages), ("list", max_parts))
        some = repo.list_names("lst", "t")[:3]
        for values in ([], [repo.get_by_name("lst", "t", some[0]).values[0]], ["", "3"]):
            old = repo.list_by_partial_values("lst", "t", values)
            count, pages = repo.stream_rows_by_partial_values("lst", "t", values, page=4)
            _check(old, count, list(pages), ("ps", values))
        asked = rng.sample(names, 20) + ["ds=nothere/hr=1", "bad"]
        old = repo.get_by_names("lst", "t", asked)
        page = repo.rows_by_names("lst", "t", asked)
        _check(old, len(old), [page], "names")
        assert len(old) == 20


def test_the_server_sends_the_object_paths_partitions(store: Store) -> None:
    """Through the handler and the processor's writing of the streamed reply, decoded by the generated client
    code: the partitions equal the object path's."""

    from thrift.protocol.TBinaryProtocol import TBinaryProtocol
    from thrift.transport.TTransport import TMemoryBuffer

    from metastore.api.hive_metastore import ThriftHiveMetastore as gen  # noqa: N813

    rng = random.Random(9)
    CatalogService(store, "/tmp/warehouse").create_database(Database(name="lst", location_uri="/tmp/warehouse/lst.db"))
    _make_table(store, rng, "t", 30)
    handler = handler_over(store)
    with store.read() as uow:
        want = partitions_to_thrift(uow.partitions.list("lst", "t"))
        some = uow.partitions.list_names("lst", "t")[5:9]
    calls = {
        "get_partitions_by_filter": (handler.get_partitions_by_filter("lst", "t", "ds >= \"\"", -1), want),
        "get_partitions": (handler.get_partitions("lst", "t", -1), want),
        "get_partitions_ps": (handler.get_partitions_ps("lst", "t", [], 7), want[:7]),
        "get_partitions_by_names": (handler.get_partitions_by_names("lst", "t", some), want[5:9]),
    }
    for name, (reply, expected) in calls.items():
        buf = TMemoryBuffer()
        reply.write(TBinaryProtocol(buf))
        result = getattr(gen, f"{name}_result")()
        result.read(TBinaryProtocol(TMemoryBuffer(buf.getvalue())))
        assert result.success == expected, name
        assert all(isinstance(p, tt.Partition) and p.catName == "hive" for p in result.success)
    buf = TMemoryBuffer()
    handler.get_partition_names("lst", "t", -1).write(TBinaryProtocol(buf))
    names = gen.get_partition_names_result()
    names.read(TBinaryProtocol(TMemoryBuffer(buf.getvalue())))
    with store.read() as uow:
        assert names.success == uow.partitions.list_names("lst", "t")


def test_name_pages_encode_to_the_names(store: Store) -> None:
    """get_partition_names' pages are the names list_names returns, in order, for any page size and max_parts;
    the reply on the wire (encoded at the edge, handler.get_partition_names, with the listing cache on and off,
    its cached reply too) is byte for byte the generated encoder's reply of those names."""

    from thrift.protocol.TBinaryProtocol import TBinaryProtocol
    from thrift.transport.TTransport import TMemoryBuffer

    from metastore.api.hive_metastore import ThriftHiveMetastore as gen  # noqa: N813
    from metastore.service.listing_cache import ListingCache

    rng = random.Random(4)
    CatalogService(store, "/tmp/warehouse").create_database(Database(name="lst", location_uri="/tmp/warehouse/lst.db"))
    _make_table(store, rng, "t", 40)
    cache = ListingCache(1 << 20)
    handlers = [handler_over(store, c) for c in (None, cache)]
    for max_parts in (-1, 0, 1, 7, 40, 41, 1000):
        with store.snapshot() as uow:
            repo = uow.partitions
            names = repo.list_names("lst", "t", max_parts=max_parts)
            assert len(names) == (40 if max_parts < 0 else min(40, max_parts))
            for page in (1, 3, 40, 20000):
                count, pages = repo.stream_names("lst", "t", max_parts=max_parts, page=page)
                got = list(pages)
                assert count == sum(len(p) for p in got) == len(names), (max_parts, page)
                assert all(len(p) > 0 for p in got)
                assert [n for p in got for n in p.names] == names, (max_parts, page)
        buf = TMemoryBuffer()
        gen.get_partition_names_result(success=names).write(TBinaryProtocol(buf))
        want = buf.getvalue()  # the result struct: field 0 (success), the list, the stop
        for handler in handlers:
            for _ in range(2):  # with the cache: filled, then served from it
                assert reply_bytes(handler.get_partition_names("lst", "t", max_parts)) == want, max_parts
    if store.engine.dialect.name == "postgresql":
        assert cache.hits == 7 and len(cache) == 7
    else:
        assert cache.hits == 0 and len(cache) == 0
