"""A human-readable description of an ORC file, in the spirit of ``orc-tools meta`` (ORC Java's tool): file
version and writer, schema, compression, stripes with their streams and encodings, bloom filter columns, and
stripe/file statistics."""

from __future__ import annotations

from typing import Any

from ._proto import orc_proto_pb2 as pb
from ._reader import OrcReader, OrcSource
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
from ._streams_in import ENCODING_NAMES, STREAM_KIND_NAMES

CALENDAR_NAMES = {0: "unknown", 1: "Julian/Gregorian", 2: "Proleptic Gregorian"}


def format_statistics(stats: ColumnStatistics) -> str:
    """One line of statistics as orc-tools prints them (``count: 3 hasNull: true min: 1 max: 9 sum: 15``)."""
    parts = [f"count: {stats.number_of_values}", f"hasNull: {str(stats.has_null).lower()}"]
    if stats.bytes_on_disk is not None:
        parts.append(f"bytesOnDisk: {stats.bytes_on_disk}")
    if isinstance(stats, IntegerStatistics | DoubleStatistics | DecimalStatistics):
        if stats.minimum is not None:
            parts += [f"min: {stats.minimum}", f"max: {stats.maximum}"]
        parts.append(f"sum: {stats.sum}" if stats.sum is not None else "sum: overflow")
    elif isinstance(stats, StringStatistics):
        if stats.minimum is not None:
            # str() on purpose: a value that is not valid UTF-8 comes back as bytes and prints as b'...'
            parts += [f"min: {stats.minimum!s}", f"max: {stats.maximum!s}"]
        elif stats.lower_bound is not None:
            parts += [f"lower: {stats.lower_bound!s}", f"upper: {stats.upper_bound!s}"]
        parts.append(f"sum: {stats.total_length}")
    elif isinstance(stats, BooleanStatistics):
        if stats.true_count is not None:
            parts.append(f"true: {stats.true_count}")
    elif isinstance(stats, DateStatistics):
        if stats.minimum is not None:
            parts += [f"min: {stats.minimum_date}", f"max: {stats.maximum_date}"]
    elif isinstance(stats, TimestampStatistics):
        if stats.minimum is not None:
            parts += [f"min UTC: {stats.minimum_datetime}", f"max UTC: {stats.maximum_datetime}"]
        elif stats.minimum_local is not None:
            parts += [f"min local ms: {stats.minimum_local}", f"max local ms: {stats.maximum_local}"]
    elif isinstance(stats, BinaryStatistics):
        parts.append(f"sum: {stats.total_length}")
    elif isinstance(stats, CollectionStatistics) and stats.min_children is not None:
        parts += [f"minChildren: {stats.min_children}", f"maxChildren: {stats.max_children}",
                  f"totalChildren: {stats.total_children}"]
    return " ".join(parts)


def describe_reader(reader: OrcReader) -> str:
    """The description of an open file."""
    lines: list[str] = []
    add = lines.append
    add(f"Processing data file {reader.path} [length: {reader.file_length}]")
    add(f"Structure for {reader.path}")
    add(f"File Version: {reader.file_version_name} with {reader.writer_version_name} by {reader.software_description}")
    add(f"Rows: {reader.num_rows}")
    add(f"Compression: {reader.compression.name}")
    if reader.compression.name != "NONE":
        add(f"Compression size: {reader.compression_block_size}")
    calendar = CALENDAR_NAMES.get(reader.calendar, str(reader.calendar))
    if reader.calendar == 0:
        calendar += " (read as Julian/Gregorian)" if reader.hybrid_calendar else " (read as Proleptic Gregorian)"
    add(f"Calendar: {calendar}")
    add(f"Type: {reader.schema}")
    add(f"Row index stride: {reader.row_index_stride}")
    if reader.user_metadata:
        add("")
        add("User Metadata:")
        for key, value in sorted(reader.user_metadata.items()):
            shown = value.decode("utf-8", "replace") if len(value) <= 80 else f"<{len(value)} bytes>"
            add(f"  {key}={shown}")
    try:
        stripe_stats = reader.stripe_statistics
    except Exception as exc:  # noqa: BLE001 - a corrupt Metadata section should not hide the rest
        stripe_stats = []
        add("")
        add(f"Stripe Statistics: unreadable ({exc})")
    if stripe_stats:
        add("")
        add("Stripe Statistics:")
        for i, stats in enumerate(stripe_stats):
            add(f"  Stripe {i + 1}:")
            for cid, st in enumerate(stats):
                add(f"    Column {cid}: {format_statistics(st)}")
    add("")
    add("File Statistics:")
    for cid, st in enumerate(reader.file_statistics):
        add(f"  Column {cid}: {format_statistics(st)}")
    add("")
    add("Stripes:")
    padding = 0
    expected_offset = 3
    for info in reader.stripes:
        padding += max(info.offset - expected_offset, 0)
        expected_offset = info.offset + info.length
        add(f"  Stripe: offset: {info.offset} data: {info.data_length} rows: {info.number_of_rows} "
            f"tail: {info.footer_length} index: {info.index_length}")
        footer = reader._stripe_footer(info.index)
        pos = info.offset
        for stream in footer.streams:
            section = "ROW_INDEX" if stream.kind == pb.Stream.ROW_INDEX else STREAM_KIND_NAMES.get(stream.kind)
            add(f"    Stream: column {stream.column} section {section} start: {pos} length {stream.length}")
            pos += stream.length
        for cid, enc in enumerate(footer.columns):
            text = ENCODING_NAMES.get(enc.kind, str(enc.kind))
            if enc.kind in (pb.ColumnEncoding.DICTIONARY, pb.ColumnEncoding.DICTIONARY_V2):
                text += f"[{enc.dictionary_size}]"
            add(f"    Encoding column {cid}: {text}")
        blooms = reader.bloom_filter_columns(info.index)
        if blooms:
            trusted = "ignored: known-bad writer" if reader.has_bad_bloom_filters else "present"
            add(f"    Bloom filters ({trusted}): columns {', '.join(str(c) for c in blooms)}")
        if footer.HasField("writer_timezone"):
            add(f"    Writer timezone: {reader.writer_timezone(info.index)}")
    add("")
    add(f"File length: {reader.file_length} bytes")
    add(f"Padding length: {padding} bytes")
    ratio = 100.0 * padding / reader.file_length if reader.file_length else 0.0
    add(f"Padding ratio: {ratio:.2f}%")
    return "\n".join(lines) + "\n"


def describe(path: OrcSource, **reader_options: Any) -> str:
    """Describe the ORC file at ``path`` (or an open binary file; see the module docstring)."""
    with OrcReader(path, **reader_options) as reader:
        return describe_reader(reader)
