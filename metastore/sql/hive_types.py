"""Hive column types: parsing type strings stored in the catalog, validating parameters, canonical spelling.

Canonical spelling is what Hive stores: lower-case names, `int` for INTEGER, `decimal(10,0)` for a bare
DECIMAL, `double` for DOUBLE PRECISION, complex types as `array<int>`, `map<string,int>`,
`struct<a:int,b:string>`, `uniontype<int,string>`.
"""

from __future__ import annotations

from dataclasses import dataclass

PRIMITIVE_TYPES = (
    "boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "decimal", "string", "varchar",
    "char", "date", "timestamp", "binary",
)
COMPLEX_TYPES = ("array", "map", "struct", "uniontype")
ALIASES = {"integer": "int", "numeric": "decimal", "dec": "decimal"}

MAX_DECIMAL_PRECISION = 38
DEFAULT_DECIMAL = (10, 0)
MAX_VARCHAR_LENGTH = 65535
MAX_CHAR_LENGTH = 255
# How deeply array/map/struct/uniontype may nest. Hive sets no limit, but every layer that walks a type
# (spelling, ORC schemas, Thrift) recurses once or more per level, and Python stops at about 1,000 frames;
# real schemas nest a handful of levels.
MAX_TYPE_NESTING = 100
# Type sizes (precision, scale, length) are at most 65535: more digits than this are refused before int()
# (which refuses strings of over 4,300 digits with its own words).
MAX_SIZE_DIGITS = 18


class HiveTypeError(ValueError):
    """A type string or type parameters Hive would refuse."""


@dataclass(frozen=True)
class HiveType:
    """One Hive type; parameters only where the type has them."""

    name: str
    precision: int | None = None
    scale: int | None = None
    length: int | None = None
    children: tuple[HiveType, ...] = ()
    field_names: tuple[str, ...] = ()

    @property
    def is_primitive(self) -> bool:
        return self.name in PRIMITIVE_TYPES

    def __str__(self) -> str:
        if self.name == "decimal":
            return f"decimal({self.precision},{self.scale})"
        if self.name in ("varchar", "char"):
            return f"{self.name}({self.length})"
        if self.name == "array":
            return f"array<{self.children[0]}>"
        if self.name == "map":
            return f"map<{self.children[0]},{self.children[1]}>"
        if self.name == "struct":
            return "struct<" + ",".join(f"{n}:{t}" for n, t in zip(self.field_names, self.children, strict=True)) + ">"
        if self.name == "uniontype":
            return "uniontype<" + ",".join(map(str, self.children)) + ">"
        return self.name


def decimal_type(precision: int | None = None, scale: int | None = None) -> HiveType:
    """decimal(p,s) after Hive's checks: 1 <= p <= 38, 0 <= s <= p; a bare decimal is decimal(10,0)."""
    if precision is None:
        precision, scale = DEFAULT_DECIMAL
    if scale is None:
        scale = 0
    if not 1 <= precision <= MAX_DECIMAL_PRECISION:
        raise HiveTypeError(f"decimal precision must be between 1 and {MAX_DECIMAL_PRECISION}, got {precision}")
    if not 0 <= scale <= precision:
        raise HiveTypeError(f"decimal scale must be between 0 and the precision {precision}, got {scale}")
    return HiveType("decimal", precision=precision, scale=scale)


def char_type(name: str, length: int) -> HiveType:
    """varchar(n) (1..65535) or char(n) (1..255)."""
    limit = MAX_VARCHAR_LENGTH if name == "varchar" else MAX_CHAR_LENGTH
    if not 1 <= length <= limit:
        raise HiveTypeError(f"{name} length must be between 1 and {limit}, got {length}")
    return HiveType(name, length=length)


def primitive_type(name: str) -> HiveType:
    """A parameterless primitive type by name (aliases allowed)."""
    low = ALIASES.get(name.lower(), name.lower())
    if low == "decimal":
        return decimal_type()
    if low in ("varchar", "char"):
        raise HiveTypeError(f"{low} needs a length, e.g. {low}(10)")
    if low not in PRIMITIVE_TYPES:
        raise HiveTypeError(f"unknown type {name!r}")
    return HiveType(low)


class _TypeStringParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.depth = 0

    def fail(self, message: str) -> HiveTypeError:
        # A type string can be thousands of characters long (deep nesting, long numbers): quote its start only.
        shown = self.text if len(self.text) <= 80 else self.text[:77] + "..."
        return HiveTypeError(f"type {shown!r}: {message} at character {self.i + 1}")

    def skip_space(self) -> None:
        while self.i < len(self.text) and self.text[self.i].isspace():
            self.i += 1

    def word(self) -> str:
        self.skip_space()
        start = self.i
        while self.i < len(self.text) and (self.text[self.i].isalnum() or self.text[self.i] == "_"):
            self.i += 1
        if start == self.i:
            raise self.fail("expected a type name")
        return self.text[start : self.i]

    def field_name(self) -> str:
        self.skip_space()
        if self.text.startswith("`", self.i):
            end = self.text.find("`", self.i + 1)
            if end < 0:
                raise self.fail("unterminated `")
            name = self.text[self.i + 1 : end]
            self.i = end + 1
            return name
        start = self.i
        while self.i < len(self.text) and self.text[self.i] not in ":,<>":
            self.i += 1
        name = self.text[start : self.i].strip()
        if not name:
            raise self.fail("expected a field name")
        return name

    def symbol(self, wanted: str) -> None:
        self.skip_space()
        if not self.text.startswith(wanted, self.i):
            raise self.fail(f"expected '{wanted}'")
        self.i += len(wanted)

    def peek(self, wanted: str) -> bool:
        self.skip_space()
        return self.text.startswith(wanted, self.i)

    def number(self) -> int:
        self.skip_space()
        start = self.i
        while self.i < len(self.text) and self.text[self.i] in "0123456789":
            self.i += 1
        if start == self.i:
            raise self.fail("expected a number")
        digits = self.text[start : self.i].lstrip("0") or "0"
        if len(digits) > MAX_SIZE_DIGITS:
            length, self.i = self.i - start, start  # the error points at the number's first digit
            raise self.fail(f"a {length}-digit number is too large (at most {MAX_SIZE_DIGITS} digits)")
        return int(digits)

    def type(self) -> HiveType:
        if self.depth > MAX_TYPE_NESTING:
            raise self.fail(f"types nested more than {MAX_TYPE_NESTING} levels deep are not supported")
        self.depth += 1
        try:
            return self._type()
        finally:
            self.depth -= 1

    def _type(self) -> HiveType:
        name = self.word().lower()
        name = ALIASES.get(name, name)
        if name == "double" and self.text[self.i :].lstrip().lower().startswith("precision"):
            self.word()
        if name == "decimal":
            if self.peek("("):
                self.symbol("(")
                precision = self.number()
                scale = 0
                if self.peek(","):
                    self.symbol(",")
                    scale = self.number()
                self.symbol(")")
                return decimal_type(precision, scale)
            return decimal_type()
        if name in ("varchar", "char"):
            self.symbol("(")
            length = self.number()
            self.symbol(")")
            return char_type(name, length)
        if name == "array":
            self.symbol("<")
            element = self.type()
            self.symbol(">")
            return HiveType("array", children=(element,))
        if name == "map":
            self.symbol("<")
            key = self.type()
            self.symbol(",")
            value = self.type()
            self.symbol(">")
            return HiveType("map", children=(key, value))
        if name == "struct":
            self.symbol("<")
            names: list[str] = []
            types: list[HiveType] = []
            while True:
                names.append(self.field_name())
                self.symbol(":")
                types.append(self.type())
                if self.peek(","):
                    self.symbol(",")
                    continue
                break
            self.symbol(">")
            return HiveType("struct", children=tuple(types), field_names=tuple(names))
        if name == "uniontype":
            self.symbol("<")
            members = [self.type()]
            while self.peek(","):
                self.symbol(",")
                members.append(self.type())
            self.symbol(">")
            return HiveType("uniontype", children=tuple(members))
        if name not in PRIMITIVE_TYPES:
            raise self.fail(f"unknown type '{name}'")
        return HiveType(name)


def parse_hive_type(text: str) -> HiveType:
    """Parse a Hive type string (as stored for a column); HiveTypeError when it is not one."""
    parser = _TypeStringParser(text)
    result = parser.type()
    parser.skip_space()
    if parser.i != len(text):
        raise parser.fail("unexpected text after the type")
    return result
