"""Partitions as listing rows: the one row shape the store's listing statements produce and the wire's partition
encoder consumes (metastore.wire.partition_bytes), so partitions already held as objects take the same encoder.

Neither SQL nor Thrift: the store and the wire edge both import it."""

from __future__ import annotations

import json
from typing import Any

from metastore.catalog import Partition, SkewedInfo


def skewed_text(info: SkewedInfo | None) -> str | None:
    """SDS.SKEWED_INFO as this store keeps it (compact JSON; None without skew information)."""
    if info is None:
        return None
    return json.dumps(
        {
            "names": list(info.skewed_col_names),
            "values": [list(v) for v in info.skewed_col_values],
            "locations": [[list(k), v] for k, v in info.skewed_col_value_location_maps.items()],
        },
        separators=(",", ":"),
        ensure_ascii=False,
    )


def partition_row(p: Partition) -> tuple[tuple[Any, ...], tuple[tuple[str, str, str | None], ...] | None]:
    """A Partition as a listing row, with its columns as its cols_key (for partitions read as objects)."""
    sd = p.sd
    cols: tuple[tuple[str, str, str | None], ...] | None = (
        None if sd.cols_unset else tuple((c.name, c.type, c.comment) for c in sd.cols)
    )
    params = p.parameters
    serde = sd.serde_info
    row = (
        None, p.create_time, p.last_access_time, p.write_id, list(p.values), list(params), list(params.values()),
        True, cols, sd.location, sd.input_format, sd.output_format, sd.compressed, sd.num_buckets,
        serde.name, serde.serialization_lib, list(serde.parameters), list(serde.parameters.values()),
        list(sd.bucket_cols), [o.col for o in sd.sort_cols], [o.order for o in sd.sort_cols],
        list(sd.parameters), list(sd.parameters.values()),
        skewed_text(sd.skewed_info), sd.stored_as_sub_directories,
    )
    return row, cols
