"""The harvest package's parts on their own, as the Spark pipeline uses them: one file's analysis on a worker,
its partials shipped (pickled or serialised) and merged on the driver, give what the local runner gives."""

from __future__ import annotations

import os
import pickle
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pytest

from metastore.errors import InvalidInput
from metastore.stats.harvest import (
    FILE_PHASES,
    PHASE_CACHE,
    PHASE_HARVEST,
    PHASE_MERGE,
    ColumnPartial,
    analyze_files,
    merge_partials,
    split_result,
)
from metastore.stats.harvest import partial as partial_module
from metastore.stats.harvest.partial import parsed_sketches
from metastore.stats.harvest.scan import ColumnSpec, ScanOptions, analyze_file, stat_file
from metastore.stats.hll import check_sketch_bytes
from metastore.stats.kll import kll_from_bytes
from metastore.stats.model import RangeStats

TYPES = {"n": "bigint", "s": "string", "x": "double"}


def _files(tmp_path: Path) -> list[Path]:
    rng = np.random.default_rng(7)
    paths = []
    for k in range(3):
        n = 2000 + k * 500
        table = pa.table({
            "n": pa.array(rng.integers(-50, 5000, n), mask=rng.random(n) < 0.05),
            "s": pa.array([f"v{v}" for v in rng.integers(0, 800, n)]),
            "x": rng.normal(size=n),
        })
        path = tmp_path / f"f{k}.orc"
        po.write_table(table, path)
        paths.append(path)
    return paths


def test_per_file_partials_shipped_and_merged_equal_the_local_run(tmp_path: Path) -> None:
    files = _files(tmp_path)
    specs = tuple(ColumnSpec(name, hive_type, position) for position, (name, hive_type) in enumerate(TYPES.items()))
    options = ScanOptions(want_ndv=True, want_histograms=True, scan=True)
    shipped = []
    for path in files:
        absolute = os.path.abspath(path)
        size, mtime_ns = stat_file(absolute)
        outcome = analyze_file(absolute, size, mtime_ns, specs, options)
        # an executor returns the outcome pickled; the cache form of each partial is its bytes
        received = pickle.loads(pickle.dumps(outcome))
        assert received == outcome
        for name, partial in received.analysis.columns.items():
            assert ColumnPartial.from_bytes(partial.to_bytes()) == partial, name
        shipped.append(received.analysis)
    merged = {name: merge_partials([a.columns[name] for a in shipped]).to_stats() for name in TYPES}
    local = analyze_files(files, list(TYPES), hive_types=TYPES, want_histograms=True, workers=1)
    # KLL compaction draws random bits, so merged histograms agree in what they summarise, not in their bytes
    for name in ("n", "x"):
        ours, theirs = merged[name], local.columns[name]
        assert isinstance(ours, RangeStats) and isinstance(theirs, RangeStats)
        assert ours.histogram is not None and theirs.histogram is not None
        assert kll_from_bytes(ours.histogram).n == kll_from_bytes(theirs.histogram).n == local.num_rows - theirs.num_nulls
        merged[name] = replace(ours, histogram=None)
        local.columns[name] = replace(theirs, histogram=None)
    assert merged == local.columns
    assert sum(a.num_rows for a in shipped) == local.num_rows
    assert local.columns["s"].num_dvs > 0 and local.columns["n"].num_nulls > 0


def test_one_run_split_into_groups_equals_a_run_per_group(tmp_path: Path) -> None:
    files = _files(tmp_path)
    run = analyze_files(files, list(TYPES), hive_types=TYPES, workers=2)
    first, empty, last = split_result(run, [2, 0, 1])
    assert first.columns == analyze_files(files[:2], list(TYPES), hive_types=TYPES, workers=1).columns
    assert last.columns == analyze_files(files[2:], list(TYPES), hive_types=TYPES, workers=1).columns
    assert (first.num_rows, first.num_files, last.num_rows, last.num_files) == (4500, 2, 3000, 1)
    assert empty.num_rows == 0 and empty.num_files == 0
    assert empty.columns == analyze_files([], list(TYPES), hive_types=TYPES).columns
    assert all(stats.num_nulls == 0 for stats in empty.columns.values())
    with pytest.raises(InvalidInput, match="cannot split a result of 3 file"):
        split_result(run, [2, 2])
    # a group whose statistics are not wanted keeps its files' facts only
    facts_only = split_result(run, [2, 0, 1], [True, True, False])
    assert [r.columns for r in facts_only[:2]] == [first.columns, empty.columns]
    assert (facts_only[2].columns, facts_only[2].partials) == ({}, {})
    assert (facts_only[2].num_rows, facts_only[2].num_files, facts_only[2].files_read) == (3000, 1, last.files_read)
    with pytest.raises(InvalidInput, match="2 statistics flags for 3 groups"):
        split_result(run, [2, 0, 1], [True, False])
    # in a parsed_sketches scope (the shell's run) each sketch parsed is parsed once; results are the same, and
    # the parsed sketches are dropped with the scope. Bit-packed dense sketches are merged from their bytes
    # (hll.merge_sketch_bytes), not parsed: the others of the three files' sketches of n, s and x are kept
    with parsed_sketches():
        scoped = analyze_files(files, list(TYPES), hive_types=TYPES, workers=1)
        assert [r.columns for r in split_result(scoped, [2, 0, 1])] == [first.columns, empty.columns, last.columns]
        sketches = {f.columns[name].sketch for f in scoped.files for name in TYPES}
        assert len(sketches) == 3 * 3
        parsed = {b for b in sketches if b is not None and not check_sketch_bytes(b)}
        assert parsed and set(partial_module._PARSED.get() or {}) == parsed
    assert scoped.columns == run.columns
    assert partial_module._PARSED.get() is None
    # a bounded scope (the Spark driver's) keeps at most its limit of parsed sketches; the results are the same
    with parsed_sketches(limit=4):
        bounded = analyze_files(files, list(TYPES), hive_types=TYPES, workers=1)
        assert [r.columns for r in split_result(bounded, [2, 0, 1])] == [first.columns, empty.columns, last.columns]
        assert len(partial_module._PARSED.get() or {}) == 4
    assert bounded.columns == run.columns
    assert partial_module._PARSED.get() is None and partial_module._PARSED_LIMIT.get() is None
    # the run accounts for its time per phase: the files' own phases (CPU) and the runner's (wall)
    assert set(FILE_PHASES) | {PHASE_CACHE, PHASE_HARVEST, PHASE_MERGE} <= set(run.phases)
    assert run.phases["scan and decode"] > 0 and run.phases["hashing"] > 0
    assert all(set(a.phases) == set(FILE_PHASES) for a in run.files)
