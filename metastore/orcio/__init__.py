"""metastore.orcio: a standalone, numpy-vectorised ORC engine (imports nothing from the rest of metastore).

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

from .bloom import BloomFilter
from .compression import CompressionKind, compress_stream, decompress_stream
from .describe import describe
from .errors import OrcError, UnsupportedOrcFeature
from .jsonrows import json_lines, write_json_lines
from .reader import OrcReader, RowGroupIndexEntry, StripeInformation
from .statistics import (
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
    statistics_from_proto,
)
from .types import Category, TypeDescription
from .vectors import (
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
)
from .writer import OrcWriter, WriterOptions, write_orc

__all__ = [
    "Batch",
    "BinaryStatistics",
    "BloomFilter",
    "BooleanStatistics",
    "BytesVector",
    "Category",
    "CollectionStatistics",
    "ColumnStatistics",
    "ColumnVector",
    "CompressionKind",
    "DateStatistics",
    "DecimalStatistics",
    "DecimalVector",
    "DictionaryBytesVector",
    "DoubleStatistics",
    "DoubleVector",
    "IntegerStatistics",
    "ListVector",
    "LongVector",
    "MapVector",
    "OrcError",
    "OrcReader",
    "OrcWriter",
    "RowGroupIndexEntry",
    "StringStatistics",
    "StripeInformation",
    "StructVector",
    "TimestampStatistics",
    "TimestampVector",
    "TypeDescription",
    "UnionVector",
    "UnsupportedOrcFeature",
    "WriterOptions",
    "compress_stream",
    "decompress_stream",
    "describe",
    "json_lines",
    "statistics_from_proto",
    "write_json_lines",
    "write_orc",
]
