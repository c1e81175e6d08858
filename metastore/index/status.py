"""An index's health as SHOW INDEX reports it: OK, Out-of-sync, Creating, Table dropped or Corrupt.

- ``Creating``: the build has not finished (or was interrupted); the split filter does not use the index.
- ``Table dropped``: the table the index was built on is gone (its records outlived it).
- ``Corrupt``: an index file is missing, truncated or fails a checksum (every block is read and checked); the
  split filter keeps the splits that file would have decided. ``problems`` names each file.
- ``Out-of-sync``: data files it covers changed (size or modification time), were deleted, or files appeared
  in what it covers since the build (keyed by path, size and mtime); their splits are kept until UPDATE INDEX.
- ``OK`` otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from metastore.index.model import DataFile, IndexPart, IndexRecord, IndexState

OK = "OK"
OUT_OF_SYNC = "Out-of-sync"
CREATING = "Creating"
TABLE_DROPPED = "Table dropped"
CORRUPT = "Corrupt"

#: paths named per kind of change (the rest are counted)
_NAMED = 3


@dataclass(frozen=True)
class IndexHealth:
    status: str
    #: one line per problem found (files named)
    problems: tuple[str, ...] = ()
    changed: int = 0
    added: int = 0
    removed: int = 0


def _named(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:_NAMED])
    return shown + (f" and {len(paths) - _NAMED} more" if len(paths) > _NAMED else "")


def covered_partitions(record: IndexRecord, partitions: Sequence[str]) -> list[str]:
    """The partitions (of those given) an index covers."""
    if record.partitions is None:
        return list(partitions)
    wanted = set(record.partitions)
    return [p for p in partitions if p in wanted]


def index_health(
    record: IndexRecord,
    current: Mapping[str, Sequence[DataFile]] | None,
    check_part: Callable[[IndexPart], None],
) -> IndexHealth:
    """The health of ``record``. ``current``: the data files now in each partition the index covers ('' for an
    unpartitioned table; None when the table is gone). ``check_part`` reads a part file fully and raises when
    it cannot be used (any exception: the message names the file)."""
    if record.state is IndexState.CREATING:
        return IndexHealth(CREATING)
    if not record.table_exists or current is None:
        return IndexHealth(TABLE_DROPPED)
    problems: list[str] = []
    for part in record.parts:
        try:
            check_part(part)
        except Exception as exc:  # noqa: BLE001 - whatever is wrong with the file, SHOW INDEX reports it
            text = str(exc)
            problems.append(text if part.location in text else f"index file {part.location}: {text}")
    recorded: dict[str, DataFile] = {f.path: f for part in record.parts for f in part.files}
    now: dict[str, DataFile] = {f.path: f for files in current.values() for f in files}
    changed = sorted(p for p, f in now.items() if p in recorded and recorded[p].identity != f.identity)
    added = sorted(p for p in now if p not in recorded)
    removed = sorted(p for p in recorded if p not in now)
    if changed:
        problems.append(f"{len(changed)} file(s) changed since the build: {_named(changed)}")
    if added:
        problems.append(f"{len(added)} file(s) added since the build: {_named(added)}")
    if removed:
        problems.append(f"{len(removed)} file(s) removed since the build: {_named(removed)}")
    corrupt = len(problems) > bool(changed) + bool(added) + bool(removed)
    status = CORRUPT if corrupt else OUT_OF_SYNC if (changed or added or removed) else OK
    return IndexHealth(status, tuple(problems), len(changed), len(added), len(removed))
