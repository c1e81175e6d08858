"""Looking into the server's database directly (row counts, duplicates) from the tests."""

from __future__ import annotations

import sqlalchemy as sa


def query(db_url: str, sql: str, **params: object) -> list[tuple]:
    """Rows of one SQL statement against the server's database."""
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(sa.text(sql), params)]
    finally:
        engine.dispose()


def table_stats_rows(db_url: str, db: str, tbl: str) -> list[tuple]:
    """(COLUMN_NAME, ENGINE) of every TAB_COL_STATS row of the table."""
    return query(
        db_url,
        'SELECT s."COLUMN_NAME", s."ENGINE" FROM "TAB_COL_STATS" s JOIN "TBLS" t ON t."TBL_ID" = s."TBL_ID" '
        'JOIN "DBS" d ON d."DB_ID" = t."DB_ID" WHERE d."NAME" = :db AND t."TBL_NAME" = :tbl ORDER BY 1',
        db=db,
        tbl=tbl,
    )


def partition_stats_rows(db_url: str, db: str, tbl: str) -> list[tuple]:
    """(PART_NAME, COLUMN_NAME, ENGINE) of every PART_COL_STATS row of the table's partitions."""
    return query(
        db_url,
        'SELECT p."PART_NAME", s."COLUMN_NAME", s."ENGINE" FROM "PART_COL_STATS" s '
        'JOIN "PARTITIONS" p ON p."PART_ID" = s."PART_ID" JOIN "TBLS" t ON t."TBL_ID" = p."TBL_ID" '
        'JOIN "DBS" d ON d."DB_ID" = t."DB_ID" WHERE d."NAME" = :db AND t."TBL_NAME" = :tbl ORDER BY 1, 2',
        db=db,
        tbl=tbl,
    )


def all_stats_row_count(db_url: str) -> int:
    """Rows in TAB_COL_STATS plus PART_COL_STATS."""
    (a,), = query(db_url, 'SELECT count(*) FROM "TAB_COL_STATS"')
    (b,), = query(db_url, 'SELECT count(*) FROM "PART_COL_STATS"')
    return int(a) + int(b)


def orphan_count(db_url: str) -> int:
    """Rows pointing at nothing: statistics of missing tables/partitions, partitions of missing tables,
    storage descriptors of nothing. A consistent database has none."""
    checks = [
        'SELECT count(*) FROM "TAB_COL_STATS" s WHERE NOT EXISTS (SELECT 1 FROM "TBLS" t WHERE t."TBL_ID" = s."TBL_ID")',
        'SELECT count(*) FROM "PART_COL_STATS" s WHERE NOT EXISTS '
        '(SELECT 1 FROM "PARTITIONS" p WHERE p."PART_ID" = s."PART_ID")',
        'SELECT count(*) FROM "PARTITIONS" p WHERE NOT EXISTS (SELECT 1 FROM "TBLS" t WHERE t."TBL_ID" = p."TBL_ID")',
        'SELECT count(*) FROM "SDS" s WHERE NOT EXISTS (SELECT 1 FROM "TBLS" t WHERE t."SD_ID" = s."SD_ID") '
        'AND NOT EXISTS (SELECT 1 FROM "PARTITIONS" p WHERE p."SD_ID" = s."SD_ID")',
    ]
    return sum(int(query(db_url, sql)[0][0]) for sql in checks)
