"""`metastore.spark.read_table`: a DataFrame of a table that gives Spark only the files the indexes keep.

    from metastore.spark import read_table
    df = read_table(spark, "sales.orders", where="id = 42 OR country IN ('de', 'fr')",
                    metastore="thrift://metastore:9083")

The driver plans the read as the shell's SELECT does (metastore.index.planning): partitions pruned by the
predicate's partition columns, files cut into splits, the table's indexes (BTREE, BLOOM, MINMAX) asked which
splits may match. Spark then reads only the files with a kept split (ORC, the table's schema; partition columns
added from the partition values) and filters the rows with the same predicate, so the answer is the rows that
match and Spark never lists or opens the other files.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from metastore.client import connect
from metastore.errors import InvalidInput
from metastore.index import predicate as pred
from metastore.index.planning import DEFAULT_PARTITION, ReadPlan, plan_read
from metastore.storage import StorageOptions

__all__ = ["plan_table_read", "read_table", "spark_sql"]


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(value: pred.Value) -> str:
    kind, text = value.kind, value.text
    if kind is pred.ValueKind.NULL or text is None:
        return "NULL"
    if kind is pred.ValueKind.STRING:
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if kind in (pred.ValueKind.DATE, pred.ValueKind.TIMESTAMP):
        return f"{kind.value.upper()} '{text.strip()}'"
    if kind is pred.ValueKind.DOUBLE:
        number = float(text)
        if not math.isfinite(number):
            return f"CAST('{'NaN' if number != number else ('Infinity' if number > 0 else '-Infinity')}' AS DOUBLE)"
        return f"CAST('{text.strip()}' AS DOUBLE)"
    if kind is pred.ValueKind.DECIMAL:
        return f"{text.strip()}BD"
    return text.strip()


def spark_sql(expr: pred.Expr) -> str:
    """The predicate as a Spark SQL condition (names quoted, literals typed as written)."""
    if isinstance(expr, pred.Compare):
        op = "!=" if expr.op == "!=" else expr.op
        return f"{_quote(expr.column)} {op} {_literal(expr.value)}"
    if isinstance(expr, pred.Between):
        return f"{_quote(expr.column)} BETWEEN {_literal(expr.low)} AND {_literal(expr.high)}"
    if isinstance(expr, pred.In):
        return f"{_quote(expr.column)} IN ({', '.join(_literal(v) for v in expr.values)})"
    if isinstance(expr, pred.IsNull):
        return f"{_quote(expr.column)} IS NULL"
    if isinstance(expr, pred.And | pred.Or):
        word = " AND " if isinstance(expr, pred.And) else " OR "
        return "(" + word.join(spark_sql(a) for a in expr.args) + ")"
    if isinstance(expr, pred.Not):
        return f"(NOT {spark_sql(expr.arg)})"
    if isinstance(expr, pred.Const):
        return "TRUE" if expr.value else "FALSE"
    raise TypeError(f"not a predicate node: {expr!r}")


def _predicate(where: str | pred.Expr | None) -> pred.Expr | None:
    if where is None or isinstance(where, pred.Expr):
        return where
    text = where.strip()
    if text.startswith("{"):
        return pred.from_json(text)
    from metastore.sql.errors import SqlError
    from metastore.sql.parser import parse_predicate

    try:
        return parse_predicate(text)
    except SqlError as exc:
        raise InvalidInput(f"where: {exc}") from None


def _options(storage_options: StorageOptions | Mapping[str, str] | None) -> StorageOptions:
    if isinstance(storage_options, StorageOptions):
        return storage_options
    return StorageOptions(tuple((k, str(v)) for k, v in (storage_options or {}).items()))


def plan_table_read(
    table: str, where: str | pred.Expr | None = None, metastore: str = "thrift://127.0.0.1:9083", *,
    storage_options: StorageOptions | Mapping[str, str] | None = None,
) -> ReadPlan:
    """The read plan of ``table`` (``db.name``) under ``where``: files, splits, what each index kept."""
    db_name, _, name = table.rpartition(".")
    if not name:
        raise InvalidInput(f"table {table!r}: expected db.table")
    client = connect(metastore)
    try:
        tbl = client.get_table((db_name or "default").lower(), name.lower())
        from metastore.sql.table_files import is_orc

        if not is_orc(tbl):
            raise InvalidInput(f"read_table needs an ORC table; {tbl.db_name}.{tbl.table_name} is stored as "
                               f"{tbl.sd.input_format or 'unknown'}")
        return plan_read(client, tbl, _predicate(where), options=_options(storage_options))
    finally:
        client.close()


def _spark_path(path: str) -> str:
    # Hadoop reads S3 through s3a://; index records name objects s3://
    return "s3a://" + path[len("s3://"):] if path.startswith("s3://") else path


def read_table(
    spark: Any, table: str, where: str | pred.Expr | None = None, metastore: str = "thrift://127.0.0.1:9083", *,
    storage_options: StorageOptions | Mapping[str, str] | None = None,
) -> Any:
    """A DataFrame of the rows of ``table`` (``db.name``) matching ``where`` (the shell's WHERE syntax, the JSON
    predicate form, or a metastore.index.predicate tree; None for every row), reading only the files in which the
    table's indexes keep a split. The columns are the table's data columns, then its partition columns."""
    plan = plan_table_read(table, where, metastore, storage_options=storage_options)
    tbl = plan.table
    data_schema = ", ".join(f"{_quote(c.name.lower())} {c.type}" for c in tbl.sd.cols)
    kept = {s.path for s in plan.kept}
    frames = []
    for target in plan.targets:
        paths = [_spark_path(f.path) for f in target.files if f.path in kept]
        if not paths:
            continue
        frame = spark.read.schema(data_schema).orc(paths)
        if target.partition:
            from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

            values = plan.partition_display[next(f.path for f in target.files if f.path in kept)]
            for key in tbl.partition_keys:
                value = values.get(key.name.lower())
                column = F.lit(None if value == DEFAULT_PARTITION else value).cast(key.type)
                frame = frame.withColumn(key.name.lower(), column)
        frames.append(frame)
    if not frames:
        full_schema = ", ".join([data_schema, *(f"{_quote(k.name.lower())} {k.type}" for k in tbl.partition_keys)])
        return spark.createDataFrame([], full_schema.strip(", "))
    df = frames[0]
    for frame in frames[1:]:
        df = df.unionByName(frame)
    expr = _predicate(where)
    return df if expr is None else df.where(spark_sql(expr))
