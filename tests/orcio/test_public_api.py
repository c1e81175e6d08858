"""orcio stays a library another project could lift out (issue 16, DESIGN.md "Boundaries"): the rest of the
project uses only the names ``metastore.orcio`` exports, orcio uses nothing of its host, its modules are marked
internal, and no public name takes or returns a protobuf message."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import typing
from collections.abc import Iterator
from pathlib import Path

from google.protobuf.message import Message

import metastore.orcio as orcio
from metastore.orcio import OrcReader

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "metastore" / "orcio"
DATA = ROOT / "tests" / "data"


def _python_files(*folders: Path, skip: Path | None = None) -> Iterator[Path]:
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            if skip is None or skip not in path.parents:
                yield path


def _imports(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """(line, absolute module, imported names) of every import statement in ``path`` (relative ones resolved
    against the file's package)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, module]) if module else ".".join(base)
            yield node.lineno, module, [alias.name for alias in node.names]


def test_the_rest_of_the_project_imports_only_orcios_public_names() -> None:
    public = set(orcio.__all__)
    wrong = []
    folders = (ROOT / "metastore", ROOT / "bench", ROOT / "tests")
    for path in _python_files(*folders, skip=PACKAGE):
        if ROOT / "tests" / "orcio" in path.parents:
            continue  # orcio's own tests may test its internals
        for line, module, names in _imports(path):
            where = f"{path.relative_to(ROOT)}:{line}"
            if module.startswith("metastore.orcio."):
                wrong.append(f"{where} imports the internal module {module}")
            elif module == "metastore.orcio":
                wrong.extend(f"{where} imports {name!r}, which is not in metastore.orcio.__all__"
                             for name in names if name not in public)
    assert wrong == [], "\n".join(wrong)


def test_orcio_imports_nothing_from_its_host() -> None:
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in _python_files(PACKAGE)
        for line, module, _ in _imports(path)
        if (module == "metastore" or module.startswith("metastore.")) and not module.startswith("metastore.orcio")
    ]
    assert wrong == [], "\n".join(wrong)
    # and at run time: importing orcio loads no other part of metastore (the bare parent package aside)
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, metastore.orcio; print(' '.join(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout.split()
    host = [m for m in loaded if m.startswith("metastore.") and not m.startswith("metastore.orcio")]
    assert host == []


def test_orcios_modules_are_marked_internal() -> None:
    public_modules = [
        str(path.relative_to(ROOT))
        for path in PACKAGE.iterdir()
        if path.name != "__init__.py" and not path.name.startswith((".", "_")) and path.name != "py.typed"
    ]
    assert public_modules == [], "orcio modules without a leading underscore: " + ", ".join(public_modules)
    for name in orcio.__all__:
        assert hasattr(orcio, name), f"metastore.orcio.__all__ names {name!r}, which the package lacks"


def _protobuf_classes_in(hint: object) -> list[str]:
    if isinstance(hint, str):  # an annotation that cannot be resolved outside TYPE_CHECKING
        return [hint] if "pb." in hint or "protobuf" in hint else []
    if isinstance(hint, type) and not typing.get_args(hint):
        return [hint.__qualname__] if issubclass(hint, Message) else []
    return [found for part in typing.get_args(hint) for found in _protobuf_classes_in(part)]


def _hints(function: object) -> dict[str, object]:
    try:
        return typing.get_type_hints(function)
    except NameError:  # names imported only for type checkers: look at the annotation text
        return dict(inspect.get_annotations(function))


def _public_callables(obj: object) -> Iterator[tuple[str, object]]:
    if inspect.isclass(obj):
        for attr, member in vars(obj).items():
            if attr.startswith("_") and attr != "__init__":
                continue
            if isinstance(member, property):
                yield attr, member.fget
            elif isinstance(member, staticmethod | classmethod):
                yield attr, member.__func__
            elif inspect.isfunction(member):
                yield attr, member
        if hasattr(obj, "__dataclass_fields__"):
            yield "<fields>", obj
    elif inspect.isfunction(obj):
        yield "", obj


def test_no_public_name_takes_or_returns_a_protobuf_message() -> None:
    # the check finds a message where there is one (an internal function that takes one)
    internal = _hints(orcio._statistics.statistics_from_proto)
    assert _protobuf_classes_in(internal["msg"]) == ["ColumnStatistics"]
    assert _protobuf_classes_in(internal["return"]) == []
    wrong = []
    for name in orcio.__all__:
        for attr, function in _public_callables(getattr(orcio, name)):
            for arg, hint in _hints(function).items():
                for proto in _protobuf_classes_in(hint):
                    wrong.append(f"{name}{'.' + attr if attr else ''} ({arg}): {proto}")
    assert wrong == [], "\n".join(wrong)
    # what a reader exposes at run time, attributes set in __init__ included
    with OrcReader(DATA / "orc" / "TestOrcFile.testSeek.orc") as reader:
        values = {attr: value for attr, value in vars(reader).items() if not attr.startswith("_")}
        values |= {attr: getattr(reader, attr) for attr, member in vars(OrcReader).items()
                   if isinstance(member, property) and not attr.startswith("_")}
    messages = sorted(attr for attr, value in values.items() if isinstance(value, Message))
    assert messages == []
