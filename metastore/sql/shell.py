"""The shell: runs scripts (batch, `-e`/`-f`) and an interactive prompt (history, multi-line statements ending
in `;`, completion of keywords and database, table and column names).

Errors are one line, `Error: line L:C: message`, on stderr. Batch mode stops at the first error (exit code 1,
like `hive -e`); the interactive shell reports it and goes on. Results go to stdout in the chosen format;
status lines (OK, row counts, ANALYZE summaries) go to stderr, so stdout stays machine-readable.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from metastore.errors import MetastoreError
from metastore.sql.errors import Position, SqlError
from metastore.sql.executor import Executor
from metastore.sql.lexer import statement_is_complete
from metastore.sql.output import format_result
from metastore.sql.parser import ParsedStatement, iter_script

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
        return not result.failed

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
        # prompt_toolkit (a fifth of a second to import) only for the interactive prompt, never in batch mode.
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, History, InMemoryHistory
        from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

        from metastore.sql.completion import SqlCompleter

        bindings = KeyBindings()

        @bindings.add("enter")
        def _enter(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            text = buffer.text
            if statement_is_complete(text) or text.strip().lower().rstrip(";") in EXIT_COMMANDS or not text.strip():
                buffer.validate_and_handle()
            else:
                buffer.insert_text("\n")

        history: History = InMemoryHistory()
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
