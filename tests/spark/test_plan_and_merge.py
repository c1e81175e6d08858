"""The Spark driver's planning and merging without a JVM: small files grouped into tasks of about the planned
size, large files split by stripe ranges into one task per piece; results merged in listing order whatever
order they arrive in, and a result seen twice (a retried or speculative task's copy) counted once.

Results come from the executors' own function (metastore.spark.tasks.harvest_task) run in this process on real
ORC files, exactly the rows Spark would return."""

from __future__ import annotations

import pickle
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pytest

from metastore.spark.analyze import _RESULT_FIELDS, _ResultMerge, plan_tasks
from metastore.spark.tasks import TaskPlan, Unit, harvest_task
from metastore.sql.analysis import AnalyzeTarget, TargetOutcome
from metastore.stats.harvest import merge_partials
from metastore.stats.harvest.runner import column_specs
from metastore.stats.harvest.scan import ScanOptions, absent_partial, analyze_file, stat_ref
from metastore.stats.orc_convert import hive_kind

MiB = 1 << 20
COLUMNS = {"id": "bigint", "few": "string", "x": "double"}
OPTIONS = ScanOptions(want_ndv=True, want_histograms=False, scan=True)
SPECS = tuple(column_specs(list(COLUMNS), COLUMNS, list(COLUMNS)))


def _units(sizes: list[int], pieces_of: dict[int, int] | None = None) -> list[Unit]:
    out = []
    for f, size in enumerate(sizes):
        pieces = (pieces_of or {}).get(f, 1)
        out.extend(Unit(0, f, f"/d/f{f}.orc", size, 0, k, pieces, (0,)) for k in range(pieces))
    return out


def _task_bytes(task: TaskPlan) -> int:
    return sum(u.size // u.pieces for u in task.units)


def test_small_files_are_grouped_into_tasks_of_about_the_planned_size() -> None:
    # 300 files of 3 MiB on 2 cores: 900 MiB, 4 tasks a core would hold 37-38 files each, over the cap of 32 units
    # a task (which bounds one task's results on the driver): 10 even tasks of 30
    units = _units([3 * MiB] * 300)
    tasks = plan_tasks(units, 2, 128 * MiB, SPECS, OPTIONS)
    assert [u for t in tasks for u in t.units] == units  # every unit once, in listing order
    assert [t.task for t in tasks] == list(range(len(tasks)))
    assert [len(t.units) for t in tasks] == [30] * 10
    # 1,200 MiB: more than 4 full tasks a core, so tasks of up to 128 MiB, of which 3 MiB files fill 32
    large = plan_tasks(_units([3 * MiB] * 400), 2, 128 * MiB, SPECS, OPTIONS)
    assert all(len(t.units) == 32 for t in large[:-1]) and len(large) == 13
    # 40 MiB files: the 128 MiB budget holds 3 of them
    big = plan_tasks(_units([40 * MiB] * 30), 2, 128 * MiB, SPECS, OPTIONS)
    assert [len(t.units) for t in big] == [3] * 10 and all(_task_bytes(t) <= 128 * MiB for t in big)
    # a small table: 40 files of 5 MiB on 2 cores would be 2 tasks of 128 MiB; 4 tasks a core keep both busy
    small = plan_tasks(_units([5 * MiB] * 40), 2, 128 * MiB, SPECS, OPTIONS)
    assert len(small) == 8 and all(_task_bytes(t) <= 25 * MiB for t in small)
    # never below 4 MiB a task: tiny files are not one task each
    tiny = plan_tasks(_units([100 << 10] * 100), 8, 128 * MiB, SPECS, OPTIONS)
    assert [len(t.units) for t in tiny] == [32, 32, 32, 4]


def test_a_small_table_is_cut_into_four_even_tasks_a_core() -> None:
    # bench_spark's shape: 40 files of 5-6 MiB on 2 cores. Filling tasks of total / 8 bytes one file after another
    # leaves extra short tasks (10 here; 9 for bench_spark's files): a last wave on one core while the other
    # idles. The cut gives 4 tasks a core, each within a file's size of even
    sizes = [5 * MiB + (f * 7919 % 13) * 90_000 for f in range(40)]
    units = _units(sizes)
    for cores in (1, 2, 3):
        tasks = plan_tasks(units, cores, 128 * MiB, SPECS, OPTIONS)
        assert [u for t in tasks for u in t.units] == units  # every unit once, in listing order
        assert [t.task for t in tasks] == list(range(len(tasks)))
        assert len(tasks) == 4 * cores
        even = sum(sizes) / len(tasks)
        assert all(abs(_task_bytes(t) - even) <= max(sizes) for t in tasks)
    # on 2 cores 8 tasks of 5 files each (greedy filling gave 9)
    assert [len(t.units) for t in plan_tasks(units, 2, 128 * MiB, SPECS, OPTIONS)] == [5] * 8
    # many small files: the count of tasks grows (a multiple of the cores) to keep 32 units a task at most
    many = plan_tasks(_units([200 << 10] * 300), 2, 128 * MiB, SPECS, OPTIONS)
    assert len(many) == 10 and all(len(t.units) <= 32 for t in many)
    assert [u for t in many for u in t.units] == _units([200 << 10] * 300)


def test_large_files_are_split_into_one_task_per_piece() -> None:
    # file 1 (1 GiB) is 4 pieces of 256 MiB: each piece is a task of its own, between its neighbours' tasks
    units = _units([10 * MiB, 1 << 30, 10 * MiB], {1: 4})
    tasks = plan_tasks(units, 2, 128 * MiB, SPECS, OPTIONS)
    assert [[(u.file, u.piece) for u in t.units] for t in tasks] == [
        [(0, 0)], [(1, 0)], [(1, 1)], [(1, 2)], [(1, 3)], [(2, 0)]]


# ------------------------------------------------------------------------------- the merge on the driver


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    root = tmp_path_factory.mktemp("merge")
    rng = np.random.default_rng(4)

    def table(n: int) -> pa.Table:
        return pa.table({
            "id": pa.array(rng.integers(0, 10**12, n), mask=rng.random(n) < 0.1),
            # few distinct values: the HLL stays sparse, whose bytes depend on the order sketches merge in
            "few": pa.array([f"k{v}" for v in rng.integers(0, 400, n)]),
            "x": pa.array(rng.normal(size=n)),
        })

    out: dict[str, list[Path]] = {"ds=a": [], "ds=b": []}
    for part, sizes in (("ds=a", [30_000, 2_000, 3_000, 1_500]), ("ds=b", [2_500, 4_000])):
        (root / part).mkdir()
        for k, n in enumerate(sizes):
            path = root / part / f"f{k}.orc"
            # the first file of ds=a has many small stripes: it is split into pieces
            po.write_table(table(n), str(path), stripe_size=64 * 1024 if n > 10_000 else 64 * MiB)
            out[part].append(path)
    return out


def _targets(files: dict[str, list[Path]]) -> list[AnalyzeTarget]:
    return [AnalyzeTarget(None, name, str(paths[0].parent), [stat_ref(str(p)) for p in paths])
            for name, paths in files.items()]


def _rows(targets: list[AnalyzeTarget]) -> list[tuple]:
    """What the executors return for every file of ``targets`` (the first file of each split in 3 pieces),
    one task per file, computed by harvest_task itself."""
    tasks = []
    for ti, target in enumerate(targets):
        for fi, ref in enumerate(target.files):
            pieces = 3 if fi == 0 and ti == 0 else 1
            for k in range(pieces):
                unit = Unit(ti, fi, ref.url, ref.size, ref.mtime_ns, k, pieces, tuple(range(len(SPECS))))
                tasks.append(TaskPlan(len(tasks), SPECS, OPTIONS, (unit,)))
    rows = []
    for task in tasks:
        for out in harvest_task(pickle.dumps(task)):
            rows.extend(tuple(r[name] for name in _RESULT_FIELDS) for r in out.to_pylist())
    assert all(r[6] is None for r in rows)
    return rows


def _merge(targets: list[AnalyzeTarget], rows: list[tuple]) -> tuple[_ResultMerge, list[TargetOutcome]]:
    merge = _ResultMerge(targets, list(COLUMNS))
    for row in rows:
        merge.add(*row)
    return merge, merge.outcomes(COLUMNS, OPTIONS, 0.0)


def _answer(outcomes: list[TargetOutcome]) -> list[tuple]:
    return [(o.target.name, o.num_rows, o.raw_data_size, o.files_read, o.columns) for o in outcomes]


def test_results_merge_in_listing_order_whatever_order_they_arrive(files: dict[str, list[Path]]) -> None:
    targets = _targets(files)
    rows = _rows(targets)
    in_order, want = _merge(targets, rows)
    assert in_order.peak_held <= 3  # in order, only the pieces of the split file wait for each other
    # the answer is the local runner's: files analysed whole, merged in listing order
    local = [[analyze_file(str(p), p.stat().st_size, p.stat().st_mtime_ns, SPECS, OPTIONS).analysis
              for p in paths] for paths in files.values()]
    assert [o.num_rows for o in want] == [sum(a.num_rows for a in analyses) for analyses in local]
    assert [o.columns for o in want] == [
        {c: merge_partials([a.columns[c] for a in analyses]).to_stats() for c in COLUMNS} for analyses in local]
    assert want[0].columns["few"].bit_vector  # a sparse sketch: its bytes depend on the order sketches merge in
    for seed in range(3):
        shuffled = rows[:]
        random.Random(seed).shuffle(shuffled)
        merge, got = _merge(targets, shuffled)
        assert _answer(got) == _answer(want)
        assert merge.duplicates == 0 and merge.held == 0
    _, backwards = _merge(targets, rows[::-1])
    assert _answer(backwards) == _answer(want)


def test_a_result_seen_twice_counts_once(files: dict[str, list[Path]]) -> None:
    targets = _targets(files)
    rows = _rows(targets)
    _, want = _merge(targets, rows)
    first_pieces = [r for r in rows if (r[0], r[1]) == (0, 0)]
    assert [r[2] for r in first_pieces] == [0, 1, 2]
    a1, a2, a3 = (r for r in rows if r[0] == 0 and r[1] in (1, 2, 3))
    b0, b1 = (r for r in rows if r[0] == 1)
    replayed = [
        first_pieces[0], first_pieces[0],  # a piece repeated while its file waits for the others
        first_pieces[1], first_pieces[2],
        a1, a1,  # a file repeated after it was merged
        a3, a3,  # a file repeated while it waits for an earlier one (a2)
        a2,
        b0, b1, b0, b1,  # a retried task's whole output delivered again
        *first_pieces,  # pieces of a merged file, again
    ]
    merge, got = _merge(targets, replayed)
    assert merge.duplicates == 1 + 1 + 1 + 2 + 3
    assert _answer(got) == _answer(want)
    assert [o.num_rows for o in got] == [36_500, 6_500]
    assert [o.files_read for o in got] == [4, 2]


def test_an_error_fails_its_target_and_drops_what_it_held(files: dict[str, list[Path]]) -> None:
    targets = _targets(files)
    rows = _rows(targets)
    merge = _ResultMerge(targets, list(COLUMNS))
    later = [r for r in rows if r[0] == 0 and r[1] == 3]
    for row in later:  # held: file 3 of ds=a waits for files 0 to 2
        merge.add(*row)
    assert merge.held == 1
    merge.add(0, 1, 0, 1, 9, None, "cannot analyze f1.orc: not a readable ORC file")
    assert merge.held == 0
    for row in rows:
        merge.add(*row)
    outcomes = merge.outcomes(COLUMNS, OPTIONS, 0.0)
    assert outcomes[0].error == "cannot analyze f1.orc: not a readable ORC file" and outcomes[0].num_rows is None
    assert outcomes[1].error is None and outcomes[1].num_rows == 6_500


def test_a_finished_target_keeps_its_results_not_its_accumulators(files: dict[str, list[Path]]) -> None:
    """Driver memory: a partition's accumulators (a dense sketch's registers per column) are replaced by its merged
    results as soon as its last file is in, while later partitions are still arriving; the answer is unchanged,
    and a partition without files gets every column's absent statistics."""
    targets = _targets(files)
    rows = _rows(targets)
    _, want = _merge(targets, rows)
    empty = AnalyzeTarget(None, "ds=empty", str(Path(targets[0].location).parent / "ds=empty"), [])
    merge = _ResultMerge([*targets, empty], list(COLUMNS))
    for row in [r for r in rows if r[0] == 0]:
        merge.add(*row)
    first, second = merge.merges[0], merge.merges[1]
    assert first.finished and first.accumulators == {} and first.results is not None
    assert not second.finished and set(second.accumulators) == set(COLUMNS) and second.results is None
    for row in [r for r in rows if r[0] == 1]:
        merge.add(*row)
    assert second.accumulators == {}
    got = merge.outcomes(COLUMNS, OPTIONS, 0.0)
    assert _answer(got[:2]) == _answer(want)
    assert got[2].error is None and got[2].num_rows == 0
    assert got[2].columns == {c: absent_partial(hive_kind(t), 0, OPTIONS).to_stats() for c, t in COLUMNS.items()}
