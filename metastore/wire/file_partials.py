"""Conversion between the issue-10 extension structs (MetastoreFilePartials) and stats.partial_store.FilePartials."""

from __future__ import annotations

from metastore.api.hive_metastore import ttypes as tt
from metastore.errors import InvalidInput
from metastore.stats.partial_store import FilePartials


def file_partials_to_thrift(f: FilePartials) -> tt.MetastoreFilePartials:
    """The wire form of one file's stored partials."""
    return tt.MetastoreFilePartials(
        path=f.path, size=f.size, mtimeNs=f.mtime_ns, version=f.version, partName=f.partition,
        numRows=f.num_rows, rawDataSize=f.raw_data_size, info=f.info, partials=dict(f.entries),
    )


def file_partials_from_thrift(t: tt.MetastoreFilePartials) -> FilePartials:
    """The domain value of one file's stored partials; InvalidInput when a required field is missing."""
    if t.path is None or t.size is None or t.mtimeNs is None:
        raise InvalidInput("a MetastoreFilePartials needs path, size and mtimeNs")
    return FilePartials(
        path=t.path, size=t.size, mtime_ns=t.mtimeNs, version=t.version or "", partition=t.partName,
        num_rows=t.numRows, raw_data_size=t.rawDataSize, info=bytes(t.info or b""),
        entries={k: bytes(v) for k, v in (t.partials or {}).items()},
    )
