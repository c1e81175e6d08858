"""STATS_THRIFT: each column statistic kept pre-encoded as the Thrift ColumnStatisticsObj a server returns.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21

Batched statistics reads (get_partitions_statistics_req returns thousands of objects per call) send these bytes
instead of rebuilding every object. Existing rows are filled in here, in batches, from their stored values with
the same function every later write uses (metastore.store.column_stats.rows.entry_to_row).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLES = ("TAB_COL_STATS", "PART_COL_STATS")
_BATCH = 2000


def upgrade() -> None:
    from metastore.store.column_stats.rows import row_to_entry  # the application's one encoder
    from metastore.wire.stats import encode_served

    for table in _TABLES:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("STATS_THRIFT", sa.LargeBinary(), nullable=True))
    conn = op.get_bind()
    for table in _TABLES:
        last = -1
        while True:
            rows = conn.execute(
                sa.text(f'SELECT * FROM "{table}" WHERE "CS_ID" > :last ORDER BY "CS_ID" LIMIT {_BATCH}'),
                {"last": last},
            ).mappings().all()
            if not rows:
                break
            updates = [{"id": r["CS_ID"], "value": encode_served(row_to_entry(r))} for r in rows]
            conn.execute(
                sa.text(f'UPDATE "{table}" SET "STATS_THRIFT" = :value WHERE "CS_ID" = :id').bindparams(
                    sa.bindparam("value", type_=sa.LargeBinary())
                ),
                updates,
            )
            last = rows[-1]["CS_ID"]


def downgrade() -> None:
    for table in _TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("STATS_THRIFT")
