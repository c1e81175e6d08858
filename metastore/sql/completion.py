"""Completion in the interactive shell: keywords, database and table names (also after `db.`) and the columns
of the tables the statement names. Loaded with prompt_toolkit by the interactive prompt only."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from metastore.errors import MetastoreError
from metastore.sql.executor import Executor
from metastore.sql.parser import KEYWORDS


class SqlCompleter(Completer):
    """Completes keywords, database names, table names (also `db.` prefixes) and column names of the tables
    named in the statement being typed. Names are cached until the catalog changes."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self._databases: list[str] | None = None
        self._tables: dict[str, list[str]] = {}
        self._columns: dict[tuple[str, str], list[str]] = {}

    def invalidate(self) -> None:
        self._databases = None
        self._tables.clear()
        self._columns.clear()

    def databases(self) -> list[str]:
        if self._databases is None:
            try:
                self._databases = self.executor.client.list_databases()
            except MetastoreError:
                self._databases = []
        return self._databases

    def tables(self, db: str) -> list[str]:
        if db not in self._tables:
            try:
                self._tables[db] = self.executor.client.list_tables(db)
            except MetastoreError:
                self._tables[db] = []
        return self._tables[db]

    def columns(self, db: str, table: str) -> list[str]:
        key = (db, table)
        if key not in self._columns:
            try:
                t = self.executor.client.get_table(db, table)
                self._columns[key] = [c.name for c in (*t.sd.cols, *t.partition_keys)]
            except MetastoreError:
                self._columns[key] = []
        return self._columns[key]

    def candidates(self, text_before_cursor: str) -> tuple[str, list[str]]:
        """(the word being completed, the names and keywords it may become)."""
        word = ""
        for ch in reversed(text_before_cursor):
            if ch.isalnum() or ch in "_.`":
                word = ch + word
            else:
                break
        plain = word.replace("`", "")
        if "." in plain:
            db, _, partial = plain.rpartition(".")
            return partial, [t for t in self.tables(db.lower())]
        names: list[str] = list(KEYWORDS) + self.databases()
        current = self.executor.database
        tables = self.tables(current)
        names += tables
        mentioned = {w.lower().replace("`", "") for w in _words(text_before_cursor)}
        for table in tables:
            if table in mentioned:
                names += self.columns(current, table)
        for token in mentioned:
            if "." in token:
                db, _, table = token.partition(".")
                if table in self.tables(db):
                    names += self.columns(db, table)
        return plain, names

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        """prompt_toolkit's entry: the candidates starting with the word before the cursor."""
        partial, names = self.candidates(document.text_before_cursor)
        low = partial.lower()
        seen: set[str] = set()
        for name in names:
            if name.lower().startswith(low) and name not in seen:
                seen.add(name)
                shown = name if name.isupper() or not partial.isupper() else name.upper()
                yield Completion(shown, start_position=-len(partial))


def _words(text: str) -> Iterable[str]:
    word = ""
    for ch in text:
        if ch.isalnum() or ch in "_.`":
            word += ch
        elif word:
            yield word
            word = ""
    if word:
        yield word
