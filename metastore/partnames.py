"""Hive partition names (`ds=2024-01-01/hr=05`): building, parsing and the path escaping Hive applies to them.

The escaping must match Hive's FileUtils.escapePathName / unescapePathName byte for byte: partition names are
stored in the metastore, sent by clients (get_partition_by_name, statistics requests) and used as directory
names, so any difference would make a partition unreachable.
"""

from __future__ import annotations

from collections.abc import Sequence

from metastore.errors import InvalidObject

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"

# Characters Hive escapes as %XX: ASCII controls, DEL and the ones that are special in paths, URIs or globs.
_ESCAPED = frozenset(
    [
        *map(chr, range(0x00, 0x20)),
        '"',
        "#",
        "%",
        "'",
        "*",
        "/",
        ":",
        "=",
        "?",
        "\\",
        "\x7f",
        "{",
        "[",
        "]",
        "^",
    ]
)
_HEX = frozenset("0123456789abcdefABCDEF")


def escape_path_name(value: str | None) -> str:
    """Escape one key or value as Hive does; None or '' become __HIVE_DEFAULT_PARTITION__."""
    if not value:
        return DEFAULT_PARTITION_NAME
    if not any(c in _ESCAPED for c in value):
        return value
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value)


def _hex_code(two: str) -> int:
    """Java's Integer.parseInt(two, 16) for a two-character string, or -1 where it would throw."""
    if two[0] in "+-":
        if two[1] not in _HEX:
            return -1
        code = int(two[1], 16)
        return -code if two[0] == "-" else code
    if two[0] in _HEX and two[1] in _HEX:
        return int(two, 16)
    return -1


def unescape_path_name(text: str) -> str:
    """Undo escape_path_name, with Hive's quirks: a '%' not followed by two hex digits stays as it is."""
    if "%" not in text:
        return text
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "%" and i + 2 < n:
            code = _hex_code(text[i + 1 : i + 3])
            if code >= 0:
                out.append(chr(code))
                i += 3
                continue
        out.append(c)
        i += 1
    return "".join(out)


def make_part_name(keys: Sequence[str], values: Sequence[str]) -> str:
    """The partition name `k1=v1/k2=v2` for partition keys and values (keys lower-cased, both escaped)."""
    if len(keys) != len(values):
        raise InvalidObject(
            f"partition has {len(values)} value(s) {list(values)!r} but the table has {len(keys)} "
            f"partition key(s) {list(keys)!r}"
        )
    return "/".join(
        f"{escape_path_name(k.lower())}={escape_path_name(v)}" for k, v in zip(keys, values, strict=True)
    )


def parse_part_name(name: str) -> list[tuple[str, str]]:
    """Split a partition name into unescaped (key, value) pairs, in order; InvalidObject when malformed.

    A component splits at its last '=' that has text on both sides, as Hive's `([^/]+)=([^/]+)` does.
    """
    if not name:
        raise InvalidObject("partition name is empty")
    pairs: list[tuple[str, str]] = []
    for component in name.split("/"):
        eq = component.rfind("=", 0, len(component) - 1)
        if eq <= 0:
            raise InvalidObject(
                f"partition name {name!r}: component {component!r} is not of the form key=value"
            )
        pairs.append((unescape_path_name(component[:eq]), unescape_path_name(component[eq + 1 :])))
    return pairs


def values_from_part_name(name: str, keys: Sequence[str]) -> list[str]:
    """The values of `keys` (in key order) named by a partition name; InvalidObject if a key is missing."""
    spec = {k.lower(): v for k, v in parse_part_name(name)}
    values: list[str] = []
    for key in keys:
        value = spec.pop(key.lower(), None)
        if value is None:
            raise InvalidObject(f"incomplete partition name {name!r} - missing {key.lower()}")
        values.append(value)
    if spec:
        raise InvalidObject(f"partition name {name!r} names unknown partition key(s) {sorted(spec)!r}")
    return values
