"""Owner principal types, stored by name as Hive does (DBS.OWNER_TYPE, TBLS.OWNER_TYPE)."""

from __future__ import annotations

# Hive keeps PrincipalType as its enum name in DBS.OWNER_TYPE / TBLS.OWNER_TYPE.
_PRINCIPAL_NAMES = {1: "USER", 2: "ROLE", 3: "GROUP"}
_PRINCIPAL_CODES = {v: k for k, v in _PRINCIPAL_NAMES.items()}


def principal_type_name(code: int | None) -> str | None:
    """Hive's stored name of a PrincipalType code (1 USER, 2 ROLE, 3 GROUP)."""
    return None if code is None else _PRINCIPAL_NAMES.get(code, str(code))


def principal_type_code(name: str | None) -> int | None:
    """The PrincipalType code of a stored owner type name."""
    if name is None:
        return None
    return _PRINCIPAL_CODES.get(name.upper(), int(name) if name.isdigit() else None)
