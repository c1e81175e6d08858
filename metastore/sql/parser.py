"""Recursive-descent parser of the shell's Hive statements.

    parse_statement("ANALYZE TABLE sales.orders PARTITION (ds='2024-01-01') COMPUTE STATISTICS FOR COLUMNS")
    parse_script(text)  # every statement of a script, split at `;`

Keywords are case-insensitive; identifiers are plain words or `backquoted`. Every error is a SqlSyntaxError
with a one-line message and the line:column of the offending token.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from metastore.index import predicate as pred
from metastore.index.errors import PredicateError
from metastore.sql.errors import Position, SqlSyntaxError
from metastore.sql.hive_types import (
    ALIASES,
    MAX_CHAR_LENGTH,
    MAX_DECIMAL_PRECISION,
    MAX_TYPE_NESTING,
    MAX_VARCHAR_LENGTH,
    PRIMITIVE_TYPES,
    HiveType,
    HiveTypeError,
    char_type,
    decimal_type,
)
from metastore.sql.lexer import Token, TokenKind, tokenize
from metastore.sql.statements import (
    AddPartitions,
    AlterTableProperties,
    Analyze,
    AnalyzeMode,
    ColumnDef,
    CreateDatabase,
    CreateIndex,
    CreateTable,
    Describe,
    DescribeDatabase,
    DropDatabase,
    DropIndex,
    DropPartitions,
    DropTable,
    Explain,
    InsertValues,
    Literal,
    LiteralKind,
    LoadData,
    MsckRepair,
    Name,
    PartitionItem,
    PartitionSpec,
    Select,
    SetVariable,
    ShowDatabases,
    ShowIndex,
    ShowPartitions,
    ShowTables,
    ShowTblProperties,
    Statement,
    TableName,
    UpdateIndex,
    UseDatabase,
)

STATEMENT_KEYWORDS = (
    "ALTER", "ANALYZE", "CREATE", "DESC", "DESCRIBE", "DROP", "EXPLAIN", "INSERT", "LOAD", "MSCK", "SELECT", "SET",
    "SHOW", "UPDATE", "USE",
)
#: Every keyword of the grammar (for completion in the interactive shell).
KEYWORDS = tuple(
    sorted(
        {
            *STATEMENT_KEYWORDS, "ADD", "ALL", "AS", "BY", "CASCADE", "COLUMNS", "COMMENT", "COMPUTE", "DATA",
            "DATABASE", "DATABASES", "DBPROPERTIES", "EXISTS", "EXTENDED", "EXTERNAL", "FALSE", "FOR", "FORMATTED",
            "FROM", "IF", "IN", "INPATH", "INTO", "LIKE", "LOCAL", "LOCATION", "NOSCAN", "NOT", "NULL", "ORC",
            "OVERWRITE", "PARTITION", "PARTITIONED", "PARTITIONS", "PURGE", "REPAIR", "RESTRICT", "SCHEMA",
            "SCHEMAS", "SET", "STATISTICS", "STORED", "SYNC", "TABLE", "TABLES", "TBLPROPERTIES", "TRUE", "VALUES",
            "WITH", "DATE", "TIMESTAMP", *(t.upper() for t in PRIMITIVE_TYPES), "ARRAY", "MAP", "STRUCT",
            "UNIONTYPE", "INDEX", "INDEXES", "USING", "ON", "WHERE", "AND", "OR", "BETWEEN", "IS", "LIMIT", "COUNT",
            "BTREE", "BLOOM", "MINMAX",
        }
    )
)

#: what an index may be built with (openLooKeng's names)
INDEX_KINDS = ("btree", "bloom", "minmax")
#: the largest LIMIT accepted
MAX_LIMIT = (1 << 63) - 1

_UNSUPPORTED_HINTS = {
    "WITH": "queries other than SELECT ... FROM one table are not supported; query data with Spark, Trino or Hive",
    "UPDATE": "UPDATE is supported for indexes only (UPDATE INDEX name); tables here are append-only ORC (use "
    "INSERT, LOAD DATA ... OVERWRITE)",
    "DELETE": "DELETE is not supported: tables here are append-only ORC (drop partitions or overwrite instead)",
    "MERGE": "MERGE is not supported: tables here are append-only ORC",
}


@dataclass(frozen=True)
class ParsedStatement:
    """A statement of a script with its source text and where that text starts."""

    statement: Statement
    text: str
    position: Position


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.i = 0
        self.type_depth = 0  # complex types being parsed around the current token

    # ------------------------------------------------------------------ token helpers

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, ahead: int = 1) -> Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def advance(self) -> Token:
        tok = self.tokens[self.i]
        if tok.kind is not TokenKind.EOF:
            self.i += 1
        return tok

    def error(self, message: str, token: Token | None = None) -> SqlSyntaxError:
        return SqlSyntaxError(message, (token or self.tok).position)

    def expected(self, what: str) -> SqlSyntaxError:
        return self.error(f"expected {what}, found {self.tok.describe()}")

    def accept(self, *words: str) -> bool:
        """Consume the keyword sequence if it is next."""
        for k, word in enumerate(words):
            if not self.peek(k).is_word(word):
                return False
        self.i += len(words)
        return True

    def expect(self, *words: str) -> Token:
        first = self.tok
        for word in words:
            if not self.tok.is_word(word):
                raise self.expected(" ".join(words) if self.tok is first else word)
            self.advance()
        return first

    def accept_symbol(self, symbol: str) -> bool:
        if self.tok.is_symbol(symbol):
            self.advance()
            return True
        return False

    def expect_symbol(self, symbol: str, context: str = "") -> Token:
        if not self.tok.is_symbol(symbol):
            raise self.expected(f"'{symbol}'{context}")
        return self.advance()

    def identifier(self, what: str = "a name") -> Name:
        tok = self.tok
        if tok.kind in (TokenKind.WORD, TokenKind.QUOTED):
            self.advance()
            return Name(tok.value, tok.position)
        raise self.expected(what)

    def table_name(self) -> TableName:
        first = self.identifier("a table name")
        if self.tok.is_symbol("."):
            self.advance()
            return TableName(first, self.identifier("a table name after the database name"))
        return TableName(None, first)

    def string(self, what: str = "a string literal") -> str:
        """A string literal; adjacent literals are concatenated, as Hive does."""
        if self.tok.kind is not TokenKind.STRING:
            raise self.expected(what)
        parts = [self.advance().value]
        while self.tok.kind is TokenKind.STRING:
            parts.append(self.advance().value)
        return "".join(parts)

    def integer(self, what: str, maximum: int) -> int:
        """A non-negative integer constant; refused at its position when it is longer than `maximum`."""
        tok = self.tok
        if tok.kind is not TokenKind.NUMBER or tok.suffix or not tok.value.isdigit():
            raise self.expected(what)
        # int() of more than 4,300 digits fails with Python's words; no accepted value is that long anyway.
        digits = tok.value.lstrip("0") or "0"
        if len(digits) > len(str(maximum)):
            raise self.error(f"{what} must be at most {maximum}, got a {len(tok.value)}-digit number")
        self.advance()
        return int(digits)

    def properties(self) -> dict[str, str]:
        self.expect_symbol("(", " to start the properties")
        props: dict[str, str] = {}
        while True:
            key = self.string("a property name (a string literal)")
            self.expect_symbol("=", " between a property name and its value")
            props[key] = self.string("a property value (a string literal)")
            if self.accept_symbol(","):
                continue
            self.expect_symbol(")", " or ',' in the properties")
            return props

    def name_list(self, what: str) -> tuple[Name, ...]:
        names = [self.identifier(what)]
        while self.accept_symbol(","):
            names.append(self.identifier(what))
        return tuple(names)

    # ------------------------------------------------------------------ literals and specs

    def literal(self) -> Literal:
        tok = self.tok
        if tok.is_word("NULL"):
            self.advance()
            return Literal(LiteralKind.NULL, None, tok.position)
        if tok.is_word("TRUE", "FALSE"):
            self.advance()
            return Literal(LiteralKind.BOOLEAN, tok.value.lower(), tok.position)
        if tok.is_word("DATE", "TIMESTAMP") and self.peek().kind is TokenKind.STRING:
            self.advance()
            kind = LiteralKind.DATE if tok.is_word("DATE") else LiteralKind.TIMESTAMP
            return Literal(kind, self.string(), tok.position)
        if tok.kind is TokenKind.STRING:
            return Literal(LiteralKind.STRING, self.string(), tok.position)
        sign = ""
        if tok.is_symbol("-", "+"):
            sign = "-" if tok.value == "-" else ""
            self.advance()
            if self.tok.kind is not TokenKind.NUMBER:
                raise self.expected(f"a number after '{tok.value}'")
        num = self.tok
        if num.kind is TokenKind.NUMBER:
            self.advance()
            exact_integer = num.value.isdigit() and num.suffix in ("", "L", "S", "Y")
            kind = LiteralKind.INTEGER if exact_integer else LiteralKind.DECIMAL
            return Literal(kind, sign + num.value, tok.position, num.suffix)
        raise self.expected("a constant (string, number, TRUE, FALSE, NULL, DATE '...', TIMESTAMP '...')")

    def partition_spec(self, *, allow_bare_keys: bool, what: str) -> PartitionSpec:
        start = self.expect("PARTITION")
        self.expect_symbol("(", " after PARTITION")
        items: list[PartitionItem] = []
        while True:
            key = self.identifier("a partition column name")
            value = None
            if self.accept_symbol("="):
                value = self.literal()
                if value.kind is LiteralKind.NULL:
                    raise SqlSyntaxError(f"partition column '{key.value}' cannot be NULL", value.position)
            elif not allow_bare_keys:
                raise self.error(f"partition column '{key.value}' needs a value in {what} (key=value)")
            items.append(PartitionItem(key, value))
            if self.accept_symbol(","):
                continue
            self.expect_symbol(")", " or ',' in the partition specification")
            break
        seen: set[str] = set()
        for item in items:
            if item.key.lower in seen:
                raise SqlSyntaxError(f"partition column '{item.key.value}' is given twice", item.key.position)
            seen.add(item.key.lower)
        return PartitionSpec(tuple(items), start.position)

    # ------------------------------------------------------------------ types

    def hive_type(self) -> HiveType:
        """A column type; complex types nest at most MAX_TYPE_NESTING levels."""
        if self.type_depth > MAX_TYPE_NESTING:
            raise self.error(f"types nested more than {MAX_TYPE_NESTING} levels deep are not supported")
        self.type_depth += 1
        try:
            return self._hive_type()
        finally:
            self.type_depth -= 1

    def _hive_type(self) -> HiveType:
        tok = self.tok
        if tok.kind is not TokenKind.WORD:
            raise self.expected("a column type")
        self.advance()
        name = ALIASES.get(tok.value.lower(), tok.value.lower())
        try:
            if name == "double":
                self.accept("PRECISION")
                return HiveType("double")
            if name == "decimal":
                if self.accept_symbol("("):
                    precision = self.integer("the decimal precision", MAX_DECIMAL_PRECISION)
                    scale = 0
                    if self.accept_symbol(","):
                        scale = self.integer("the decimal scale", MAX_DECIMAL_PRECISION)
                    self.expect_symbol(")", " after the decimal precision and scale")
                    return decimal_type(precision, scale)
                return decimal_type()
            if name in ("varchar", "char"):
                self.expect_symbol("(", f" and a length after {name.upper()}")
                length = self.integer(f"the {name} length", MAX_VARCHAR_LENGTH if name == "varchar" else MAX_CHAR_LENGTH)
                self.expect_symbol(")", f" after the {name} length")
                return char_type(name, length)
        except HiveTypeError as exc:
            raise SqlSyntaxError(str(exc), tok.position) from None
        if name == "array":
            self.expect_symbol("<", " after ARRAY")
            element = self.hive_type()
            self.expect_symbol(">", " to close ARRAY<...>")
            return HiveType("array", children=(element,))
        if name == "map":
            self.expect_symbol("<", " after MAP")
            key = self.hive_type()
            if not key.is_primitive:
                raise SqlSyntaxError("map keys must be of a primitive type", tok.position)
            self.expect_symbol(",", " between the key and value types of MAP")
            value = self.hive_type()
            self.expect_symbol(">", " to close MAP<...>")
            return HiveType("map", children=(key, value))
        if name == "struct":
            self.expect_symbol("<", " after STRUCT")
            names: list[str] = []
            types: list[HiveType] = []
            while True:
                names.append(self.identifier("a struct field name").value)
                self.expect_symbol(":", " between a struct field name and its type")
                types.append(self.hive_type())
                if self.accept("COMMENT"):
                    self.string("the field comment")
                if self.accept_symbol(","):
                    continue
                self.expect_symbol(">", " or ',' in STRUCT<...>")
                return HiveType("struct", children=tuple(types), field_names=tuple(names))
        if name == "uniontype":
            self.expect_symbol("<", " after UNIONTYPE")
            members = [self.hive_type()]
            while self.accept_symbol(","):
                members.append(self.hive_type())
            self.expect_symbol(">", " to close UNIONTYPE<...>")
            return HiveType("uniontype", children=tuple(members))
        if name in PRIMITIVE_TYPES:
            return HiveType(name)
        raise SqlSyntaxError(
            f"unknown column type '{tok.value}' (Hive types: {', '.join(PRIMITIVE_TYPES)}, array, map, struct, "
            "uniontype)",
            tok.position,
        )

    def column_defs(self, what: str) -> tuple[ColumnDef, ...]:
        self.expect_symbol("(", f" to start the {what}")
        cols: list[ColumnDef] = []
        while True:
            name = self.identifier("a column name")
            col_type = self.hive_type()
            comment = self.string("the column comment") if self.accept("COMMENT") else None
            cols.append(ColumnDef(name, col_type, comment))
            if self.accept_symbol(","):
                continue
            self.expect_symbol(")", f" or ',' in the {what}")
            break
        seen: dict[str, Name] = {}
        for col in cols:
            if col.name.lower in seen:
                raise SqlSyntaxError(f"column '{col.name.value}' is defined twice", col.name.position)
            seen[col.name.lower] = col.name
        return tuple(cols)

    # ------------------------------------------------------------------ statements

    def statement(self) -> Statement:
        tok = self.tok
        if tok.kind is TokenKind.EOF:
            raise self.error("empty statement")
        if tok.kind is not TokenKind.WORD:
            raise self.expected(f"a statement ({', '.join(STATEMENT_KEYWORDS)})")
        head = tok.value.upper()
        handler: Callable[[Token], Statement] | None = {
            "CREATE": self.create,
            "DROP": self.drop,
            "USE": self.use,
            "SET": self.set_variable,
            "SHOW": self.show,
            "ALTER": self.alter,
            "MSCK": self.msck,
            "INSERT": self.insert,
            "LOAD": self.load,
            "ANALYZE": self.analyze,
            "DESCRIBE": self.describe,
            "DESC": self.describe,
            "SELECT": self.select,
            "EXPLAIN": self.explain,
            "UPDATE": self.update,
        }.get(head)
        if head == "UPDATE" and not self.peek().is_word("INDEX"):
            handler = None
        if handler is None:
            hint = _UNSUPPORTED_HINTS.get(head)
            if hint:
                raise self.error(hint)
            raise self.error(f"unknown statement {tok.describe()}; expected one of {', '.join(STATEMENT_KEYWORDS)}")
        self.advance()
        return handler(tok)

    def finish(self) -> None:
        self.accept_symbol(";")
        if self.tok.kind is not TokenKind.EOF:
            raise self.error(f"unexpected {self.tok.describe()} after the end of the statement")

    def create(self, start: Token) -> Statement:
        if self.accept("DATABASE") or self.accept("SCHEMA"):
            return self.create_database(start)
        if self.accept("INDEX"):
            return self.create_index(start)
        self.accept("TEMPORARY")  # nothing is temporary in a metastore; accepted for Hive scripts
        external = self.accept("EXTERNAL")
        if self.accept("TABLE"):
            return self.create_table(start, external)
        raise self.expected("DATABASE, TABLE or INDEX after CREATE" if not external else "TABLE after CREATE EXTERNAL")

    def if_not_exists(self) -> bool:
        if self.accept("IF"):
            self.expect("NOT")
            self.expect("EXISTS")
            return True
        return False

    def if_exists(self) -> bool:
        if self.accept("IF"):
            self.expect("EXISTS")
            return True
        return False

    def create_database(self, start: Token) -> CreateDatabase:
        if_not_exists = self.if_not_exists()
        name = self.identifier("a database name")
        comment = location = None
        props: dict[str, str] = {}
        seen: set[str] = set()
        while self.tok.kind is TokenKind.WORD:
            clause = self.tok
            if self.accept("COMMENT"):
                comment = self.string("the database comment")
            elif self.accept("LOCATION"):
                location = self.string("the database location")
            elif self.accept("WITH", "DBPROPERTIES"):
                props = self.properties()
            else:
                raise self.expected("COMMENT, LOCATION, WITH DBPROPERTIES or the end of the statement")
            key = clause.value.upper()
            if key in seen:
                raise self.error(f"{key} is given twice", clause)
            seen.add(key)
        return CreateDatabase(start.position, name, if_not_exists, comment, location, props)

    def create_table(self, start: Token, external: bool) -> CreateTable:
        if_not_exists = self.if_not_exists()
        table = self.table_name()
        if self.tok.is_word("AS", "LIKE"):
            raise self.error(f"CREATE TABLE ... {self.tok.value.upper()} is not supported; list the columns")
        columns = self.column_defs("column list")
        comment = location = None
        stored_as: Name | None = None
        partition_columns: tuple[ColumnDef, ...] = ()
        props: dict[str, str] = {}
        seen: set[str] = set()
        while self.tok.kind is TokenKind.WORD:
            clause = self.tok
            if self.accept("COMMENT"):
                key = "COMMENT"
                comment = self.string("the table comment")
            elif self.accept("PARTITIONED"):
                key = "PARTITIONED BY"
                self.expect("BY")
                partition_columns = self.column_defs("partition column list")
            elif self.accept("STORED"):
                key = "STORED AS"
                self.expect("AS")
                stored_as = self.identifier("a storage format (ORC)")
            elif self.accept("LOCATION"):
                key = "LOCATION"
                location = self.string("the table location")
            elif self.accept("TBLPROPERTIES"):
                key = "TBLPROPERTIES"
                props = self.properties()
            elif clause.is_word("CLUSTERED", "SORTED", "SKEWED", "ROW"):
                raise self.error(
                    f"{clause.value.upper()} ... is not supported (tables here are ORC, without buckets or skew)"
                )
            else:
                raise self.expected(
                    "COMMENT, PARTITIONED BY, STORED AS, LOCATION, TBLPROPERTIES or the end of the statement"
                )
            if key in seen:
                raise self.error(f"{key} is given twice", clause)
            seen.add(key)
        data_names = {c.name.lower for c in columns}
        for col in partition_columns:
            if col.name.lower in data_names:
                raise SqlSyntaxError(
                    f"partition column '{col.name.value}' is also a data column (Hive keeps them apart)",
                    col.name.position,
                )
            if not col.type.is_primitive:
                raise SqlSyntaxError(
                    f"partition column '{col.name.value}' must be of a primitive type, not {col.type}",
                    col.name.position,
                )
        return CreateTable(
            start.position, table, columns, external, if_not_exists, comment, partition_columns, stored_as,
            location, props,
        )

    def drop(self, start: Token) -> Statement:
        if self.accept("DATABASE") or self.accept("SCHEMA"):
            if_exists = self.if_exists()
            name = self.identifier("a database name")
            cascade = False
            if self.accept("CASCADE"):
                cascade = True
            else:
                self.accept("RESTRICT")
            return DropDatabase(start.position, name, if_exists, cascade)
        if self.accept("TABLE"):
            if_exists = self.if_exists()
            table = self.table_name()
            purge = self.accept("PURGE")
            return DropTable(start.position, table, if_exists, purge)
        if self.accept("INDEX"):
            if_exists = self.if_exists()
            name = self.identifier("an index name")
            where = self.where_clause()
            return DropIndex(start.position, name, if_exists, where)
        raise self.expected("DATABASE, TABLE or INDEX after DROP")

    def use(self, start: Token) -> Statement:
        return UseDatabase(start.position, self.identifier("a database name"))

    def _raw_text(self, stop: str | None) -> str:
        """The source text of the tokens up to ``stop`` (a symbol), ';' or the end, as written (strings unquoted)."""
        parts: list[str] = []
        while self.tok.kind is not TokenKind.EOF and not (
            self.tok.kind is TokenKind.SYMBOL and self.tok.value in (";", stop)
        ):
            tok = self.advance()
            parts.append(tok.value if tok.kind in (TokenKind.STRING, TokenKind.QUOTED) else tok.text)
        return "".join(parts)

    def set_variable(self, start: Token) -> Statement:
        key = self._raw_text("=")
        if not key:
            if self.tok.kind is TokenKind.SYMBOL and self.tok.value == "=":
                raise self.expected("a setting name before '='")
            return SetVariable(start.position)
        if not self.accept_symbol("="):
            return SetVariable(start.position, key)
        value = self._raw_text(None)
        if not value:
            raise self.expected(f"a value for {key} after '='")
        return SetVariable(start.position, key, value)

    def like_pattern(self) -> str | None:
        if self.accept("LIKE"):
            return self.string("a pattern (a string literal) after LIKE")
        if self.tok.kind is TokenKind.STRING:
            return self.string()
        return None

    def show(self, start: Token) -> Statement:
        if self.accept("DATABASES") or self.accept("SCHEMAS"):
            return ShowDatabases(start.position, self.like_pattern())
        if self.accept("TABLES"):
            database = None
            if self.accept("IN") or self.accept("FROM"):
                database = self.identifier("a database name")
            return ShowTables(start.position, database, self.like_pattern())
        if self.accept("PARTITIONS"):
            table = self.table_name()
            spec = None
            if self.tok.is_word("PARTITION"):
                spec = self.partition_spec(allow_bare_keys=False, what="SHOW PARTITIONS")
            return ShowPartitions(start.position, table, spec)
        if self.accept("TBLPROPERTIES"):
            table = self.table_name()
            key = None
            if self.accept_symbol("("):
                key = self.string("a property name (a string literal)")
                self.expect_symbol(")", " after the property name")
            return ShowTblProperties(start.position, table, key)
        if self.accept("INDEX") or self.accept("INDEXES"):
            name = self.identifier("an index name") if self.tok.kind in (TokenKind.WORD, TokenKind.QUOTED) else None
            return ShowIndex(start.position, name)
        raise self.expected("DATABASES, TABLES, PARTITIONS, TBLPROPERTIES or INDEX after SHOW")

    def alter(self, start: Token) -> Statement:
        self.expect("TABLE")
        table = self.table_name()
        if self.accept("ADD"):
            if_not_exists = self.if_not_exists()
            if not self.tok.is_word("PARTITION"):
                raise self.expected("PARTITION after ALTER TABLE ... ADD")
            parts: list[tuple[PartitionSpec, str | None]] = []
            while self.tok.is_word("PARTITION"):
                spec = self.partition_spec(allow_bare_keys=False, what="ADD PARTITION")
                location = self.string("the partition location") if self.accept("LOCATION") else None
                parts.append((spec, location))
            return AddPartitions(start.position, table, tuple(parts), if_not_exists)
        if self.accept("DROP"):
            if_exists = self.if_exists()
            specs = [self.partition_spec(allow_bare_keys=False, what="DROP PARTITION")]
            while self.accept_symbol(","):
                specs.append(self.partition_spec(allow_bare_keys=False, what="DROP PARTITION"))
            purge = self.accept("PURGE")
            return DropPartitions(start.position, table, tuple(specs), if_exists, purge)
        if self.accept("SET"):
            self.expect("TBLPROPERTIES")
            return AlterTableProperties(start.position, table, self.properties())
        raise self.expected("ADD PARTITION, DROP PARTITION or SET TBLPROPERTIES after ALTER TABLE name")

    def msck(self, start: Token) -> Statement:
        repair = self.accept("REPAIR")
        self.expect("TABLE")
        table = self.table_name()
        add, drop = True, False
        if self.accept("ADD"):
            self.expect("PARTITIONS")
        elif self.accept("DROP"):
            self.expect("PARTITIONS")
            add, drop = False, True
        elif self.accept("SYNC"):
            self.expect("PARTITIONS")
            add, drop = True, True
        return MsckRepair(start.position, table, repair, add, drop)

    def insert(self, start: Token) -> Statement:
        if self.accept("OVERWRITE"):
            overwrite = True
            self.expect("TABLE")
        else:
            overwrite = False
            self.expect("INTO")
            self.accept("TABLE")
        table = self.table_name()
        spec = None
        if self.tok.is_word("PARTITION"):
            spec = self.partition_spec(allow_bare_keys=True, what="INSERT")
        columns = None
        if self.accept_symbol("("):
            columns = self.name_list("a column name")
            self.expect_symbol(")", " or ',' in the column list")
        if self.tok.is_word("SELECT", "FROM", "WITH", "TABLE"):
            raise self.error("INSERT ... SELECT is not supported; use INSERT ... VALUES or LOAD DATA")
        self.expect("VALUES")
        rows: list[tuple[Literal, ...]] = []
        while True:
            self.expect_symbol("(", " to start a row of VALUES")
            row = [self.literal()]
            while self.accept_symbol(","):
                row.append(self.literal())
            self.expect_symbol(")", " or ',' in a row of VALUES")
            rows.append(tuple(row))
            if not self.accept_symbol(","):
                break
        return InsertValues(start.position, table, tuple(rows), spec, columns, overwrite)

    def load(self, start: Token) -> Statement:
        self.expect("DATA")
        local = self.accept("LOCAL")
        self.expect("INPATH")
        path_token = self.tok
        path = self.string("the input path (a string literal)")
        overwrite = self.accept("OVERWRITE")
        self.expect("INTO")
        self.expect("TABLE")
        table = self.table_name()
        spec = None
        if self.tok.is_word("PARTITION"):
            spec = self.partition_spec(allow_bare_keys=False, what="LOAD DATA")
        return LoadData(start.position, path, path_token.position, table, local, overwrite, spec)

    def analyze(self, start: Token) -> Statement:
        self.expect("TABLE")
        table = self.table_name()
        spec = None
        if self.tok.is_word("PARTITION"):
            spec = self.partition_spec(allow_bare_keys=True, what="ANALYZE")
        self.expect("COMPUTE", "STATISTICS")
        if self.accept("NOSCAN"):
            return Analyze(start.position, table, AnalyzeMode.NOSCAN, spec)
        if self.accept("FOR"):
            if self.accept("ALL"):
                self.expect("COLUMNS")
                return Analyze(start.position, table, AnalyzeMode.COLUMNS, spec)
            self.expect("COLUMNS")
            columns = None
            if self.tok.kind in (TokenKind.WORD, TokenKind.QUOTED):
                columns = self.name_list("a column name")
            return Analyze(start.position, table, AnalyzeMode.COLUMNS, spec, columns)
        return Analyze(start.position, table, AnalyzeMode.BASIC, spec)

    def describe(self, start: Token) -> Statement:
        if self.accept("DATABASE") or self.accept("SCHEMA"):
            extended = self.accept("EXTENDED")
            return DescribeDatabase(start.position, self.identifier("a database name"), extended)
        detail = None
        if self.tok.is_word("EXTENDED", "FORMATTED") and self.peek().kind in (TokenKind.WORD, TokenKind.QUOTED):
            detail = self.advance().value.lower()
        table = self.table_name()
        spec = None
        if self.tok.is_word("PARTITION") and self.peek().is_symbol("("):
            spec = self.partition_spec(allow_bare_keys=False, what="DESCRIBE")
        column = None
        if self.tok.kind in (TokenKind.WORD, TokenKind.QUOTED):
            column = self.identifier("a column name")
        return Describe(start.position, table, detail, spec, column)


    # ------------------------------------------------------------------ indexes (issue 11)

    def create_index(self, start: Token) -> CreateIndex:
        if_not_exists = self.if_not_exists()
        name = self.identifier("an index name")
        self.expect("USING")
        kind_token = self.tok
        kind = self.identifier("an index type (BTREE, BLOOM or MINMAX)")
        if kind.lower not in INDEX_KINDS:
            raise self.error(f"unknown index type '{kind.value}' (known: BTREE, BLOOM, MINMAX)", kind_token)
        self.expect("ON")
        table = self.table_name()
        self.expect_symbol("(", " and the indexed column")
        column = self.identifier("a column name")
        if self.tok.is_symbol(","):
            raise self.error("an index is on one column; create one index per column")
        self.expect_symbol(")", " after the indexed column")
        properties: dict[str, str] = {}
        positions: dict[str, Position] = {}
        if self.accept("WITH"):
            self.expect_symbol("(", " to start the index properties")
            while True:
                key_token = self.tok
                key = self.string('a property name ("level", "bloom.fpp")')
                self.expect_symbol("=", " between a property name and its value")
                value_token = self.tok
                if value_token.kind is TokenKind.STRING:
                    value = self.string()
                elif value_token.kind in (TokenKind.NUMBER, TokenKind.WORD):
                    value = self.advance().value
                else:
                    raise self.expected(f"a value for {key}")
                if key.lower() in positions:
                    raise self.error(f"property {key} is given twice", key_token)
                properties[key.lower()] = value
                positions[key.lower()] = value_token.position
                if self.accept_symbol(","):
                    continue
                self.expect_symbol(")", " or ',' in the index properties")
                break
        where = self.where_clause()
        return CreateIndex(start.position, name, kind, table, column, properties, positions, where, if_not_exists)

    def update(self, start: Token) -> Statement:
        self.expect("INDEX")
        name = self.identifier("an index name")
        return UpdateIndex(start.position, name, self.where_clause())

    def select(self, start: Token) -> Select:
        columns: tuple[Name, ...] | None
        count = False
        if self.accept_symbol("*"):
            columns = None
        elif self.tok.is_word("COUNT") and self.peek().is_symbol("("):
            self.advance()
            self.advance()
            self.expect_symbol("*", " in count(*) (other aggregates are not supported)")
            self.expect_symbol(")", " after count(*")
            count, columns = True, ()
        else:
            columns = self.name_list("a column name, * or count(*)")
        self.expect("FROM")
        table = self.table_name()
        where = self.where_clause()
        limit = None
        if self.accept("LIMIT"):
            limit = self.integer("the row count after LIMIT", MAX_LIMIT)
        if self.tok.is_word("GROUP", "ORDER", "JOIN", "HAVING", "UNION") or self.tok.is_symbol(","):
            raise self.error(f"{self.tok.value.upper()} is not supported: SELECT reads one table, optionally "
                             "filtered and limited")
        return Select(start.position, table, columns, count, where, limit)

    def explain(self, start: Token) -> Explain:
        select_token = self.tok
        self.expect("SELECT")
        return Explain(start.position, self.select(select_token))

    def where_clause(self) -> pred.Expr | None:
        if not self.accept("WHERE"):
            return None
        return self.predicate()

    # A WHERE clause becomes the split filter's predicate tree; every node keeps its position in `where`.

    def predicate(self) -> pred.Expr:
        start = self.tok
        args = [self.conjunction()]
        while self.accept("OR"):
            args.append(self.conjunction())
        return args[0] if len(args) == 1 else self._node(pred.Or, start, tuple(args))

    def conjunction(self) -> pred.Expr:
        start = self.tok
        args = [self.negation()]
        while self.accept("AND"):
            args.append(self.negation())
        return args[0] if len(args) == 1 else self._node(pred.And, start, tuple(args))

    def negation(self) -> pred.Expr:
        start = self.tok
        if self.accept("NOT"):
            return self._node(pred.Not, start, self.negation())
        return self.condition()

    def _node(self, cls: type, token: Token, *args: object) -> pred.Expr:
        try:
            node: pred.Expr = cls(*args, where=token.position)
        except PredicateError as exc:
            raise SqlSyntaxError(exc.message, token.position) from None
        return node

    def _value(self) -> pred.Value:
        lit = self.literal()
        kind = {
            LiteralKind.NULL: pred.ValueKind.NULL, LiteralKind.BOOLEAN: pred.ValueKind.BOOLEAN,
            LiteralKind.INTEGER: pred.ValueKind.INTEGER, LiteralKind.DECIMAL: pred.ValueKind.DECIMAL,
            LiteralKind.STRING: pred.ValueKind.STRING, LiteralKind.DATE: pred.ValueKind.DATE,
            LiteralKind.TIMESTAMP: pred.ValueKind.TIMESTAMP,
        }[lit.kind]
        if lit.kind is LiteralKind.DECIMAL and lit.suffix == "D":
            kind = pred.ValueKind.DOUBLE
        try:
            return pred.Value(kind, lit.text, where=lit.position)
        except PredicateError as exc:
            raise SqlSyntaxError(exc.message, lit.position) from None

    def _comparison_operator(self) -> str | None:
        """=, ==, !=, <>, <, <=, >, >= (two-character operators are two adjacent symbols)."""
        tok, nxt = self.tok, self.peek()
        adjacent = nxt.kind is TokenKind.SYMBOL and nxt.position.offset == tok.end
        pair = tok.value + nxt.value if tok.kind is TokenKind.SYMBOL and adjacent else ""
        if pair in ("<=", ">=", "<>", "!=", "=="):
            self.advance()
            self.advance()
            return {"<>": "!=", "==": "="}.get(pair, pair)
        if tok.is_symbol("=", "<", ">"):
            self.advance()
            return tok.value
        return None

    def condition(self) -> pred.Expr:
        start = self.tok
        if self.accept_symbol("("):
            inner = self.predicate()
            self.expect_symbol(")", " to close the parenthesis")
            return inner
        if start.is_word("TRUE", "FALSE") and not self._column_follows():
            self.advance()
            return self._node(pred.Const, start, start.is_word("TRUE"))
        if start.kind in (TokenKind.WORD, TokenKind.QUOTED) and not start.is_word("NULL", "DATE", "TIMESTAMP"):
            column = self.advance().value
            return self._column_condition(start, column)
        # a literal first: `5 < c` is `c > 5`
        value = self._value()
        op = self._comparison_operator()
        if op is None:
            raise self.expected("a comparison operator (=, !=, <>, <, <=, >, >=)")
        column_token = self.tok
        if column_token.kind not in (TokenKind.WORD, TokenKind.QUOTED):
            raise self.expected("a column name (comparisons are between a column and a constant)")
        self.advance()
        return self._node(pred.Compare, start, column_token.value, pred.FLIPPED[op], value)

    def _column_follows(self) -> bool:
        nxt = self.peek()
        return nxt.is_word("IS", "BETWEEN", "IN", "NOT") or nxt.is_symbol("=", "<", ">", "!")

    def _column_condition(self, start: Token, column: str) -> pred.Expr:
        if self.accept("IS"):
            negated = self.accept("NOT")
            self.expect("NULL")
            node = self._node(pred.IsNull, start, column)
            return self._node(pred.Not, start, node) if negated else node
        negated = self.accept("NOT")
        if self.accept("BETWEEN"):
            low = self._value()
            self.expect("AND")
            high = self._value()
            node = self._node(pred.Between, start, column, low, high)
        elif self.accept("IN"):
            self.expect_symbol("(", " after IN")
            values = [self._value()]
            while self.accept_symbol(","):
                values.append(self._value())
            self.expect_symbol(")", " or ',' in the IN list")
            node = self._node(pred.In, start, column, tuple(values))
        elif negated:
            raise self.expected("BETWEEN or IN after NOT")
        else:
            op = self._comparison_operator()
            if op is None:
                raise self.expected(f"a comparison after column '{column}' (=, !=, <, <=, >, >=, BETWEEN, IN, IS NULL)")
            if self.tok.kind in (TokenKind.WORD, TokenKind.QUOTED) and not self.tok.is_word(
                "NULL", "TRUE", "FALSE", "DATE", "TIMESTAMP"
            ):
                raise self.error("comparisons are between a column and a constant, not two columns")
            node = self._node(pred.Compare, start, column, op, self._value())
        return self._node(pred.Not, start, node) if negated else node


def parse_statement(text: str) -> Statement:
    """Parse one statement (a trailing `;` is allowed); SqlSyntaxError with the position otherwise."""
    parser = _Parser(tokenize(text))
    statement = parser.statement()
    parser.finish()
    return statement


def iter_script(text: str) -> Iterator[ParsedStatement]:
    """The statements of a script (split at `;`) one at a time, so a caller runs those before a bad one.

    Positions are in the whole script's lines. The script is tokenized first: an unterminated string or
    comment is reported before any statement; a statement that does not parse raises when it is reached."""
    tokens = tokenize(text)
    group: list[Token] = []
    for tok in tokens:
        if tok.kind is TokenKind.EOF or tok.is_symbol(";"):
            if group:
                parser = _Parser([*group, Token(TokenKind.EOF, "", "", tok.position, tok.position.offset)])
                statement = parser.statement()
                parser.finish()
                source = text[group[0].position.offset : group[-1].end]
                yield ParsedStatement(statement, source, group[0].position)
            group = []
            continue
        group.append(tok)


def parse_script(text: str) -> list[ParsedStatement]:
    """Every statement of a script; SqlSyntaxError at the first one that does not parse."""
    return list(iter_script(text))


def parse_predicate(text: str) -> pred.Expr:
    """A WHERE condition in the shell's syntax (`id = 5 AND s IN ('a', 'b')`) as the split filter's predicate
    tree; SqlSyntaxError with the position otherwise."""
    parser = _Parser(tokenize(text))
    if parser.tok.kind is TokenKind.EOF:
        raise parser.error("empty predicate")
    expr = parser.predicate()
    parser.finish()
    return expr
