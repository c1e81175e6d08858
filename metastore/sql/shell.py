"""The shell: runs scripts (batch, `-e`/`-f`) and an interactive prompt (history, multi-line statements ending
in `;`, completion of keywords and database, table and column names).

Errors are one line, `Error: line L:C: message`, on stderr. Batch mode stops at the first error (exit code 1,
like `hive -e`); the interactive shell reports it and goes on. Results go to stdout in the chosen format;
status lines (OK, row counts, ANALYZE summaries) go to stderr, so stdout stays machine-readable.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from prompt_toolkit.completion import Completer, Completion

from metastore.errors import MetastoreError
from metastore.sql.errors import Position, SqlError
from metastore.sql.executor import Executor
from metastore.sql.lexer import statement_is_complete
from metastore.sql.output import format_result
from metastore.sql.parser import KEYWORDS, ParsedStatement, iter_script

EXIT_COMMANDS = frozenset({"quit", "exit", "\\q"})


def one_line(text: str) -> str:
    return " ".join(text.split())


def error_line(exc: Exception, fallback: Position | None) -> str:
    """`Error: line L:C: message` (the statement's position when the error has none of its own)."""
    if isinstance(exc, SqlError):
        position = exc.position or fallback
        message = exc.message
    else:
        position = fallback
        message = str(exc) or type(exc).__name__
    where = f"line {position}: " if position is not None else ""
    return one_line(f"Error: {where}{message}")


@dataclass
class Shell:
    """Runs statements through an Executor and prints what they return."""

    executor: Executor
    output: str = "table"
    out: TextIO = sys.stdout
    err: TextIO = sys.stderr

    def run_statement(self, parsed: ParsedStatement) -> bool:
        """Run one statement and print its result or its error; True when it succeeded."""
        try:
            result = self.executor.execute(parsed.statement)
        except (SqlError, MetastoreError) as exc:
            print(error_line(exc, parsed.position), file=self.err, flush=True)
            return False
        except OSError as exc:  # files of LOAD DATA, table directories
            print(error_line(exc, parsed.position), file=self.err, flush=True)
            return False
        text = format_result(result, self.output)
        if text is not None:
            print(text, file=self.out, flush=True)
        if result.message:
            print(result.message, file=self.err, flush=True)
        return True

    def run_script(self, text: str, *, stop_on_error: bool = True) -> int:
        """Run every statement of a script; the exit code (1 after an error)."""
        failed = False
        statements = iter_script(text)
        while True:
            try:
                parsed = next(statements)
            except StopIteration:
                break
            except SqlError as exc:
                print(error_line(exc, None), file=self.err, flush=True)
                return 1  # the rest of the script cannot be split reliably after a syntax error
            if not self.run_statement(parsed):
                failed = True
                if stop_on_error:
                    return 1
        return 1 if failed else 0

    # ------------------------------------------------------------------ interactive

    def prompt_text(self) -> str:
        return f"metastore:{self.executor.database}> "

    def interactive(self, history_path: Path | None = None) -> int:
        """Read statements from the terminal until quit/exit or end of input."""
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, InMemoryHistory
        from prompt_toolkit.key_binding import KeyBindings

        bindings = KeyBindings()

        @bindings.add("enter")
        def _enter(event) -> None:  # noqa: ANN001 - prompt_toolkit's event type
            buffer = event.current_buffer
            text = buffer.text
            if statement_is_complete(text) or text.strip().lower().rstrip(";") in EXIT_COMMANDS or not text.strip():
                buffer.validate_and_handle()
            else:
                buffer.insert_text("\n")

        history = InMemoryHistory()
        if history_path is not None:
            try:
                history_path.parent.mkdir(parents=True, exist_ok=True)
                history = FileHistory(str(history_path))
            except OSError:
                pass
        completer = SqlCompleter(self.executor)
        self.executor.on_catalog_change = completer.invalidate
        session: PromptSession[str] = PromptSession(
            history=history, multiline=True, key_bindings=bindings, completer=completer,
            complete_while_typing=False, prompt_continuation=lambda width, *_: "-> ".rjust(width),
        )
        print(
            f"metastore sql on {self.executor.client.target}. Statements end with ';'. quit or Ctrl-D to leave.",
            file=self.err, flush=True,
        )
        while True:
            try:
                text = session.prompt(self.prompt_text)
            except KeyboardInterrupt:
                continue
            except EOFError:
                break
            if text.strip().lower().rstrip(";").strip() in EXIT_COMMANDS:
                break
            if text.strip():
                self.run_script(text, stop_on_error=False)
        return 0


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

    def get_completions(self, document, complete_event):  # noqa: ANN001, ANN201 - prompt_toolkit's API
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
