"""metastore.orcio: a standalone, numpy-vectorised ORC engine (imports nothing from the rest of metastore)."""

from .compression import CompressionKind, compress_stream, decompress_stream
from .errors import OrcError, UnsupportedOrcFeature
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

__all__ = [
    "BinaryStatistics",
    "BooleanStatistics",
    "Category",
    "CollectionStatistics",
    "ColumnStatistics",
    "CompressionKind",
    "DateStatistics",
    "DecimalStatistics",
    "DoubleStatistics",
    "IntegerStatistics",
    "OrcError",
    "StringStatistics",
    "TimestampStatistics",
    "TypeDescription",
    "UnsupportedOrcFeature",
    "compress_stream",
    "decompress_stream",
    "statistics_from_proto",
]
