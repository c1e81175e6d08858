"""`metastore serve`: check the schema, create `default`, bind, fork workers, serve."""

from __future__ import annotations

import logging
import sys

from metastore import __version__
from metastore.config import Settings, default_db_url
from metastore.server.loop import ServeOptions, bind_socket, serve_forever
from metastore.store import Store
from metastore.store.migrate import display_url

log = logging.getLogger("metastore.server")


def _is_embedded(url: str) -> bool:
    """SQLite databases are embedded: they upgrade themselves; a shared server database is upgraded on purpose."""
    return url == default_db_url() or url.startswith("sqlite")


def make_processor_factory(settings: Settings):  # noqa: ANN201 - returns a zero-argument factory
    """A factory run inside each worker process (after fork): its own engine, pool and handler."""

    def factory():  # noqa: ANN202
        from metastore.server.handler import Handler
        from metastore.server.processor import MetastoreProcessor
        from metastore.service import Metastore

        # The parent checked (or upgraded) the schema before forking.
        metastore = Metastore.open(settings, workers=max(1, settings.workers), check_schema=False)
        return MetastoreProcessor(Handler(metastore, settings))

    return factory


def serve(settings: Settings) -> int:
    """Run the server until SIGTERM/SIGINT; returns the process exit code."""
    logging.basicConfig(
        level=getattr(logging, settings.log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s [%(process)d] %(name)s: %(message)s",
    )
    logging.getLogger("alembic").setLevel(logging.WARNING)
    store = Store.open(settings.db, auto_upgrade=_is_embedded(settings.db))
    try:
        store.ensure_default_database(settings.warehouse)
    finally:
        store.dispose()  # workers open their own connections after fork
    listener = bind_socket(settings.host, settings.port)
    options = ServeOptions(
        host=settings.host,
        port=settings.port,
        workers=max(1, settings.workers),
        framed=settings.framed,
        max_frame_size=settings.max_frame_size,
        max_string_size=settings.max_string_size,
        max_container_size=settings.max_container_size,
    )
    host, port = listener.getsockname()[:2]

    def ready() -> None:
        transport = "framed" if settings.framed else "buffered"
        print(
            f"metastore {__version__} listening on thrift://{host}:{port} "
            f"(database {display_url(settings.db)}, {options.workers} workers, {transport} transport)",
            flush=True,
        )

    code = serve_forever(listener, make_processor_factory(settings), options, ready)
    log.info("stopped")
    sys.stdout.flush()
    return code
