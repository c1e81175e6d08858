"""ORC schemas: :class:`TypeDescription` trees, the schema-string syntax and the flat proto ``Type`` list.

Column ids follow ORC: a pre-order walk of the tree, the root is column 0, and each node also knows the largest
id inside its subtree (``max_id``). Schema strings use ORC/Hive syntax, e.g.
``struct<a:int,b:map<string,array<decimal(10,2)>>,`odd name`:uniontype<int,string>>``.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn, cast

from ._errors import OrcError
from ._proto import orc_proto_pb2 as pb

DEFAULT_DECIMAL_PRECISION = 38
DEFAULT_DECIMAL_SCALE = 10
MAX_DECIMAL_PRECISION = 38
DEFAULT_CHAR_LENGTH = 256


class Category(enum.Enum):
    """ORC type categories; the value is (proto Type.Kind number, schema-string name)."""

    BOOLEAN = (0, "boolean")
    BYTE = (1, "tinyint")
    SHORT = (2, "smallint")
    INT = (3, "int")
    LONG = (4, "bigint")
    FLOAT = (5, "float")
    DOUBLE = (6, "double")
    STRING = (7, "string")
    BINARY = (8, "binary")
    TIMESTAMP = (9, "timestamp")
    LIST = (10, "array")
    MAP = (11, "map")
    STRUCT = (12, "struct")
    UNION = (13, "uniontype")
    DECIMAL = (14, "decimal")
    DATE = (15, "date")
    VARCHAR = (16, "varchar")
    CHAR = (17, "char")
    TIMESTAMP_INSTANT = (18, "timestamp with local time zone")

    @property
    def kind(self) -> int:
        """The proto ``Type.Kind`` number."""
        return self.value[0]

    @property
    def type_name(self) -> str:
        """The name used in schema strings."""
        return self.value[1]

    @property
    def is_primitive(self) -> bool:
        """True for every category without children."""
        return self not in _COMPOUND

    @classmethod
    def from_kind(cls, kind: int) -> Category:
        """The category of a proto ``Type.Kind`` number."""
        try:
            return _BY_KIND[kind]
        except KeyError:
            raise OrcError(f"unsupported ORC type kind {kind}") from None


_COMPOUND = frozenset({Category.LIST, Category.MAP, Category.STRUCT, Category.UNION})
_BY_KIND = {c.kind: c for c in Category}
_BY_NAME = {c.type_name: c for c in Category}
_INTEGER_CATEGORIES = frozenset({Category.BYTE, Category.SHORT, Category.INT, Category.LONG})
_UNQUOTED_NAME = re.compile(r"^[A-Za-z0-9_]+$")


@dataclass(frozen=True, eq=True)
class TypeDescription:
    """One node of an ORC schema tree (immutable).

    ``id``/``max_id`` are the ORC column ids of this node and of the last node of its subtree; they are -1 until
    the tree is numbered (:meth:`with_ids`; every constructor that makes a root returns a numbered tree).
    """

    category: Category
    children: tuple[TypeDescription, ...] = ()
    field_names: tuple[str, ...] = ()
    max_length: int | None = None
    precision: int | None = None
    scale: int | None = None
    attributes: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    id: int = field(default=-1, compare=False)
    max_id: int = field(default=-1, compare=False)

    def __post_init__(self) -> None:
        c = self.category
        n = len(self.children)
        if c == Category.LIST and n != 1:
            raise OrcError(f"array type needs exactly 1 child, got {n}")
        if c == Category.MAP and n != 2:
            raise OrcError(f"map type needs exactly 2 children, got {n}")
        if c == Category.STRUCT and len(self.field_names) != n:
            raise OrcError(f"struct type has {n} children but {len(self.field_names)} field names")
        if c.is_primitive and n:
            raise OrcError(f"{c.type_name} type cannot have children")
        if c == Category.DECIMAL:
            p, s = self.precision, self.scale
            if p is None or s is None:
                raise OrcError("decimal type needs a precision and a scale")
            # precision 0 is Hive 0.11's unbounded decimal (every value carries its own scale)
            bounded_ok = 1 <= p <= MAX_DECIMAL_PRECISION and 0 <= s <= p
            if not (bounded_ok or (p == 0 and 0 <= s <= MAX_DECIMAL_PRECISION)):
                raise OrcError(f"invalid decimal({p},{s}): need 1 <= precision <= 38 and 0 <= scale <= precision")
        if c in (Category.CHAR, Category.VARCHAR) and (self.max_length is None or self.max_length < 1):
            raise OrcError(f"{c.type_name} type needs a maximum length >= 1, got {self.max_length}")

    # -------------------------------------------------------------- constructors

    @staticmethod
    def primitive(category: Category | str) -> TypeDescription:
        """A childless type by category or schema name (``int``, ``string``...)."""
        cat = _BY_NAME.get(category) if isinstance(category, str) else category
        if cat is None:
            raise OrcError(f"unknown type name {category!r}")
        if not cat.is_primitive:
            raise OrcError(f"{cat.type_name} is not a primitive type")
        if cat == Category.DECIMAL:
            return TypeDescription(cat, precision=DEFAULT_DECIMAL_PRECISION, scale=DEFAULT_DECIMAL_SCALE)
        if cat in (Category.CHAR, Category.VARCHAR):
            return TypeDescription(cat, max_length=DEFAULT_CHAR_LENGTH)
        return TypeDescription(cat)

    @staticmethod
    def decimal(precision: int = DEFAULT_DECIMAL_PRECISION, scale: int = DEFAULT_DECIMAL_SCALE) -> TypeDescription:
        """``decimal(precision, scale)``."""
        return TypeDescription(Category.DECIMAL, precision=precision, scale=scale)

    @staticmethod
    def char(length: int) -> TypeDescription:
        """``char(length)``."""
        return TypeDescription(Category.CHAR, max_length=length)

    @staticmethod
    def varchar(length: int) -> TypeDescription:
        """``varchar(length)``."""
        return TypeDescription(Category.VARCHAR, max_length=length)

    @staticmethod
    def list_of(element: TypeDescription) -> TypeDescription:
        """``array<element>``."""
        return TypeDescription(Category.LIST, (element,)).with_ids()

    @staticmethod
    def map_of(key: TypeDescription, value: TypeDescription) -> TypeDescription:
        """``map<key,value>``."""
        return TypeDescription(Category.MAP, (key, value)).with_ids()

    @staticmethod
    def struct(fields: Sequence[tuple[str, TypeDescription]] | Mapping[str, TypeDescription]) -> TypeDescription:
        """``struct<name:type,...>`` from (name, type) pairs."""
        items = list(fields.items()) if isinstance(fields, Mapping) else list(fields)
        return TypeDescription(
            Category.STRUCT, tuple(t for _, t in items), field_names=tuple(n for n, _ in items)
        ).with_ids()

    @staticmethod
    def union(alternatives: Sequence[TypeDescription]) -> TypeDescription:
        """``uniontype<a,b,...>``."""
        return TypeDescription(Category.UNION, tuple(alternatives)).with_ids()

    @staticmethod
    def parse(text: str) -> TypeDescription:
        """Parse an ORC schema string into a numbered tree; OrcError says where the text went wrong."""
        parser = _SchemaParser(text)
        result = parser.parse_type()
        parser.skip_space()
        if parser.pos != len(text):
            parser.fail("unexpected text after the type")
        return result.with_ids()

    # -------------------------------------------------------------- numbering

    def with_ids(self, start: int = 0) -> TypeDescription:
        """A copy of this tree numbered in ORC pre-order starting at ``start``."""
        numbered, _ = self._number(start)
        return numbered

    def _number(self, next_id: int) -> tuple[TypeDescription, int]:
        my_id = next_id
        next_id += 1
        kids = []
        for child in self.children:
            numbered, next_id = child._number(next_id)
            kids.append(numbered)
        return replace(self, children=tuple(kids), id=my_id, max_id=next_id - 1), next_id

    # -------------------------------------------------------------- properties

    @property
    def is_primitive(self) -> bool:
        """True when the type has no children."""
        return self.category.is_primitive

    @property
    def is_integer(self) -> bool:
        """tinyint, smallint, int or bigint."""
        return self.category in _INTEGER_CATEGORIES

    @property
    def column_count(self) -> int:
        """Number of columns (nodes) in this subtree."""
        return 1 + sum(c.column_count for c in self.children)

    def fields(self) -> list[tuple[str, TypeDescription]]:
        """(name, type) pairs of a struct."""
        return list(zip(self.field_names, self.children, strict=True))

    def walk(self) -> Iterator[TypeDescription]:
        """Every node of the subtree in column-id (pre-)order."""
        yield self
        for child in self.children:
            yield from child.walk()

    def flatten(self) -> list[TypeDescription]:
        """Every node of the subtree in column-id order (index i holds column ``self.id + i``)."""
        return list(self.walk())

    # -------------------------------------------------------------- lookups

    def find_column(self, column_id: int) -> TypeDescription:
        """The node with ORC column id ``column_id`` in this (numbered) subtree."""
        if self.id < 0:
            raise OrcError("the type tree is not numbered; call with_ids() first")
        if not self.id <= column_id <= self.max_id:
            raise OrcError(f"column id {column_id} is outside {self.id}..{self.max_id} of schema {self}")
        node = self
        while node.id != column_id:
            for child in node.children:
                if child.id <= column_id <= child.max_id:
                    node = child
                    break
        return node

    def find(self, path: str | Sequence[str]) -> TypeDescription:
        """Look a node up by dotted name (``a.b.c``; backticks quote names with dots), or a list of names.

        Inside a list ``_elem`` names the element, inside a map ``_key``/``_value``, inside a union the tag
        number. A path that is a plain integer is a column id.
        """
        if isinstance(path, str):
            if path.strip().isdigit():
                return self.find_column(int(path))
            parts = _split_dotted(path)
        else:
            parts = list(path)
        node = self
        walked: list[str] = []
        for part in parts:
            node = node._child_named(part, ".".join(walked) or "<root>")
            walked.append(part)
        return node

    def _child_named(self, name: str, where: str) -> TypeDescription:
        c = self.category
        if c == Category.STRUCT:
            for n, t in zip(self.field_names, self.children, strict=True):
                if n == name:
                    return t
            for n, t in zip(self.field_names, self.children, strict=True):
                if n.lower() == name.lower():
                    return t
        elif c == Category.LIST and name == "_elem":
            return self.children[0]
        elif c == Category.MAP and name in ("_key", "_value"):
            return self.children[0 if name == "_key" else 1]
        elif c == Category.UNION and name.isdigit() and int(name) < len(self.children):
            return self.children[int(name)]
        raise OrcError(f"no field {name!r} in {where} of type {self}")

    def column_path(self, column_id: int) -> str:
        """The dotted name of a column id (struct field names; ``_elem``/``_key``/``_value``/tags otherwise)."""
        if column_id == self.id:
            return ""
        node = self
        parts: list[str] = []
        while node.id != column_id:
            for i, child in enumerate(node.children):
                if child.id <= column_id <= child.max_id:
                    if node.category == Category.STRUCT:
                        name = node.field_names[i]
                        parts.append(name if _UNQUOTED_NAME.match(name) else _quote(name))
                    elif node.category == Category.LIST:
                        parts.append("_elem")
                    elif node.category == Category.MAP:
                        parts.append("_key" if i == 0 else "_value")
                    else:
                        parts.append(str(i))
                    node = child
                    break
            else:
                raise OrcError(f"column id {column_id} is not in schema {self}")
        return ".".join(parts)

    # -------------------------------------------------------------- text

    def __str__(self) -> str:
        c = self.category
        if c == Category.DECIMAL:
            return f"decimal({self.precision},{self.scale})"
        if c in (Category.CHAR, Category.VARCHAR):
            return f"{c.type_name}({self.max_length})"
        if c == Category.STRUCT:
            inner = ",".join(f"{_print_name(n)}:{t}" for n, t in zip(self.field_names, self.children, strict=True))
            return f"struct<{inner}>"
        if c in (Category.LIST, Category.MAP, Category.UNION):
            return f"{c.type_name}<{','.join(str(t) for t in self.children)}>"
        return c.type_name

    def __repr__(self) -> str:
        return f"TypeDescription({str(self)!r})"

    # -------------------------------------------------------------- proto

    def _to_proto_types(self) -> list[pb.Type]:
        """The flat ``orc.proto.Type`` list of this tree (the Footer's ``types``), in column-id order."""
        numbered = self if self.id == 0 else self.with_ids()
        out: list[pb.Type] = []
        for node in numbered.walk():
            # proto enum fields take plain ints at run time; the stubs model the enum as an int subclass
            t = pb.Type(kind=cast("pb.Type.Kind", node.category.kind))
            t.subtypes.extend(child.id for child in node.children)
            if node.category == Category.STRUCT:
                t.field_names.extend(node.field_names)
            if node.max_length is not None:
                t.maximum_length = node.max_length
            if node.category == Category.DECIMAL:
                t.precision = node.precision or 0
                t.scale = node.scale or 0
            for k, v in node.attributes.items():
                t.attributes.add(key=k, value=v)
            out.append(t)
        return out

    @staticmethod
    def _from_proto_types(types: Sequence[pb.Type]) -> TypeDescription:
        """Rebuild the schema tree from the Footer's ``types`` (validated: ids in range, a tree, no cycles)."""
        n = len(types)
        if n == 0:
            # ORC Java treats a footer without types as an empty struct
            return TypeDescription(Category.STRUCT).with_ids()
        built: dict[int, TypeDescription] = {}

        # children always have larger ids than their parent in a pre-order list; building from the end keeps
        # this iterative (no recursion limit on deep schemas) and rejects cycles and shared children
        used: set[int] = set()
        for i in range(n - 1, -1, -1):
            t = types[i]
            category = Category.from_kind(int(t.kind))
            kids = []
            for sub in t.subtypes:
                if not i < sub < n:
                    raise OrcError(f"type {i} refers to child type {sub}, which is not after it in the {n} types")
                if sub in used:
                    raise OrcError(f"type {sub} is the child of more than one type")
                used.add(sub)
                kids.append(built[sub])
            names: tuple[str, ...] = ()
            if category == Category.STRUCT:
                names = tuple(_text(x) for x in t.field_names)
                if len(names) < len(kids):
                    # pre-HIVE-4243 writers stored no names; ORC Java names such fields _col<i>
                    names = names + tuple(f"_col{j}" for j in range(len(names), len(kids)))
                names = names[: len(kids)]
            kwargs: dict[str, Any] = {}
            if category in (Category.CHAR, Category.VARCHAR):
                kwargs["max_length"] = int(t.maximum_length) if t.HasField("maximum_length") else DEFAULT_CHAR_LENGTH
            if category == Category.DECIMAL:
                if t.HasField("precision"):
                    kwargs["precision"] = int(t.precision)
                    kwargs["scale"] = int(t.scale) if t.HasField("scale") else 0
                else:
                    # Hive 0.11 wrote decimals without precision: unbounded, read with the per-value scale
                    kwargs["precision"] = 0
                    kwargs["scale"] = 0
            attrs = {_text(a.key): _text(a.value) for a in t.attributes}
            if category == Category.LIST and len(kids) != 1 or category == Category.MAP and len(kids) != 2:
                raise OrcError(f"type {i} ({category.type_name}) has {len(kids)} children")
            if category.is_primitive and kids:
                raise OrcError(f"type {i} ({category.type_name}) cannot have children")
            built[i] = TypeDescription(category, tuple(kids), names, attributes=attrs, **kwargs)
        unreached = [i for i in range(1, n) if i not in used]
        if unreached:
            raise OrcError(f"types {unreached[:5]} are not reachable from the root type")
        root = built[0].with_ids()
        # a pre-order list numbers children exactly as with_ids does; anything else is a malformed footer
        for node, t in zip(root.walk(), types, strict=True):
            if list(t.subtypes) != [child.id for child in node.children]:
                raise OrcError(f"types are not in pre-order: type {node.id} lists children {list(t.subtypes)}")
        return root


def _text(value: str | bytes) -> str:
    # proto2 string fields come back as bytes when a writer stored invalid UTF-8
    return value if isinstance(value, str) else value.decode("utf-8", "replace")


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _print_name(name: str) -> str:
    return name if _UNQUOTED_NAME.match(name) else _quote(name)


def _split_dotted(path: str) -> list[str]:
    parts: list[str] = []
    i = 0
    n = len(path)
    current: list[str] = []
    while i < n:
        ch = path[i]
        if ch == "`":
            j = i + 1
            while True:
                end = path.find("`", j)
                if end < 0:
                    raise OrcError(f"unterminated backtick in column name {path!r}")
                if end + 1 < n and path[end + 1] == "`":
                    current.append(path[j : end + 1])
                    j = end + 2
                    continue
                current.append(path[j:end])
                i = end + 1
                break
        elif ch == ".":
            parts.append("".join(current))
            current = []
            i += 1
        else:
            current.append(ch)
            i += 1
    parts.append("".join(current))
    return parts


class _SchemaParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> NoReturn:
        raise OrcError(f"bad ORC schema {self.text!r} at position {self.pos}: {what}")

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip_space()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, ch: str) -> None:
        if self.peek() != ch:
            self.fail(f"expected {ch!r}")
        self.pos += 1

    def word(self) -> str:
        self.skip_space()
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or self.text[self.pos] == "_"):
            self.pos += 1
        return self.text[start : self.pos]

    def integer(self) -> int:
        self.skip_space()
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos].isdigit():
            self.pos += 1
        if start == self.pos:
            self.fail("expected a number")
        return int(self.text[start : self.pos])

    def field_name(self) -> str:
        if self.peek() == "`":
            self.pos += 1
            out: list[str] = []
            while True:
                end = self.text.find("`", self.pos)
                if end < 0:
                    self.fail("unterminated backtick-quoted name")
                if end + 1 < len(self.text) and self.text[end + 1] == "`":
                    out.append(self.text[self.pos : end + 1])
                    self.pos = end + 2
                    continue
                out.append(self.text[self.pos : end])
                self.pos = end + 1
                break
            name = "".join(out)
            if not name:
                self.fail("empty field name")
            return name
        self.skip_space()
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or self.text[self.pos] in "_.$"):
            self.pos += 1
        if start == self.pos:
            self.fail("expected a field name")
        return self.text[start : self.pos]

    def parse_type(self) -> TypeDescription:
        name = self.word().lower()
        if not name:
            self.fail("expected a type name")
        if name == "timestamp":
            save = self.pos
            rest = self.text[self.pos :].lower().split()
            if rest[:4] == ["with", "local", "time", "zone"] or (
                len(rest) >= 4 and rest[:3] == ["with", "local", "time"] and rest[3].startswith("zone")
            ):
                for _ in range(4):
                    self.word()
                return TypeDescription(Category.TIMESTAMP_INSTANT)
            self.pos = save
        if name == "struct":
            self.expect("<")
            names: list[str] = []
            kids: list[TypeDescription] = []
            if self.peek() != ">":
                while True:
                    names.append(self.field_name())
                    self.expect(":")
                    kids.append(self.parse_type())
                    if self.peek() == ",":
                        self.pos += 1
                        continue
                    break
            self.expect(">")
            return TypeDescription(Category.STRUCT, tuple(kids), tuple(names))
        if name in ("array", "map", "uniontype"):
            self.expect("<")
            kids = [self.parse_type()]
            while self.peek() == ",":
                self.pos += 1
                kids.append(self.parse_type())
            self.expect(">")
            cat = {"array": Category.LIST, "map": Category.MAP, "uniontype": Category.UNION}[name]
            return TypeDescription(cat, tuple(kids))
        if name == "decimal":
            precision, scale = DEFAULT_DECIMAL_PRECISION, DEFAULT_DECIMAL_SCALE
            if self.peek() == "(":
                self.pos += 1
                precision = self.integer()
                scale = 0
                if self.peek() == ",":
                    self.pos += 1
                    scale = self.integer()
                self.expect(")")
            if not (1 <= precision <= MAX_DECIMAL_PRECISION and 0 <= scale <= precision):
                self.fail(f"decimal({precision},{scale}) needs 1 <= precision <= 38 and 0 <= scale <= precision")
            return TypeDescription(Category.DECIMAL, precision=precision, scale=scale)
        if name in ("char", "varchar"):
            length = DEFAULT_CHAR_LENGTH
            if self.peek() == "(":
                self.pos += 1
                length = self.integer()
                self.expect(")")
            if length < 1:
                self.fail(f"{name} length must be at least 1")
            return TypeDescription(_BY_NAME[name], max_length=length)
        aliases = {"byte": "tinyint", "short": "smallint", "integer": "int", "long": "bigint"}
        name = aliases.get(name, name)
        primitive = _BY_NAME.get(name)
        if primitive is None or not primitive.is_primitive:
            self.fail(f"unknown type {name!r}")
        return TypeDescription(primitive)
