"""Scanning one primitive column stripe by stripe, reading only the streams a question needs.

Statistics harvesting asks three kinds of question of a column, each cheaper than a full read:

``"present"``
    how many values are not null (the PRESENT stream only);
``"lengths"``
    the byte length of every value of a string/char/varchar/binary column without its bytes: the LENGTH stream
    of a DIRECT column, or the LENGTH stream of the dictionary (one length per distinct value) of a DICTIONARY
    column, plus the id stream when per-value lengths are wanted;
``"values"``
    the non-null values themselves, dense (no slots for nulls), as the type's :mod:`._vectors` class; string
    dictionaries stay dictionaries (ids + entries), nothing is turned into Python objects.

:func:`scan_stripe_columns` answers several columns' questions from one stripe (each stream read once);
:func:`scan_column` yields one :class:`StripeColumn` per stripe for a single column. Only the streams a question
needs are read and decompressed: a ``"lengths"`` scan of a string column never touches its DATA or
DICTIONARY_DATA streams.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from . import _column_readers as cr
from ._errors import OrcError
from ._proto import orc_proto_pb2 as pb
from ._types import Category, TypeDescription
from ._vectors import ColumnVector

if TYPE_CHECKING:
    from ._reader import OrcReader
    from ._streams_in import StripeStreams

ScanMode = Literal["present", "lengths", "values"]

STRING_CATEGORIES = frozenset({Category.STRING, Category.CHAR, Category.VARCHAR, Category.BINARY})
_DICTIONARY_KINDS = (pb.ColumnEncoding.DICTIONARY, pb.ColumnEncoding.DICTIONARY_V2)
_V2_KINDS = (pb.ColumnEncoding.DIRECT_V2, pb.ColumnEncoding.DICTIONARY_V2)

# Which streams each question reads (besides PRESENT, which every question needs).
_LENGTH_KINDS = frozenset({pb.Stream.PRESENT, pb.Stream.LENGTH})
_LENGTH_AND_IDS_KINDS = frozenset({pb.Stream.PRESENT, pb.Stream.LENGTH, pb.Stream.DATA})
_PRESENT_KINDS = frozenset({pb.Stream.PRESENT})
_VALUE_KINDS = frozenset(
    {pb.Stream.PRESENT, pb.Stream.DATA, pb.Stream.LENGTH, pb.Stream.SECONDARY, pb.Stream.DICTIONARY_DATA}
)


@dataclass
class StripeColumn:
    """What a scan learned about one column in one stripe.

    ``rows``: slots in the stripe; ``non_null``: slots holding a value. For ``"values"`` scans ``vector`` holds
    the ``non_null`` values densely. For ``"lengths"`` scans of DIRECT columns ``value_lengths`` holds one
    length per value; of DICTIONARY columns ``dictionary_lengths`` holds one per dictionary entry, and
    ``dictionary_ids`` (only when asked for) the entry of each value.
    """

    stripe: int
    rows: int
    non_null: int
    vector: ColumnVector | None = None
    value_lengths: np.ndarray | None = None
    dictionary_lengths: np.ndarray | None = None
    dictionary_ids: np.ndarray | None = None

    @property
    def dictionary_encoded(self) -> bool:
        """True when the stripe stores the column with a dictionary."""
        return self.dictionary_lengths is not None


@dataclass(frozen=True)
class ColumnRequest:
    """One column of a stripe scan: its type node in the file schema and the question (see the module doc)."""

    node: TypeDescription
    mode: ScanMode
    with_ids: bool = False


def scan_column(
    reader: OrcReader,
    column: int,
    mode: ScanMode,
    *,
    with_ids: bool = False,
    stripes: range | None = None,
) -> Iterator[StripeColumn]:
    """Scan column id ``column`` of ``reader`` stripe by stripe (see the module docstring for ``mode``).

    ``with_ids`` (``"lengths"`` mode, dictionary columns) also decodes the id stream so that per-value lengths
    can be derived. Raises OrcError naming the file, stripe and column when the data is corrupt.
    """
    request = column_request(reader, column, mode, with_ids=with_ids)
    for index in stripes if stripes is not None else range(len(reader.stripes)):
        yield scan_stripe_columns(reader, index, [request])[0]


def column_request(reader: OrcReader, column: int, mode: ScanMode, *, with_ids: bool = False) -> ColumnRequest:
    """A checked :class:`ColumnRequest` for column id ``column`` of the file."""
    node = reader.schema.find_column(column)
    if not node.is_primitive:
        raise OrcError(f"cannot scan {node.category.type_name} column {column}: only primitive columns",
                       file=reader.path, column=column)
    if mode == "lengths" and node.category not in STRING_CATEGORIES:
        raise OrcError(f"a lengths scan needs a string or binary column, column {column} is {node}",
                       file=reader.path, column=column)
    return ColumnRequest(node, mode, with_ids)


def scan_stripe_columns(reader: OrcReader, stripe: int, requests: list[ColumnRequest]) -> list[StripeColumn]:
    """Answer several column requests from one stripe, reading each needed stream once.

    The streams of ``"values"`` requests are fetched together (neighbouring ranges in one read); ``"present"``
    and ``"lengths"`` requests read exactly their streams, so the bytes of the values stay unread.
    """
    info = reader.stripes[stripe]
    rows = info.number_of_rows
    streams = reader._stripe_streams(stripe)
    ctx = reader._context(stripe, streams)
    readable = [r for r in requests if r.node.id not in reader._encrypted_columns]
    value_columns = {r.node.id for r in readable if r.mode == "values"}
    if value_columns:
        streams.prefetch(value_columns, _VALUE_KINDS)
    out = []
    for request in requests:
        if request.node.id in reader._encrypted_columns:
            # a column we hold no key for reads as all null, as the reader's default mask does
            out.append(StripeColumn(stripe, rows, 0))
            continue
        out.append(_scan_one(reader, ctx, stripe, rows, request))
    return out


def _scan_one(reader: OrcReader, ctx: cr.ReadContext, stripe: int, rows: int, request: ColumnRequest) -> StripeColumn:
    node, mode = request.node, request.mode
    kinds = _stream_kinds(ctx.streams, node, mode, request.with_ids)
    try:
        present = cr._present(ctx, node, rows)
        non_null = rows if present is None else int(np.count_nonzero(present))
        if mode == "present":
            return StripeColumn(stripe, rows, non_null)
        if mode == "lengths":
            return _lengths_of(ctx, node, stripe, rows, non_null, request.with_ids)
        vector = cr._READERS[node.category](node, non_null, ctx)
        return StripeColumn(stripe, rows, non_null, vector=vector)
    except OrcError as err:
        raise err.with_context(file=reader.path, stripe=stripe, column=node.id) from None
    except (MemoryError, OverflowError, IndexError, ValueError) as exc:
        raise OrcError(f"corrupt column data: {type(exc).__name__}: {exc}", file=reader.path, stripe=stripe,
                       column=node.id) from None
    finally:
        for kind in kinds:
            ctx.streams.drop(node.id, kind)


def _stream_kinds(streams: StripeStreams, node: TypeDescription, mode: ScanMode, with_ids: bool) -> frozenset[int]:
    if mode == "present":
        return _PRESENT_KINDS
    if mode == "lengths":
        dictionary = int(streams.encoding(node.id).kind) in _DICTIONARY_KINDS
        return _LENGTH_AND_IDS_KINDS if dictionary and with_ids else _LENGTH_KINDS
    return _VALUE_KINDS


def _lengths_of(ctx: cr.ReadContext, node: TypeDescription, stripe: int, rows: int, non_null: int,
                with_ids: bool) -> StripeColumn:
    kind = int(ctx.streams.encoding(node.id).kind)
    version = 2 if kind in _V2_KINDS else 1
    if kind in _DICTIONARY_KINDS:
        if node.category == Category.BINARY:
            raise ctx.error("binary columns cannot use a dictionary encoding", node.id)
        size = int(ctx.streams.encoding(node.id).dictionary_size)
        if size and not ctx.streams.has(node.id, pb.Stream.LENGTH):
            raise ctx.error("LENGTH stream not found for the string dictionary", node.id, pb.Stream.LENGTH)
        lengths = cr._lengths(ctx, node.id, size, version, positioned=False)
        ids = None
        if with_ids:
            ids = cr._int_stream(ctx, node.id, pb.Stream.DATA, non_null, False, version)
            if non_null and (int(ids.min()) < 0 or int(ids.max()) >= size):
                raise ctx.error(f"dictionary id outside the dictionary of {size} entries", node.id, pb.Stream.DATA)
        return StripeColumn(stripe, rows, non_null, dictionary_lengths=lengths, dictionary_ids=ids)
    if kind not in (pb.ColumnEncoding.DIRECT, pb.ColumnEncoding.DIRECT_V2):
        raise ctx.error(f"{node.category.type_name} column cannot use encoding {kind}", node.id)
    lengths = cr._lengths(ctx, node.id, non_null, version)
    return StripeColumn(stripe, rows, non_null, value_lengths=lengths)


__all__ = [
    "STRING_CATEGORIES",
    "ColumnRequest",
    "ScanMode",
    "StripeColumn",
    "column_request",
    "scan_column",
    "scan_stripe_columns",
]
