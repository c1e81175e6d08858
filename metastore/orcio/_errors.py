"""The one exception type of metastore.orcio."""

from __future__ import annotations


class OrcError(Exception):
    """An ORC file or stream broke a rule of the format (or uses a feature this engine does not support).

    The message names where it happened when that is known: ``file``, ``stripe``, ``column`` (ORC column id)
    and ``stream`` (a stream kind such as ``DATA``). The context is also kept on the instance so callers can
    add to it while the error travels up (see :meth:`with_context`).
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        stripe: int | None = None,
        column: int | None = None,
        stream: str | None = None,
    ) -> None:
        self.reason = message
        self.file = file
        self.stripe = stripe
        self.column = column
        self.stream = stream
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.file is not None:
            where.append(f"file {self.file!r}")
        if self.stripe is not None:
            where.append(f"stripe {self.stripe}")
        if self.column is not None:
            where.append(f"column {self.column}")
        if self.stream is not None:
            where.append(f"stream {self.stream}")
        if not where:
            return self.reason
        return f"{self.reason} ({', '.join(where)})"

    def with_context(
        self,
        *,
        file: str | None = None,
        stripe: int | None = None,
        column: int | None = None,
        stream: str | None = None,
    ) -> OrcError:
        """Fill in whichever context fields are still unknown and return self (for ``raise err.with_context()``)."""
        if self.file is None and file is not None:
            self.file = file
        if self.stripe is None and stripe is not None:
            self.stripe = stripe
        if self.column is None and column is not None:
            self.column = column
        if self.stream is None and stream is not None:
            self.stream = stream
        self.args = (self._render(),)
        return self

    def __str__(self) -> str:
        return self._render()


class UnsupportedOrcFeature(OrcError):
    """The file is valid ORC but uses something this engine cannot do (LZO/BROTLI, future versions, keys...)."""
