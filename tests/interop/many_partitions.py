"""Tables of many partitions with statistics on our server and on the reference Hive Metastore 2.3.10 (PostgreSQL),
filled the same way, and the comparison of both servers' statistics answers over them: shared by
bench/bench_scale.py and tests/interop/test_differential_scale.py.

Ours is filled through Thrift (add_partitions and set_aggr_stats_for, 1,000 partitions a call). The reference is
filled through Thrift for partition 0 only; partitions 1..N-1 are copied from it by SQL in Hive's own schema (the
fixture only: filling the reference through Thrift takes it ~18 minutes for 20,000 × 20), with the values
bench_hms.column_statistics gives partition i (salt i), and Hive's schema-script index PCS_STATS_IDX, which
schematool creates and DataNucleus' autoCreateAll does not.
"""

from __future__ import annotations

from typing import Any

DB = "bench_db"
TABLE = "stats_wide"
BATCH = 1_000  # partitions a write call
LAST_ANALYZED = 1_700_000_000


def column_names(columns: int) -> list[str]:
    return [f"c{i:02d}" for i in range(columns)]


def column_statistics(T: Any, cols: list[str], part_name: str | None, salt: int = 0) -> Any:
    """Statistics of `cols` for a partition (or the table): column i low -i-salt, high 1000(i+1)+salt,
    i % 7 nulls, 100+i distinct values (as bench_hms.column_statistics and HmsLoad.java)."""
    desc = T.ColumnStatisticsDesc(isTblLevel=part_name is None, dbName=DB, tableName=TABLE, partName=part_name,
                                  lastAnalyzed=LAST_ANALYZED)
    objs = [
        T.ColumnStatisticsObj(colName=c, colType="bigint", statsData=T.ColumnStatisticsData(
            longStats=T.LongColumnStatsData(lowValue=-i - salt, highValue=1000 * (i + 1) + salt, numNulls=i % 7,
                                            numDVs=100 + i)))
        for i, c in enumerate(cols)
    ]
    return T.ColumnStatistics(statsDesc=desc, statsObj=objs)


def partition_name(i: int) -> str:
    return f"ds=p{i:04d}"  # as bench_hms.Shape and HmsLoad.java


def create_table(client: Any, T: Any, columns: int) -> Any:
    client.create_database(T.Database(name=DB, description="benchmark", parameters={}))
    cols = [T.FieldSchema(name=c, type="bigint") for c in column_names(columns)]
    client.create_table(
        T.Table(
            tableName=TABLE, dbName=DB, owner="bench", sd=storage(T, cols, None),
            partitionKeys=[T.FieldSchema(name="ds", type="string")], parameters={}, tableType="MANAGED_TABLE",
            createTime=0, lastAccessTime=0, retention=0,
        )
    )
    client.update_table_column_statistics(column_statistics(T, column_names(columns), None))
    return client.get_table(DB, TABLE)


def storage(T: Any, cols: list[Any], location: str | None) -> Any:
    return T.StorageDescriptor(
        cols=cols, location=location, inputFormat="org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat", compressed=False, numBuckets=-1,
        serdeInfo=T.SerDeInfo(serializationLib="org.apache.hadoop.hive.ql.io.orc.OrcSerde", parameters={}),
        bucketCols=[], sortCols=[], parameters={},
    )


def add_partitions(client: Any, T: Any, table: Any, columns: int, start: int, stop: int) -> None:
    """Partitions [start, stop) with statistics for every column (partition i: salt i), BATCH a call."""
    names_of_columns = column_names(columns)
    cols = [T.FieldSchema(name=c, type="bigint") for c in names_of_columns]
    for lo in range(start, stop, BATCH):
        hi = min(stop, lo + BATCH)
        names = [partition_name(i) for i in range(lo, hi)]
        client.add_partitions([
            T.Partition(values=[n.split("=", 1)[1]], dbName=DB, tableName=TABLE,
                        sd=storage(T, cols, f"{table.sd.location}/{n}"), parameters={})
            for n in names
        ])
        batch = [column_statistics(T, names_of_columns, n, salt=lo + j) for j, n in enumerate(names)]
        client.set_aggr_stats_for(T.SetPartitionsStatsRequest(colStats=batch, needMerge=False))


def pg_execute(url: str, statements: list[str], params: dict | None = None) -> list[Any]:
    import sqlalchemy as sa

    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    out = []
    try:
        with engine.connect() as conn:
            for s in statements:
                r = conn.execute(sa.text(s), params or {})
                out.append(r.fetchall() if r.returns_rows else None)
    finally:
        engine.dispose()
    return out


def set_autovacuum(url: str, enabled: bool) -> None:
    """Autovacuum (and so auto-analyze) on or off (RESET) for every table of the database."""
    tables = pg_execute(url, ["SELECT tablename FROM pg_tables WHERE schemaname = 'public'"])[0]
    action = "RESET (autovacuum_enabled)" if enabled else "SET (autovacuum_enabled = false)"
    pg_execute(url, [f'ALTER TABLE "{t}" {action}' for (t,) in tables])


def analyze_state(url: str) -> str:
    rows = pg_execute(url, [
        "SELECT relname, n_live_tup, n_mod_since_analyze, last_analyze IS NOT NULL, last_autoanalyze IS NOT NULL"
        " FROM pg_stat_user_tables WHERE relname IN ('PARTITIONS', 'PART_COL_STATS') ORDER BY relname"
    ])[0]
    return "; ".join(
        f"{r[0]}: {r[1]} live rows, {r[2]} modified since analyze, analyzed {'yes' if r[3] else 'no'},"
        f" auto-analyzed {'yes' if r[4] else 'no'}" for r in rows
    )


def fill_reference_sql(url: str, partitions: int, columns: int) -> None:
    """Copy partition 0 (made through Thrift, with its statistics) to partitions 1..N-1 in Hive's schema."""
    n = partitions
    if n <= 1:
        return
    seq = "org.apache.hadoop.hive.metastore.model."
    part_id, sd_id, serde_id = pg_execute(url, [
        'SELECT p."PART_ID", p."SD_ID", s."SERDE_ID" FROM "PARTITIONS" p JOIN "SDS" s'
        ' ON s."SD_ID" = p."SD_ID" WHERE p."PART_NAME" = \'ds=p0000\''
    ])[0][0]

    def base(model: str, table: str, idcol: str) -> int:
        nxt, mx = pg_execute(url, [
            f'SELECT (SELECT "NEXT_VAL" FROM "SEQUENCE_TABLE" WHERE "SEQUENCE_NAME" = :s),'
            f' (SELECT max("{idcol}") FROM "{table}")'
        ], {"s": seq + model})[0][0]
        # Far past any block of ids the server may hold in memory.
        return max(nxt or 0, mx or 0) + 100_000

    pb = base("MPartition", "PARTITIONS", "PART_ID")
    sb = base("MStorageDescriptor", "SDS", "SD_ID")
    rb = base("MSerDeInfo", "SERDES", "SERDE_ID")
    cb = base("MPartitionColumnStatistics", "PART_COL_STATS", "CS_ID")
    ncols = columns
    name = "(CASE WHEN i < 10000 THEN lpad(i::text, 4, '0') ELSE i::text END)"
    gs = f"generate_series(1, {n - 1}) AS g(i)"
    pcs_cols = [
        "AVG_COL_LEN", "COLUMN_NAME", "COLUMN_TYPE", "DB_NAME", "BIG_DECIMAL_HIGH_VALUE", "BIG_DECIMAL_LOW_VALUE",
        "DOUBLE_HIGH_VALUE", "DOUBLE_LOW_VALUE", "LAST_ANALYZED", "MAX_COL_LEN", "NUM_DISTINCTS", "NUM_FALSES",
        "NUM_NULLS", "NUM_TRUES", "TABLE_NAME",
    ]
    copied = ", ".join(f't."{c}"' for c in pcs_cols)
    pg_execute(url, [
        "BEGIN",
        f'INSERT INTO "SERDES" ("SERDE_ID", "NAME", "SLIB") SELECT {rb} + i, "NAME", "SLIB" FROM "SERDES", {gs}'
        f' WHERE "SERDE_ID" = {serde_id}',
        f'INSERT INTO "SDS" ("SD_ID", "CD_ID", "INPUT_FORMAT", "IS_COMPRESSED", "IS_STOREDASSUBDIRECTORIES",'
        f' "LOCATION", "NUM_BUCKETS", "OUTPUT_FORMAT", "SERDE_ID") SELECT {sb} + i, "CD_ID", "INPUT_FORMAT",'
        f' "IS_COMPRESSED", "IS_STOREDASSUBDIRECTORIES", regexp_replace("LOCATION", \'ds=p0000$\', \'ds=p\' || {name}),'
        f' "NUM_BUCKETS", "OUTPUT_FORMAT", {rb} + i FROM "SDS", {gs} WHERE "SD_ID" = {sd_id}',
        f'INSERT INTO "PARTITIONS" ("PART_ID", "CREATE_TIME", "LAST_ACCESS_TIME", "PART_NAME", "SD_ID", "TBL_ID")'
        f' SELECT {pb} + i, "CREATE_TIME", "LAST_ACCESS_TIME", \'ds=p\' || {name}, {sb} + i, "TBL_ID"'
        f' FROM "PARTITIONS", {gs} WHERE "PART_ID" = {part_id}',
        f'INSERT INTO "PARTITION_KEY_VALS" ("PART_ID", "PART_KEY_VAL", "INTEGER_IDX")'
        f' SELECT {pb} + i, \'p\' || {name}, 0 FROM {gs}',
        f'INSERT INTO "PARTITION_PARAMS" ("PART_ID", "PARAM_KEY", "PARAM_VALUE") SELECT {pb} + i, "PARAM_KEY",'
        f' "PARAM_VALUE" FROM "PARTITION_PARAMS", {gs} WHERE "PART_ID" = {part_id}',
        # Partition i's statistics: partition 0's with low - i and high + i (bench_hms.long_stats with salt i).
        f'INSERT INTO "PART_COL_STATS" ("CS_ID", "PART_ID", "PARTITION_NAME", "LONG_LOW_VALUE", "LONG_HIGH_VALUE",'
        f' {", ".join(chr(34) + c + chr(34) for c in pcs_cols)})'
        f' SELECT {cb} + i * {ncols} + t.k, {pb} + i, \'ds=p\' || {name}, t."LONG_LOW_VALUE" - i,'
        f' t."LONG_HIGH_VALUE" + i, {copied}'
        f' FROM (SELECT *, row_number() OVER (ORDER BY "CS_ID") AS k FROM "PART_COL_STATS"'
        f' WHERE "PART_ID" = {part_id}) t, {gs}',
        f'UPDATE "SEQUENCE_TABLE" SET "NEXT_VAL" = {pb + n + 100_000} WHERE "SEQUENCE_NAME" = \'{seq}MPartition\'',
        f'UPDATE "SEQUENCE_TABLE" SET "NEXT_VAL" = {sb + n + 100_000}'
        f' WHERE "SEQUENCE_NAME" = \'{seq}MStorageDescriptor\'',
        f'UPDATE "SEQUENCE_TABLE" SET "NEXT_VAL" = {rb + n + 100_000} WHERE "SEQUENCE_NAME" = \'{seq}MSerDeInfo\'',
        f'UPDATE "SEQUENCE_TABLE" SET "NEXT_VAL" = {cb + (n + 1) * ncols + 100_000}'
        f' WHERE "SEQUENCE_NAME" = \'{seq}MPartitionColumnStatistics\'',
        "COMMIT",
        'CREATE INDEX IF NOT EXISTS "PCS_STATS_IDX" ON "PART_COL_STATS"'
        ' ("DB_NAME", "TABLE_NAME", "COLUMN_NAME", "PARTITION_NAME")',
        "ANALYZE",
    ])


def normalized_aggr(reply: Any) -> tuple[int, list[tuple]]:
    return reply.partsFound, sorted(
        (o.colName, o.colType, repr(o.statsData)) for o in reply.colStats
    )


def normalized_partstats(reply: Any) -> dict[str, list[tuple]]:
    return {
        part: sorted((o.colName, o.colType, repr(o.statsData)) for o in objs)
        for part, objs in reply.partStats.items()
    }


def differential(addresses: dict[str, tuple[str, int]], partitions: int, columns: int,
                 connect: Any) -> list[tuple[str, bool]]:
    """Compare both servers' answers (get_aggr_stats_for over all/10,000/100 partitions,
    get_partitions_statistics_req over 10,000 and 100); one (description, equal) per comparison.
    `connect(host, port, timeout_s=...)` returns (client, transport)."""
    from metastore.api.hive_metastore import ttypes as T

    clients = {s: connect(*addresses[s], timeout_s=600) for s in ("ours", "reference")}
    lines = []
    try:
        cols = column_names(columns)
        for call, sizes in (
            ("get_aggr_stats_for", sorted({partitions, min(10_000, partitions), min(100, partitions)})),
            ("get_partitions_statistics_req", sorted({min(10_000, partitions), min(100, partitions)})),
        ):
            for k in sizes:
                req = T.PartitionsStatsRequest(dbName=DB, tblName=TABLE, colNames=cols,
                                               partNames=[partition_name(i) for i in range(k)])
                got = {}
                for s, (c, _) in clients.items():
                    reply = getattr(c, call)(req)
                    got[s] = normalized_aggr(reply) if call == "get_aggr_stats_for" else normalized_partstats(reply)
                equal = got["ours"] == got["reference"]
                cells = (len(got["ours"][1]) if call == "get_aggr_stats_for"
                         else sum(len(v) for v in got["ours"].values()))
                detail = ""
                if not equal:
                    if call == "get_aggr_stats_for":
                        o, r = got["ours"], got["reference"]
                        diffs = [(a, b) for a, b in zip(o[1], r[1], strict=False) if a != b]
                        detail = f" (partsFound {o[0]} vs {r[0]}; first difference {diffs[:1]})"
                    else:
                        o, r = got["ours"], got["reference"]
                        bad = [p for p in set(o) | set(r) if o.get(p) != r.get(p)]
                        detail = f" ({len(bad)} partitions differ, e.g. {sorted(bad)[:1]})"
                lines.append((f"{call} over {k:,} partitions ({cells:,} statistics): "
                              f"{'equal' if equal else 'DIFFERENT'}{detail}", equal))
    finally:
        for _, t in clients.values():
            t.close()
    return lines
