"""Compare two recordings of the same call script step by step, allowing only the listed intentional differences."""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from interop.intentional_differences import IntentionalDifference

ABSENT = "<absent>"


@dataclass(frozen=True)
class FieldDifference:
    step: str
    path: str  # "" for the whole answer
    ours: Any
    reference: Any

    def __str__(self) -> str:
        where = f"{self.step}: {self.path or 'answer'}"
        return f"{where}: ours={_short(self.ours)} reference={_short(self.reference)}"


@dataclass
class Comparison:
    unexplained: list[FieldDifference] = field(default_factory=list)
    explained: list[tuple[FieldDifference, IntentionalDifference]] = field(default_factory=list)
    stale: list[IntentionalDifference] = field(default_factory=list)
    missing_steps: list[str] = field(default_factory=list)


def _short(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def answer(record: dict[str, Any]) -> Any:
    """What a step answered, server-independently: its result, or its error class (and TApplicationException code)."""
    if "error" in record:
        return {"raised": record["error"]}
    return record.get("result")


def field_differences(step: str, ours: Any, ref: Any, path: str = "") -> list[FieldDifference]:
    """Leaf-level differences between two JSON values; list indices are written `[]` in paths."""
    if isinstance(ours, dict) and isinstance(ref, dict) and "raised" not in ours and "raised" not in ref:
        out = []
        for key in sorted(set(ours) | set(ref)):
            sub = f"{path}.{key}" if path else key
            out += field_differences(step, ours.get(key, ABSENT), ref.get(key, ABSENT), sub)
        return out
    if isinstance(ours, list) and isinstance(ref, list) and len(ours) == len(ref):
        out = []
        for a, b in zip(ours, ref, strict=True):
            out += field_differences(step, a, b, f"{path}[]")
        return out
    if ours == ref:
        return []
    return [FieldDifference(step, path, ours, ref)]


def _covering(
    diff: FieldDifference, allowed: tuple[IntentionalDifference, ...]
) -> IntentionalDifference | None:
    for entry in allowed:
        if not any(fnmatchcase(diff.step, pattern) for pattern in entry.steps):
            continue
        if entry.path is None or (diff.path and fnmatchcase(diff.path, entry.path)):
            return entry
    return None


def compare_runs(
    ours: list[dict[str, Any]], reference: list[dict[str, Any]], allowed: tuple[IntentionalDifference, ...]
) -> Comparison:
    """Every difference between the runs, split into explained (with the entry that explains it) and unexplained."""
    result = Comparison()
    ours_by = {s["step"]: s for s in ours}
    ref_by = {s["step"]: s for s in reference}
    result.missing_steps = sorted(set(ours_by) ^ set(ref_by))
    used_whole: set[int] = set()
    for step in [s["step"] for s in reference if s["step"] in ours_by]:
        a, b = answer(ours_by[step]), answer(ref_by[step])
        whole = [e for e in allowed if e.path is None and any(fnmatchcase(step, p) for p in e.steps)]
        if whole:
            if a != b:
                used_whole.add(id(whole[0]))
                result.explained.append((FieldDifference(step, "", a, b), whole[0]))
            continue
        for diff in field_differences(step, a, b):
            entry = _covering(diff, allowed)
            if entry is None:
                result.unexplained.append(diff)
            else:
                result.explained.append((diff, entry))
    result.stale = [e for e in allowed if e.path is None and id(e) not in used_whole]
    return result
