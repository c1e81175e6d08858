"""Results read a page at a time inside one database snapshot: long listings and batched statistics replies
are sent as they are read, so the server holds a page of a 100,000-partition answer, never all of it."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sized
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from typing import Generic, TypeVar

from metastore.store import UnitOfWork

P = TypeVar("P", bound=Sized)


@dataclass
class Stream(Generic[P]):
    """`count` items, known before the first is read, then `pages` of them in order (len(page) items each);
    the snapshot they are read in stays open until the pages are exhausted or close() is called (call it in any
    case: it is idempotent)."""

    count: int
    pages: Iterator[P]
    close: Callable[[], None]
    # Where the reply cache can keep the encoded reply built from the pages (set by the reader that knows the
    # version they were read at), for replies up to keep_limit bytes.
    keep: Callable[[bytes], None] | None = None
    keep_limit: int = 0


def open_stream(
    unit: AbstractContextManager[UnitOfWork], start: Callable[[UnitOfWork], tuple[int, Iterator[P]]]
) -> Stream[P]:
    """Enter `unit` (a snapshot: the count and every page see the same data) and run `start`, which returns
    the count and the pages. An error in `start` (a missing table, a bad filter) leaves the unit as any failed
    unit of work does and is raised here, before anything is sent."""
    with ExitStack() as stack:
        uow = stack.enter_context(unit)
        count, pages = start(uow)
        owned = stack.pop_all()

    def read() -> Generator[P, None, None]:
        with owned:  # the unit ends with the last page, or with the error or close() that stops the pages
            yield from pages

    reader = read()

    def close() -> None:
        reader.close()  # ends the unit if the pages were started ...
        owned.close()  # ... and if they were not (then close() of the generator runs nothing)

    return Stream(count, reader, close)
