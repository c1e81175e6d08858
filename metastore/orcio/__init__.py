"""metastore.orcio: a standalone, numpy-vectorised ORC engine (imports nothing from the rest of metastore).

The public surface is the names in ``__all__`` below, imported from ``metastore.orcio`` itself; the modules
inside the package are internal (their names start with an underscore) and may change without notice.
tests/orcio/test_public_api.py keeps it so: no other part of the project imports an internal module, orcio
imports nothing from its host, and no public name takes or returns a protobuf message.

Reading::

    from metastore.orcio import OrcReader
    with OrcReader("data.orc") as reader:
        reader.schema, reader.num_rows, reader.file_statistics, reader.stripe_statistics
        batch = reader.read(columns=["a", "b.c"])          # columnar: batch.column("a").values
        for row in reader.rows(): ...                       # Python values
        reader.row_index(stripe=0, column="a")              # row-group positions and statistics
        reader.bloom_filters(stripe=0, column="a")          # per row group, None when unusable
        reader.read_row_group(stripe=0, group=3)            # seek through the row index

Writing: ``OrcWriter`` / ``write_orc`` (writer.py). See reader.py for what the reader does where ORC
implementations differ.
"""

import importlib
from typing import TYPE_CHECKING, Any

from ._bloom import BloomFilter
from ._column_input import ColumnData, ColumnValueError, TimestampValues, Utf8Values, shred
from ._column_scan import ColumnRequest, ScanMode, StripeColumn, column_request, scan_stripe_columns
from ._compression import CompressionKind, compress_stream, decompress_stream
from ._errors import OrcError, UnsupportedOrcFeature
from ._murmur3 import DEFAULT_SEED, hash64, hash64_array_bytes, hash64_array_long, hash64_long, hash64_many
from ._murmur3_packed import hash64_packed
from ._reader import OrcReader, OrcSource, RowGroupIndexEntry, StripeInformation
from ._statistics import (
    BinaryStatistics,
    BooleanStatistics,
    CollectionStatistics,
    ColumnStatistics,
    DateStatistics,
    DecimalStatistics,
    DoubleStatistics,
    IntegerStatistics,
    StringStatistics,
    TimestampStatistics,
)
from ._streams_in import SeekableInput
from ._temporal import GREGORIAN_CUTOVER_DAYS, hybrid_to_proleptic_days, is_utc
from ._types import Category, TypeDescription
from ._vectors import (
    Batch,
    BytesVector,
    ColumnVector,
    DecimalVector,
    DictionaryBytesVector,
    DoubleVector,
    ListVector,
    LongVector,
    MapVector,
    StructVector,
    TimestampVector,
    UnionVector,
    concat,
)

if TYPE_CHECKING:
    from ._csv_write import write_csv
    from ._describe import describe
    from ._jsonrows import json_lines, write_json_lines
    from ._writer import DEFAULT_SOFTWARE_VERSION, OrcWriter, WriterOptions, write_orc

# Writing and text output load on first use: a process that only reads (ANALYZE, `orc meta`) starts faster.
_LAZY = {
    "write_csv": "._csv_write",
    "describe": "._describe",
    "json_lines": "._jsonrows",
    "write_json_lines": "._jsonrows",
    "DEFAULT_SOFTWARE_VERSION": "._writer",
    "OrcWriter": "._writer",
    "WriterOptions": "._writer",
    "write_orc": "._writer",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    # reading
    "OrcReader",
    "OrcSource",
    "RowGroupIndexEntry",
    "SeekableInput",
    "StripeInformation",
    "describe",
    "json_lines",
    "write_json_lines",
    # writing
    "DEFAULT_SOFTWARE_VERSION",
    "OrcWriter",
    "WriterOptions",
    "write_csv",
    "write_orc",
    # schemas
    "Category",
    "TypeDescription",
    # columnar values read (vectors) and written (shredded input)
    "Batch",
    "BytesVector",
    "ColumnData",
    "ColumnValueError",
    "ColumnVector",
    "DecimalVector",
    "DictionaryBytesVector",
    "DoubleVector",
    "ListVector",
    "LongVector",
    "MapVector",
    "StructVector",
    "TimestampValues",
    "TimestampVector",
    "UnionVector",
    "Utf8Values",
    "concat",
    "shred",
    # scanning chosen streams of chosen columns, stripe by stripe
    "ColumnRequest",
    "ScanMode",
    "StripeColumn",
    "column_request",
    "scan_stripe_columns",
    # statistics and bloom filters
    "BinaryStatistics",
    "BloomFilter",
    "BooleanStatistics",
    "CollectionStatistics",
    "ColumnStatistics",
    "DateStatistics",
    "DecimalStatistics",
    "DoubleStatistics",
    "IntegerStatistics",
    "StringStatistics",
    "TimestampStatistics",
    # hashing as ORC Java and Hive do it (Murmur3 x64 64-bit)
    "DEFAULT_SEED",
    "hash64",
    "hash64_array_bytes",
    "hash64_array_long",
    "hash64_long",
    "hash64_many",
    "hash64_packed",
    # calendars
    "GREGORIAN_CUTOVER_DAYS",
    "hybrid_to_proleptic_days",
    "is_utc",
    # compression and errors
    "CompressionKind",
    "OrcError",
    "UnsupportedOrcFeature",
    "compress_stream",
    "decompress_stream",
]
