"""SparkSessions for the shell and `metastore spark-analyze`: a master URL in, a session out."""

from __future__ import annotations

import os
import sys
from typing import Any

from metastore.errors import InvalidInput

__all__ = ["spark_session", "stop_spark_session"]


def spark_session(master: str, app_name: str = "metastore analyze", conf: dict[str, str] | None = None) -> Any:
    """A SparkSession on ``master``: ``local[N]``, ``spark://host:port``, ``yarn``, ``k8s://...`` (classic, this
    process is the driver) or ``sc://host:port`` (Spark Connect). Raises InvalidInput without pyspark."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise InvalidInput(
            "ANALYZE on Spark needs pyspark: pip install 'metastore[spark]'"
        ) from None
    text = master.strip()
    if not text:
        raise InvalidInput("the Spark master is empty (e.g. local[4], spark://host:7077, sc://host:15002)")
    if text.startswith("sc://"):
        builder = SparkSession.builder.remote(text)
        for key, value in (conf or {}).items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
    # Python workers of a local session or a cluster on this host run this interpreter (it has the package);
    # a remote cluster brings its own through spark.archives (README), which PYSPARK_PYTHON then names.
    # (PySpark takes the workers' interpreter from PYSPARK_PYTHON when the context starts).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(text)
        .appName(app_name)
        .config("spark.ui.showConsoleProgress", "false")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def stop_spark_session(spark: Any) -> None:
    """Stop a session this package started (Spark Connect: close the client's session)."""
    spark.stop()
