"""Permanent user-defined functions as the catalog keeps them (Hive's FUNCS / FUNC_RU): no Thrift, no SQL."""

from __future__ import annotations

from dataclasses import dataclass, field

#: Hive's FunctionType.JAVA, the only kind Hive defines.
JAVA_FUNCTION = 1
#: Hive's ResourceType values: JAR, FILE, ARCHIVE.
RESOURCE_TYPES = frozenset({1, 2, 3})


@dataclass(frozen=True, kw_only=True)
class FunctionResource:
    """A file the function needs (resource_type: 1 jar, 2 file, 3 archive)."""

    resource_type: int
    uri: str


@dataclass(frozen=True, kw_only=True)
class Function:
    """A permanent function of a database."""

    name: str
    db_name: str
    class_name: str | None
    owner_name: str | None = None
    owner_type: int | None = None  # Hive's PrincipalType: 1 user, 2 role, 3 group
    create_time: int = 0
    function_type: int = JAVA_FUNCTION
    resources: tuple[FunctionResource, ...] = field(default_factory=tuple)
