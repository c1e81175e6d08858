"""Differential test: the same calls, through our generated Thrift client, against our server and HMS 2.3.10.

Every answer must agree with the reference's except where intentional_differences.py says why not.
"""

from __future__ import annotations

from typing import Any

import pytest

from interop.compare_runs import FieldDifference, compare_runs
from interop.differential_calls import run_differential_calls
from interop.intentional_differences import INTENTIONAL_DIFFERENCES, IntentionalDifference, as_markdown

_reference_steps: dict[tuple[str, int], list[dict[str, Any]]] = {}


def reference_run(address: tuple[str, int]) -> list[dict[str, Any]]:
    """The reference's answers, recorded once per session (they do not depend on which of our servers runs)."""
    if address not in _reference_steps:
        _reference_steps[address] = run_differential_calls(*address, prefix="diff_ref")
    return _reference_steps[address]


def _rename(steps: list[dict[str, Any]], old: str, new: str) -> list[dict[str, Any]]:
    # Database names differ between the two runs (each server is shared by several tests); align them.
    import json

    return json.loads(json.dumps(steps).replace(old, new))


@pytest.mark.reference
@pytest.mark.slow
def test_our_answers_match_the_reference_except_intentional_differences(
    our_server: tuple[str, int], reference_hms: tuple[str, int]
) -> None:
    reference = reference_run(reference_hms)
    ours = _rename(run_differential_calls(*our_server, prefix="diff_ours"), "diff_ours", "diff_ref")
    crashed = [s for s in ours if "traceback" in s]
    assert not crashed, "calls failed inside the client (not a server answer):\n" + "\n".join(
        f"{s['step']}: {s['traceback']}" for s in crashed
    )
    cmp = compare_runs(ours, reference, INTENTIONAL_DIFFERENCES)
    assert cmp.missing_steps == []
    assert not cmp.unexplained, (
        f"{len(cmp.unexplained)} answer(s) differ from HMS 2.3.10 without an entry in intentional_differences.py:\n"
        + "\n".join(str(d) for d in cmp.unexplained)
    )
    assert not cmp.stale, "listed as intentional differences, but both servers now agree:\n" + "\n".join(
        f"{e.steps}: {e.reason}" for e in cmp.stale
    )


def _rec(step: str, result: Any = None, error: str | None = None) -> dict[str, Any]:
    if error:
        return {"step": step, "error": {"type": error}, "message": "anything"}
    return {"step": step, "result": result}


def test_comparison_reports_unexplained_and_explained_differences() -> None:
    """The comparison itself: field-level and whole-answer differences, allowed ones, stale entries."""
    allowed = (
        IntentionalDifference(("get_*",), "*lastAnalyzed", "clock"),
        IntentionalDifference(("get_none",), None, "null reply"),
        IntentionalDifference(("never_differs",), None, "stale"),
    )
    ours = [
        _rec("get_x", {"statsDesc": {"lastAnalyzed": 1}, "statsObj": [{"v": 1}]}),
        _rec("get_none", error="NoSuchObjectException"),
        _rec("never_differs", True),
        _rec("put", error="InvalidInputException"),
    ]
    ref = [
        _rec("get_x", {"statsDesc": {"lastAnalyzed": "<server clock>"}, "statsObj": [{"v": 2}]}),
        _rec("get_none", error="TApplicationException"),
        _rec("never_differs", True),
        _rec("put", True),
    ]
    cmp = compare_runs(ours, ref, allowed)
    assert cmp.unexplained == [
        FieldDifference("get_x", "statsObj[].v", 1, 2),
        FieldDifference("put", "", {"raised": {"type": "InvalidInputException"}}, True),
    ]
    assert [(d.step, d.path, e.reason) for d, e in cmp.explained] == [
        ("get_x", "statsDesc.lastAnalyzed", "clock"),
        ("get_none", "", "null reply"),
    ]
    assert [e.reason for e in cmp.stale] == ["stale"]


def test_intentional_differences_render_for_the_readme() -> None:
    table = as_markdown()
    assert table.count("\n") == len(INTENTIONAL_DIFFERENCES) + 1
    assert all(d.reason and d.steps for d in INTENTIONAL_DIFFERENCES)


def test_catalog_semantics_differences_are_listed_with_their_reasons() -> None:
    """Every step differential_catalog_semantics.py expects to differ has its own whole-answer entry, same reason."""
    from interop.differential_catalog_semantics import EXPECTED_DIFFERENCES

    listed = {d.steps[0]: d.reason for d in INTENTIONAL_DIFFERENCES if d.path is None and len(d.steps) == 1}
    assert {step: listed.get(step) for step in EXPECTED_DIFFERENCES} == EXPECTED_DIFFERENCES
