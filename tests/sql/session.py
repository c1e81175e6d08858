"""Running SQL text through the executor in tests, and reading results as dictionaries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from metastore.client import MetastoreClient
from metastore.sql.executor import Executor
from metastore.sql.output import Result
from metastore.sql.parser import parse_script
from metastore.sql.session import ExecutorOptions


class SqlSession:
    """One shell session (current database, options) over a client; statements run as the shell runs them."""

    def __init__(self, client: MetastoreClient, cache_path: Path | None = None, **options: Any) -> None:
        stats_cache = str(cache_path) if cache_path is not None else None
        self.client = client
        self.executor = Executor(client, options=ExecutorOptions(stats_cache=stats_cache, **options))

    def run(self, text: str) -> list[Result]:
        """Run every statement of `text`; the first error propagates."""
        return [self.executor.execute(p.statement) for p in parse_script(text)]

    def one(self, text: str) -> Result:
        (result,) = self.run(text)
        return result

    def rows(self, text: str) -> list[dict[str, Any]]:
        """The rows of one statement's result as {column: value} dictionaries."""
        result = self.one(text)
        return [dict(zip(result.columns, row, strict=True)) for row in result.rows]
