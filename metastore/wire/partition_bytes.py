"""Partition listings written straight from database rows as TBinaryProtocol bytes.

A listing of 10,000 partitions × 30 columns is a 16 MB reply; building a Partition, a StorageDescriptor and 30
FieldSchema objects per partition and then a Thrift struct of each costs seconds in Python. Here each partition
is encoded from its row: the parts that repeat across partitions (a column descriptor's column list; the storage
descriptor from its input format on, which partitions of one table nearly always share) are encoded once per
distinct value and spliced in, and only the values, times, location and parameters are encoded per partition.

The bytes are exactly those `encode_struct(partition_to_thrift(p))` writes for the Partition the object path
(PartitionRepository._load) builds from the same rows: fields in the struct's order, absent (None) fields left
out, maps in the order their entries are given (parameters ordered by key, as the object path loads them).
tests/wire/test_partition_bytes.py compares the two.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Sequence
from typing import Any

from metastore.api.hive_metastore import ttypes as tt
from metastore.catalog import Partition
from metastore.listing_rows import partition_row
from metastore.wire.encoded import encode_struct, string_list_body

# One partition as the listing reads it (PostgreSQL returns exactly these columns, partition_listing.PAGE_COLUMNS):
ROW_FIELDS = (
    "PART_NAME", "CREATE_TIME", "LAST_ACCESS_TIME", "WRITE_ID", "values", "param_keys", "param_values",
    "has_sd", "cols_key", "LOCATION", "INPUT_FORMAT", "OUTPUT_FORMAT", "IS_COMPRESSED", "NUM_BUCKETS",
    "SERDE_NAME", "SLIB", "serde_param_keys", "serde_param_values", "bucket_cols", "sort_cols", "sort_orders",
    "sd_param_keys", "sd_param_values", "SKEWED_INFO", "IS_STOREDASSUBDIRECTORIES",
)
# Lists may be None for empty (an aggregate over no rows); parameter keys come ordered, values aligned with them.
# cols_key: the column descriptor's id (None: the columns are unset), looked up in the encoder's `columns`.

_i32 = struct.Struct(">i").pack
_i64 = struct.Struct(">q").pack
_field_i32 = struct.Struct(">bhi").pack
_field_i64 = struct.Struct(">bhq").pack
_field_list = struct.Struct(">bhbi").pack
_field_map = struct.Struct(">bhbbi").pack

_T_BOOL, _T_I32, _T_I64, _T_STRING, _T_STRUCT, _T_MAP, _T_LIST = 2, 8, 10, 11, 12, 13, 15

_SD_FIELD = b"\x0c\x00\x06"  # Partition.sd (field 6, a struct)
_STOP = b"\x00"


def _string_field(fid: int, value: str) -> bytes:
    data = value.encode("utf-8")
    return struct.pack(">bhi", _T_STRING, fid, len(data)) + data




def _string_map_field(fid: int, keys: Sequence[str] | None, values: Sequence[str] | None) -> bytes:
    if not keys:
        return _field_map(_T_MAP, fid, _T_STRING, _T_STRING, 0)
    assert values is not None
    out = [_field_map(_T_MAP, fid, _T_STRING, _T_STRING, len(keys))]
    for k, v in zip(keys, values, strict=True):
        kd = k.encode("utf-8")
        vd = v.encode("utf-8")
        out.append(_i32(len(kd)))
        out.append(kd)
        out.append(_i32(len(vd)))
        out.append(vd)
    return b"".join(out)


def _without_stop(data: bytes) -> bytes:
    assert data.endswith(_STOP)
    return data[:-1]


def _skewed(text: str | None) -> tt.SkewedInfo:
    """The SkewedInfo the object path sends for a stored SKEWED_INFO (storage._skewed_from_text, sd_to_thrift)."""
    if text is None:
        return tt.SkewedInfo(skewedColNames=[], skewedColValues=[], skewedColValueLocationMaps={})
    doc = json.loads(text)
    return tt.SkewedInfo(
        skewedColNames=list(doc.get("names", [])),
        skewedColValues=[list(v) for v in doc.get("values", [])],
        skewedColValueLocationMaps={tuple(k): v for k, v in doc.get("locations", [])},
    )


class PartitionEncoder:
    """Encodes the partitions of one table's listing (one reply): `encode(rows)` gives the concatenated
    Partition structs of the rows. Column lists and storage descriptor tails are encoded once per reply.
    `columns` maps a row's cols_key to its columns as (name, type, comment); add to it before encoding rows
    with new keys. With catalog=False (a Hive 2 client, metastore.wire.generations) catName is left out."""

    def __init__(
        self, db_name: str, table_name: str, catalog: str | None, columns: dict[Any, Sequence[tuple[str, str, str | None]]]
    ) -> None:
        self.columns = columns
        self._names = _string_field(2, db_name) + _string_field(3, table_name)
        self._catalog = _string_field(9, catalog) if catalog is not None else b""
        self._cols: dict[Any, bytes] = {}
        self._tails: dict[tuple[Any, ...], bytes] = {}

    def _cols_field(self, key: Any) -> bytes:
        hit = self._cols.get(key)
        if hit is None:
            cols = self.columns.get(key, ())
            sd = tt.StorageDescriptor(cols=[tt.FieldSchema(name=n, type=t, comment=c) for n, t, c in cols])
            hit = self._cols[key] = _without_stop(encode_struct(sd))
        return hit

    def _tail(self, key: tuple[Any, ...], row: Sequence[Any]) -> bytes:
        """StorageDescriptor fields 3-12 and its STOP byte (encoded by the generated code, once per value)."""
        hit = self._tails.get(key)
        if hit is None:
            sd = tt.StorageDescriptor(
                inputFormat=row[10],
                outputFormat=row[11],
                compressed=bool(row[12]),
                numBuckets=row[13],
                serdeInfo=tt.SerDeInfo(
                    name=row[14], serializationLib=row[15],
                    parameters=dict(zip(row[16] or (), row[17] or (), strict=True)),
                ),
                bucketCols=list(row[18] or ()),
                sortCols=[tt.Order(col=c, order=o) for c, o in zip(row[19] or (), row[20] or (), strict=True)],
                parameters=dict(zip(row[21] or (), row[22] or (), strict=True)),
                skewedInfo=_skewed(row[23]),
                storedAsSubDirectories=bool(row[24]),
            )
            hit = self._tails[key] = encode_struct(sd)
        return hit

    def encode(self, rows: Iterable[Sequence[Any]]) -> bytes:
        """The Partition structs of the rows (each ending in its STOP byte), concatenated."""
        out: list[bytes] = []
        append = out.append
        names = self._names
        catalog = self._catalog
        sd_default = self._default_sd()
        for row in rows:
            values = row[4] or ()
            append(_field_list(_T_LIST, 1, _T_STRING, len(values)))
            append(string_list_body(values))
            append(names)
            append(_field_i32(_T_I32, 4, row[1]))
            append(_field_i32(_T_I32, 5, row[2]))
            if row[7]:
                append(_SD_FIELD)
                cols_key = row[8]
                if cols_key is not None:
                    append(self._cols_field(cols_key))
                location = row[9]
                if location is not None:
                    append(_string_field(2, location))
                key = (
                    row[10], row[11], bool(row[12]), row[13], row[14], row[15],
                    tuple(row[16]) if row[16] else None, tuple(row[17]) if row[17] else None,
                    tuple(row[18]) if row[18] else None, tuple(row[19]) if row[19] else None,
                    tuple(row[20]) if row[20] else None, tuple(row[21]) if row[21] else None,
                    tuple(row[22]) if row[22] else None, row[23], bool(row[24]),
                )
                append(self._tail(key, row))
            else:
                append(sd_default)
            append(_string_map_field(7, row[5], row[6]))
            append(catalog)
            append(_field_i64(_T_I64, 10, row[3]))
            append(_STOP)
        return b"".join(out)

    def _default_sd(self) -> bytes:
        """Partition.sd of a partition without a stored storage descriptor (StorageDescriptor() as sent)."""
        key = ("default",)
        hit = self._tails.get(key)
        if hit is None:
            empty = (None,) * 10 + (None, None, False, -1, None, None, None, None, None, None, None, None, None, None, False)
            hit = self._tails[key] = _SD_FIELD + _field_list(_T_LIST, 1, _T_STRUCT, 0) + self._tail(("d",), empty)
        return hit


def encode_partitions(parts: Sequence[Partition], *, catalog: bool = True) -> bytes:
    """Partitions (objects) of one table as concatenated Partition structs, through PartitionEncoder."""
    if not parts:
        return b""
    columns: dict[Any, Sequence[tuple[str, str, str | None]]] = {}
    rows = []
    for p in parts:
        row, cols = partition_row(p)
        if cols is not None:
            columns[cols] = cols
        rows.append(row)
    first = parts[0]
    encoder = PartitionEncoder(first.db_name, first.table_name, first.catalog_name if catalog else None, columns)
    return encoder.encode(rows)
