"""The embedded SQLite database file, created readable by its owner only.

The database holds every table's location, owner and parameters. SQLite creates a missing file with the
process's umask (0644 usually), and its -wal and -shm files copy the database file's mode, so creating the
empty file 0600 ourselves before SQLite opens it makes all three private. A directory we create for it is 0700.
Files and directories that exist already are left as their owner set them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypeGuard

DATABASE_FILE_MODE = 0o600
DATABASE_DIR_MODE = 0o700


def is_file_database(database: str | None) -> TypeGuard[str]:
    """Whether an SQLite URL's database part names a plain file (not in-memory, not a `file:` URI)."""
    return database is not None and database not in ("", ":memory:") and not database.startswith("file:")


def create_private_database_file(database: str) -> Path:
    """Create the SQLite file `database` (and its directory) for its owner alone unless it exists; returns its
    path. An empty file is a valid empty SQLite database."""
    path = Path(database).expanduser()
    if not path.parent.is_dir():
        # Missing grandparents are made as `mkdir -p` would; the directory that holds the database is private.
        path.parent.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.parent.mkdir(mode=DATABASE_DIR_MODE)
        except FileExistsError:  # another process made it meanwhile
            pass
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, DATABASE_FILE_MODE)
    except FileExistsError:
        return path
    os.close(fd)
    return path
