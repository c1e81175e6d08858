"""Stored per-file results come from a database any client may write to (the metastore's extension calls):
whatever bytes a stored file carries, reusing them never raises and never yields a partial that cannot be merged."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metastore import storage
from metastore.stats.harvest import merge_partials
from metastore.stats.harvest.runner import cached_partials, column_specs, stored_partials
from metastore.stats.harvest.scan import ScanOptions, analyze_file
from metastore.stats.partial_store import FilePartials

# the failing example's repr (a file's partials) is large; hypothesis warns about printing it
pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")

TYPES = {"id": "bigint", "name": "string", "price": "double"}
OPTIONS = ScanOptions(want_ndv=True, want_histograms=False, scan=True)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[FilePartials, storage.FileRef, list]:
    path = tmp_path_factory.mktemp("fuzz") / "f.orc"
    rng = np.random.default_rng(1)
    po.write_table(pa.table({"id": rng.integers(0, 1000, 3000), "name": [f"n{i % 97}" for i in range(3000)],
                             "price": rng.random(3000)}), path)
    ref = storage.stat(str(path))
    specs = column_specs(list(TYPES), TYPES, list(TYPES))
    outcome = analyze_file(ref.url, ref.size, ref.mtime_ns, tuple(specs), OPTIONS)
    return stored_partials(outcome, "", None), ref, specs


def _check(found: FilePartials, ref: storage.FileRef, specs: list) -> None:
    reused = cached_partials(found, ref, specs, OPTIONS)
    if reused is None:
        return
    info, partials = reused
    assert isinstance(info["rows"], int)
    for partial in partials.values():
        merge_partials([partial, partial]).to_stats()


def test_the_real_result_is_reused(stored) -> None:
    found, ref, specs = stored
    reused = cached_partials(found, ref, specs, OPTIONS)
    assert reused is not None and set(reused[1]) == set(TYPES)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mangled_entries_are_never_trusted_blindly(stored, data: st.DataObject) -> None:
    found, ref, specs = stored
    entries = dict(found.entries)
    for key in data.draw(st.lists(st.sampled_from(sorted(entries)), max_size=3)):
        value = bytearray(entries[key])
        how = data.draw(st.sampled_from(["flip", "cut", "random", "header"]))
        if how == "flip" and value:
            at = data.draw(st.integers(0, len(value) - 1))
            value[at] ^= data.draw(st.integers(1, 255))
        elif how == "cut":
            value = value[: data.draw(st.integers(0, len(value)))]
        elif how == "random":
            value = bytearray(data.draw(st.binary(max_size=200)))
        else:  # a well-formed header with other numbers (when an earlier mangling left one)
            n = int.from_bytes(value[:4], "little")
            try:
                header = json.loads(bytes(value[4 : 4 + n]))
            except ValueError:
                continue
            if not isinstance(header, dict):
                continue
            header[data.draw(st.sampled_from(["rows", "nulls", "kind", "sketch", "max"]))] = data.draw(
                st.one_of(st.integers(-5, 10**6), st.sampled_from(["LONG", "DOUBLE", "STRING", "BOOLEAN"]), st.none()))
            head = json.dumps(header).encode()
            value = bytearray(len(head).to_bytes(4, "little") + head + value[4 + n :])
        entries[key] = bytes(value)
    _check(FilePartials(found.path, found.size, found.mtime_ns, found.version, None, found.num_rows,
                        found.raw_data_size, found.info, entries), ref, specs)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(info=st.one_of(st.binary(max_size=100), st.builds(lambda d: json.dumps(d).encode(), st.dictionaries(
    st.sampled_from(["v", "rows", "raw", "fields"]),
    st.one_of(st.integers(-3, 3), st.text(max_size=3), st.lists(st.lists(st.integers(0, 3), max_size=3), max_size=3)),
))))
def test_mangled_file_facts_are_never_trusted_blindly(stored, info: bytes) -> None:
    found, ref, specs = stored
    _check(FilePartials(found.path, found.size, found.mtime_ns, found.version, None, found.num_rows,
                        found.raw_data_size, info, found.entries), ref, specs)
