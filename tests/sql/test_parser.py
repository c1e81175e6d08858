"""The tokenizer and parser: every statement form, Hive's literal rules, and one-line errors with positions."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from metastore.sql.errors import Position, SqlSyntaxError
from metastore.sql.lexer import TokenKind, split_statements, statement_is_complete, tokenize
from metastore.sql.parser import KEYWORDS, parse_script, parse_statement
from metastore.sql.statements import (
    AddPartitions,
    AlterTableProperties,
    Analyze,
    AnalyzeMode,
    CreateDatabase,
    CreateTable,
    Describe,
    DescribeDatabase,
    DropDatabase,
    DropPartitions,
    DropTable,
    InsertValues,
    LiteralKind,
    LoadData,
    MsckRepair,
    ShowDatabases,
    ShowPartitions,
    ShowTables,
    ShowTblProperties,
    UseDatabase,
)

# ------------------------------------------------------------------------------------------ tokens


def test_string_literals_follow_hive_escapes() -> None:
    tokens = tokenize(r"""'it\'s' "a\tb" '\u0041\101' 'x\%y\_z' '\Z\0' 'back\\slash' 'q\q'""")
    values = [t.value for t in tokens if t.kind is TokenKind.STRING]
    assert values == ["it's", "a\tb", "AA", "x\\%y\\_z", "\x1a\x00", "back\\slash", "qq"]


def test_adjacent_string_literals_concatenate() -> None:
    st_ = parse_statement("SHOW TABLES LIKE 'ab' 'c*'")
    assert isinstance(st_, ShowTables) and st_.pattern == "abc*"


def test_numbers_and_identifiers_starting_with_digits() -> None:
    tokens = tokenize("1 2.5 10L 3S 4Y 1.5BD 2D 1e3 1e-3 .5 1st_col")
    kinds = [(t.kind, t.value, t.suffix) for t in tokens[:-1]]
    assert kinds == [
        (TokenKind.NUMBER, "1", ""), (TokenKind.NUMBER, "2.5", ""), (TokenKind.NUMBER, "10", "L"),
        (TokenKind.NUMBER, "3", "S"), (TokenKind.NUMBER, "4", "Y"), (TokenKind.NUMBER, "1.5", "BD"),
        (TokenKind.NUMBER, "2", "D"), (TokenKind.NUMBER, "1e3", ""), (TokenKind.NUMBER, "1e-3", ""),
        (TokenKind.NUMBER, ".5", ""), (TokenKind.WORD, "1st_col", ""),
    ]


def test_backquoted_identifiers_keep_case_spaces_and_doubled_backquotes() -> None:
    (tok, _eof) = tokenize("`My ``odd`` name`")
    assert tok.kind is TokenKind.QUOTED and tok.value == "My `odd` name"


def test_comments_are_skipped_and_positions_count_lines() -> None:
    tokens = tokenize("-- first line\nSHOW /* inline\n comment */ TABLES")
    assert [(t.value, t.position.line, t.position.column) for t in tokens[:-1]] == [("SHOW", 2, 1), ("TABLES", 3, 13)]


def test_split_statements_ignores_semicolons_in_strings_and_comments() -> None:
    text = "USE a; SHOW TABLES LIKE ';'; -- ; not here\n DESCRIBE `x;y`;;  "
    pieces = [text[s:e] for s, e in split_statements(text)]
    assert pieces == ["USE a", "SHOW TABLES LIKE ';'", "DESCRIBE `x;y`"]


@pytest.mark.parametrize(
    ("text", "complete"),
    [
        ("SHOW TABLES;", True),
        ("SHOW TABLES", False),
        ("SHOW TABLES LIKE ';", False),  # inside an unterminated string
        ("SHOW TABLES; -- trailing comment", True),
        ("SHOW /* ; */ TABLES", False),
        ("", False),
    ],
)
def test_statement_is_complete(text: str, complete: bool) -> None:
    assert statement_is_complete(text) is complete


# ------------------------------------------------------------------------------------------ statements


def test_create_database_with_every_clause() -> None:
    s = parse_statement(
        "create schema if not exists Sales comment 'the sales' location '/data/sales' "
        "with dbproperties ('owner'='team', 'k'='v');"
    )
    assert isinstance(s, CreateDatabase)
    assert (s.name.value, s.if_not_exists, s.comment, s.location) == ("Sales", True, "the sales", "/data/sales")
    assert s.properties == {"owner": "team", "k": "v"}


def test_create_table_with_every_primitive_type_and_clause() -> None:
    s = parse_statement(
        """CREATE EXTERNAL TABLE IF NOT EXISTS sales.orders (
             a tinyint, b smallint, c int, d integer, e bigint, f float, g double, h double precision,
             i decimal, j decimal(12), k decimal(38,10), l numeric(5,2), m string, n varchar(20), o char(3),
             p boolean, q date, r timestamp, s binary COMMENT 'raw bytes',
             t array<int>, u map<string,array<decimal(4,1)>>, v struct<x:int,`y z`:string>, w uniontype<int,string>)
           COMMENT 'orders'
           PARTITIONED BY (ds string, hr int COMMENT 'hour')
           STORED AS ORC
           LOCATION '/data/orders'
           TBLPROPERTIES ('orc.compress'='ZSTD', 'orc.bloom.filter.columns'='m')"""
    )
    assert isinstance(s, CreateTable)
    assert s.external and s.if_not_exists
    assert str(s.table) == "sales.orders"
    assert [str(c.type) for c in s.columns] == [
        "tinyint", "smallint", "int", "int", "bigint", "float", "double", "double", "decimal(10,0)",
        "decimal(12,0)", "decimal(38,10)", "decimal(5,2)", "string", "varchar(20)", "char(3)", "boolean", "date",
        "timestamp", "binary", "array<int>", "map<string,array<decimal(4,1)>>", "struct<x:int,y z:string>",
        "uniontype<int,string>",
    ]
    assert s.columns[18].comment == "raw bytes"
    assert [(c.name.value, str(c.type), c.comment) for c in s.partition_columns] == [
        ("ds", "string", None), ("hr", "int", "hour"),
    ]
    assert s.stored_as is not None and s.stored_as.value == "ORC"
    assert s.comment == "orders" and s.location == "/data/orders"
    assert s.properties == {"orc.compress": "ZSTD", "orc.bloom.filter.columns": "m"}


def test_create_table_clauses_in_any_order() -> None:
    s = parse_statement("create table t (a int) tblproperties ('x'='1') stored as orc partitioned by (p string)")
    assert isinstance(s, CreateTable) and s.properties == {"x": "1"} and len(s.partition_columns) == 1


def test_drop_use_and_show_statements() -> None:
    assert parse_statement("DROP DATABASE IF EXISTS x CASCADE") == DropDatabase(Position(1, 1, 0), _name("x", 25), True, True)
    d = parse_statement("drop schema y restrict")
    assert isinstance(d, DropDatabase) and not d.cascade and not d.if_exists
    t = parse_statement("DROP TABLE IF EXISTS db.t PURGE")
    assert isinstance(t, DropTable) and t.if_exists and t.purge and str(t.table) == "db.t"
    u = parse_statement("use `odd db`")
    assert isinstance(u, UseDatabase) and u.name.value == "odd db"
    assert parse_statement("SHOW DATABASES").pattern is None
    sd = parse_statement("show schemas like 'sa*'")
    assert isinstance(sd, ShowDatabases) and sd.pattern == "sa*"
    stt = parse_statement("SHOW TABLES FROM sales 'o*'")
    assert isinstance(stt, ShowTables) and stt.database is not None and stt.database.value == "sales"
    assert stt.pattern == "o*"
    sp = parse_statement("SHOW PARTITIONS sales.orders PARTITION (ds='2024-01-01')")
    assert isinstance(sp, ShowPartitions) and sp.spec is not None and sp.spec.items[0].value.text == "2024-01-01"
    tp = parse_statement("SHOW TBLPROPERTIES t ('orc.compress')")
    assert isinstance(tp, ShowTblProperties) and tp.key == "orc.compress"
    assert parse_statement("SHOW TBLPROPERTIES t").key is None


def _name(value: str, column: int):  # Name with a position on line 1
    from metastore.sql.statements import Name

    return Name(value, Position(1, column, column - 1))


def test_alter_table_partitions_and_properties() -> None:
    a = parse_statement(
        "ALTER TABLE t ADD IF NOT EXISTS PARTITION (ds='1', hr=2) LOCATION '/x' PARTITION (ds='1', hr=3)"
    )
    assert isinstance(a, AddPartitions) and a.if_not_exists
    assert [(len(spec.items), loc) for spec, loc in a.partitions] == [(2, "/x"), (2, None)]
    assert a.partitions[0][0].items[1].value.kind is LiteralKind.INTEGER
    d = parse_statement("alter table t drop if exists partition (ds='1'), partition (ds='2') purge")
    assert isinstance(d, DropPartitions) and d.if_exists and d.purge and len(d.specs) == 2
    p = parse_statement("ALTER TABLE t SET TBLPROPERTIES ('orc.compress'='SNAPPY')")
    assert isinstance(p, AlterTableProperties) and p.properties == {"orc.compress": "SNAPPY"}


@pytest.mark.parametrize(
    ("text", "repair", "add", "drop"),
    [
        ("MSCK REPAIR TABLE t", True, True, False),
        ("msck table t", False, True, False),
        ("MSCK REPAIR TABLE t ADD PARTITIONS", True, True, False),
        ("MSCK REPAIR TABLE t DROP PARTITIONS", True, False, True),
        ("MSCK REPAIR TABLE t SYNC PARTITIONS", True, True, True),
    ],
)
def test_msck(text: str, repair: bool, add: bool, drop: bool) -> None:
    s = parse_statement(text)
    assert isinstance(s, MsckRepair) and (s.repair, s.add, s.drop) == (repair, add, drop)


def test_insert_values_with_every_literal_kind() -> None:
    s = parse_statement(
        "INSERT INTO TABLE t PARTITION (ds='x', hr) (a, b, hr) VALUES "
        "(1, -2.5, 'it''s'), (NULL, TRUE, DATE '2024-01-01'), (+7L, 1.5BD, TIMESTAMP '2024-01-01 10:00:00')"
    )
    assert isinstance(s, InsertValues) and not s.overwrite
    assert s.columns is not None and [c.value for c in s.columns] == ["a", "b", "hr"]
    assert s.spec is not None and s.spec.items[1].value is None  # dynamic partition column
    kinds = [[(lit.kind, lit.text, lit.suffix) for lit in row] for row in s.rows]
    assert kinds[0][:2] == [(LiteralKind.INTEGER, "1", ""), (LiteralKind.DECIMAL, "-2.5", "")]
    # Hive concatenates adjacent literals: 'it' 's' -> "its"
    assert kinds[0][2] == (LiteralKind.STRING, "its", "")
    assert kinds[1] == [(LiteralKind.NULL, None, ""), (LiteralKind.BOOLEAN, "true", ""),
                        (LiteralKind.DATE, "2024-01-01", "")]
    assert kinds[2] == [(LiteralKind.INTEGER, "7", "L"), (LiteralKind.DECIMAL, "1.5", "BD"),
                        (LiteralKind.TIMESTAMP, "2024-01-01 10:00:00", "")]
    o = parse_statement("insert overwrite table t values (1)")
    assert isinstance(o, InsertValues) and o.overwrite


def test_load_data() -> None:
    s = parse_statement("LOAD DATA LOCAL INPATH '/tmp/a.csv' OVERWRITE INTO TABLE db.t PARTITION (ds='1')")
    assert isinstance(s, LoadData)
    assert (s.path, s.local, s.overwrite, str(s.table)) == ("/tmp/a.csv", True, True, "db.t")
    assert s.path_position == Position(1, 24, 23)
    r = parse_statement("load data inpath 'x' into table t")
    assert isinstance(r, LoadData) and not r.local and not r.overwrite and r.spec is None


@pytest.mark.parametrize(
    ("text", "mode", "columns", "spec_keys"),
    [
        ("ANALYZE TABLE t COMPUTE STATISTICS", AnalyzeMode.BASIC, None, None),
        ("ANALYZE TABLE t COMPUTE STATISTICS NOSCAN", AnalyzeMode.NOSCAN, None, None),
        ("analyze table db.t compute statistics for columns", AnalyzeMode.COLUMNS, None, None),
        ("ANALYZE TABLE t COMPUTE STATISTICS FOR ALL COLUMNS", AnalyzeMode.COLUMNS, None, None),
        (
            "ANALYZE TABLE sales.orders PARTITION (ds='2024-01-01') COMPUTE STATISTICS FOR COLUMNS price, customer;",
            AnalyzeMode.COLUMNS, ["price", "customer"], [("ds", "2024-01-01")],
        ),
        ("ANALYZE TABLE t PARTITION (ds, hr=5) COMPUTE STATISTICS", AnalyzeMode.BASIC, None, [("ds", None), ("hr", "5")]),
    ],
)
def test_analyze(text: str, mode: AnalyzeMode, columns: list[str] | None, spec_keys: list | None) -> None:
    s = parse_statement(text)
    assert isinstance(s, Analyze) and s.mode is mode
    assert (None if s.columns is None else [c.value for c in s.columns]) == columns
    got = None if s.spec is None else [(i.key.value, None if i.value is None else i.value.text) for i in s.spec.items]
    assert got == spec_keys


def test_describe_forms() -> None:
    plain = parse_statement("DESCRIBE t")
    assert isinstance(plain, Describe) and plain.detail is None and plain.column is None
    ext = parse_statement("desc extended db.t")
    assert isinstance(ext, Describe) and ext.detail == "extended"
    col = parse_statement("DESCRIBE FORMATTED sales.orders PARTITION (ds='1') price")
    assert isinstance(col, Describe) and col.detail == "formatted" and col.column is not None
    assert col.column.value == "price" and col.spec is not None
    named_formatted = parse_statement("DESCRIBE formatted")  # a table called `formatted`
    assert isinstance(named_formatted, Describe) and named_formatted.table.table.value == "formatted"
    db = parse_statement("DESCRIBE DATABASE EXTENDED sales")
    assert isinstance(db, DescribeDatabase) and db.extended


def test_script_positions_are_in_script_lines() -> None:
    script = "USE a;\n\n  SHOW TABLES;\nDESCRIBE t"
    parsed = parse_script(script)
    assert [(p.text, p.position.line, p.position.column) for p in parsed] == [
        ("USE a", 1, 1), ("SHOW TABLES", 3, 3), ("DESCRIBE t", 4, 1),
    ]
    with pytest.raises(SqlSyntaxError) as info:
        parse_script("USE a;\nSHOW TABLEZ;")
    assert str(info.value) == "line 2:6: expected DATABASES, TABLES, PARTITIONS, TBLPROPERTIES or INDEX after SHOW, found 'TABLEZ'"


# ------------------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("CREATE TABEL t (a int)", "line 1:8: expected DATABASE, TABLE or INDEX after CREATE, found 'TABEL'"),
        ("create table t (a int", "line 1:22: expected ')' or ',' in the column list, found end of input"),
        ("create table t (a in)", "line 1:19: unknown column type 'in'"),
        ("create table t (a decimal(40,2))", "line 1:19: decimal precision must be between 1 and 38, got 40"),
        ("create table t (a decimal(5,6))", "line 1:19: decimal scale must be between 0 and the precision 5, got 6"),
        ("create table t (a varchar(0))", "line 1:19: varchar length must be between 1 and 65535, got 0"),
        ("create table t (a char(256))", "line 1:19: char length must be between 1 and 255, got 256"),
        ("create table t (a int, A string)", "line 1:24: column 'A' is defined twice"),
        ("create table t (a int) partitioned by (a string)", "line 1:40: partition column 'a' is also a data column"),
        ("create table t (a int) comment 'x' comment 'y'", "line 1:36: COMMENT is given twice"),
        ("create table t (a int) clustered by (a) into 4 buckets", "line 1:24: CLUSTERED ... is not supported"),
        ("SELECT * FROM t ORDER BY a", "line 1:17: ORDER is not supported"),
        ("UPDATE t SET a = 1", "line 1:1: UPDATE is supported for indexes only"),
        ("FROB t", "line 1:1: unknown statement 'FROB'"),
        ("insert into t values (1,", "line 1:25: expected a constant"),
        ("insert into t values (1) (2)", "line 1:26: unexpected '(' after the end of the statement"),
        ("insert into t select 1", "line 1:15: INSERT ... SELECT is not supported"),
        ("insert into t values (- 'x')", "line 1:25: expected a number after '-'"),
        ("show partitions", "line 1:16: expected a table name, found end of input"),
        ("analyze table t compute stats", "line 1:25: expected STATISTICS, found 'stats'"),
        ("analyze table t partition (ds='1', ds='2') compute statistics", "line 1:36: partition column 'ds' is given twice"),
        ("alter table t add partition (ds)", "line 1:32: partition column 'ds' needs a value in ADD PARTITION"),
        ("alter table t add partition (ds=NULL)", "line 1:33: partition column 'ds' cannot be NULL"),
        ("load data local inpath x into table t", "line 1:24: expected the input path (a string literal), found 'x'"),
        ("show tables like 'x", "line 1:18: unterminated string literal"),
        ("use `x", "line 1:5: unterminated quoted identifier"),
        ("describe t /* open", "line 1:12: unterminated comment"),
        ("show tables like '\\u12'", "line 1:19: invalid unicode escape"),
        ("show tables ?", "line 1:13: unexpected character '?'"),
        ("", "line 1:1: empty statement"),
        ("DROP TABLE t;\n  DROP VIEW v", "line 2:3: unexpected 'DROP' after the end of the statement"),
        ("create table t (a int)\n  stored as\n", "line 3:1: expected a storage format (ORC), found end of input"),
    ],
)
def test_errors_are_one_line_with_the_position(text: str, message: str) -> None:
    with pytest.raises(SqlSyntaxError) as info:
        parse_statement(text)
    rendered = str(info.value)
    assert "\n" not in rendered
    assert rendered.startswith(message), rendered


_FRAGMENTS = st.sampled_from(
    [*KEYWORDS, "t", "db.t", "`q`", "'s'", "\"d\"", "1", "-2.5", "(", ")", ",", ";", "=", "<", ">", ":", "*",
     "--c\n", "/*x*/", "'", "`", "\\", "1e", ".5", "1.5BD", "PARTITION (ds='1')", "\n"]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=80), st.lists(_FRAGMENTS, max_size=25).map(" ".join)))
@example("²")  # a Unicode digit that is not a decimal digit: once an assertion failure in the tokenizer
# Found by fuzzing the shell: Python's own RecursionError and int() digit limit instead of a position.
@example("CREATE TABLE t (c " + "array<" * 2000 + "int" + ">" * 2000 + ")")
@example("CREATE TABLE t (c decimal(" + "7" * 4400 + "))")
@example("CREATE TABLE t (c varchar(" + "7" * 4400 + "))")
@example("'\n'")  # a string token holding a newline, once quoted as is in the message
def test_fuzz_only_syntax_errors(text: str) -> None:
    """Random text and random token soup either parse or raise SqlSyntaxError with a position inside it."""
    try:
        parse_script(text)
    except SqlSyntaxError as exc:
        assert exc.position is not None
        assert 1 <= exc.position.line <= text.count("\n") + 1
        assert 0 <= exc.position.offset <= len(text)
        assert "\n" not in str(exc)


# ------------------------------------------------------------------------------------------ limits


def _nested(depth: int, kind: str = "array") -> str:
    opening = {"array": "array<", "map": "map<string,", "struct": "struct<f:", "uniontype": "uniontype<int,"}[kind]
    return opening * depth + "int" + ">" * depth


@pytest.mark.parametrize("kind", ["array", "map", "struct", "uniontype"])
@pytest.mark.parametrize("depth", [101, 600, 5000])
def test_deeply_nested_types_are_refused_at_the_limit(kind: str, depth: int) -> None:
    text = f"CREATE TABLE t (c {_nested(depth, kind)})"
    with pytest.raises(SqlSyntaxError) as info:
        parse_statement(text)
    rendered = str(info.value)
    assert "types nested more than 100 levels deep are not supported" in rendered
    # The position is the type inside the 101st complex type.
    offset = info.value.position.offset
    assert text[:offset].count("<") == 101, rendered
    assert rendered.startswith(f"line 1:{offset + 1}: ")


def test_types_nested_to_the_limit_parse() -> None:
    statement = parse_statement(f"CREATE TABLE t (c {_nested(100)})")
    assert isinstance(statement, CreateTable)
    assert str(statement.columns[0].type) == _nested(100)


@pytest.mark.parametrize(
    ("size", "message"),
    [
        ("decimal(NUM)", "the decimal precision must be at most 38, got a 5000-digit number"),
        ("decimal(10, NUM)", "the decimal scale must be at most 38, got a 5000-digit number"),
        ("varchar(NUM)", "the varchar length must be at most 65535, got a 5000-digit number"),
        ("char(NUM)", "the char length must be at most 255, got a 5000-digit number"),
    ],
)
def test_type_sizes_of_thousands_of_digits_are_one_line_errors(size: str, message: str) -> None:
    text = f"CREATE TABLE t (c {size.replace('NUM', '9' * 5000)})"
    with pytest.raises(SqlSyntaxError) as info:
        parse_statement(text)
    column = text.index("9") + 1
    assert str(info.value) == f"line 1:{column}: {message}"


def test_type_sizes_with_leading_zeros_still_parse() -> None:
    statement = parse_statement(f"CREATE TABLE t (c decimal({'0' * 5000}12, 2))")
    assert isinstance(statement, CreateTable)
    assert str(statement.columns[0].type) == "decimal(12,2)"
