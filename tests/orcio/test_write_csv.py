"""CSV to ORC (write_csv): every primitive type from text, nulls, headers, and errors that name the line."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow.orc as pa_orc
import pyorc
import pytest

from metastore.orcio._csv_write import write_csv
from metastore.orcio._errors import OrcError
from metastore.orcio._reader import OrcReader

SCHEMA = (
    "struct<id:int,flag:boolean,tiny:tinyint,big:bigint,ratio:double,name:string,code:char(3),tag:varchar(2),"
    "raw:binary,price:decimal(8,2),day:date,at:timestamp,seen:timestamp with local time zone>"
)


def test_every_type_and_nulls(tmp_path) -> None:
    csv_path = tmp_path / "in.csv"
    csv_path.write_text(
        "id,flag,tiny,big,ratio,name,code,tag,raw,price,day,at,seen\n"
        '1,true,-5,9223372036854775807,1.5,"hello, world",ab,xyz,0x00ff,12.345,2024-02-29,'
        "2024-02-29 13:14:15.123456789,2024-02-29T13:14:15+02:00\n"
        "2,F,,\\N,nan,,abcd,,,-0.5,1900-01-01,1969-12-31 23:59:58.5,2000-01-01 00:00:00Z\n"
        "\n"
        "3,yes,127,-1,-inf,é,é,é,ABCD,1e3,0001-01-01,0001-01-01 00:00:00,1999-12-31 23:00:00-01:00\n",
        encoding="utf-8",
    )
    out = tmp_path / "out.orc"
    assert write_csv(csv_path, out, SCHEMA, {"orc.compress": "ZLIB"}) == 3
    rows = OrcReader(out).read().to_pylist()
    assert [r["id"] for r in rows] == [1, 2, 3]
    assert [r["flag"] for r in rows] == [True, False, True]
    assert [r["tiny"] for r in rows] == [-5, None, 127]
    assert [r["big"] for r in rows] == [2**63 - 1, None, -1]
    assert rows[0]["ratio"] == 1.5 and rows[1]["ratio"] != rows[1]["ratio"] and rows[2]["ratio"] == float("-inf")
    assert [r["name"] for r in rows] == ["hello, world", None, "é"]
    assert [r["code"] for r in rows] == ["ab ", "abc", "é  "]
    assert [r["tag"] for r in rows] == ["xy", None, "é"]
    assert [r["raw"] for r in rows] == [b"\x00\xff", None, b"\xab\xcd"]
    assert [r["price"] for r in rows] == [Decimal("12.35"), Decimal("-0.50"), Decimal("1000.00")]
    assert [r["day"] for r in rows] == [dt.date(2024, 2, 29), dt.date(1900, 1, 1), dt.date(1, 1, 1)]
    assert [r["at"] for r in rows] == [
        dt.datetime(2024, 2, 29, 13, 14, 15, 123456),
        dt.datetime(1969, 12, 31, 23, 59, 58, 500000),
        dt.datetime(1, 1, 1),
    ]
    utc = dt.UTC
    assert [r["seen"] for r in rows] == [
        dt.datetime(2024, 2, 29, 11, 14, 15, tzinfo=utc),
        dt.datetime(2000, 1, 1, tzinfo=utc),
        dt.datetime(2000, 1, 1, tzinfo=utc),
    ]
    # nanoseconds reach the file (pyorc keeps microseconds; the stored nanos decide the sub-microsecond part)
    with open(out, "rb") as f:
        assert list(pyorc.Reader(f, column_names=("at",)))[0][0].microsecond == 123456


def test_headerless_file_and_custom_delimiter(tmp_path) -> None:
    csv_path = tmp_path / "in.tsv"
    csv_path.write_text("1\tx\n2\tNULL\n", encoding="utf-8")
    out = tmp_path / "out.orc"
    assert write_csv(csv_path, out, "struct<a:int,b:string>", delimiter="\t", null_values=("NULL",)) == 2
    assert pa_orc.ORCFile(str(out)).read().to_pylist() == [{"a": 1, "b": "x"}, {"a": 2, "b": None}]


def test_many_rows_in_batches(tmp_path) -> None:
    csv_path = tmp_path / "big.csv"
    csv_path.write_text("n,s\n" + "".join(f"{i},v{i % 7}\n" for i in range(25_000)), encoding="utf-8")
    out = tmp_path / "big.orc"
    assert write_csv(csv_path, out, "struct<n:bigint,s:string>", {"orc.stripe.size": "50000"}, batch_rows=4000) == 25_000
    reader = OrcReader(out)
    assert reader.num_rows == 25_000 and len(reader.stripes) > 1
    assert reader.column_statistics("n").sum == sum(range(25_000))


@pytest.mark.parametrize(
    ("text", "schema", "message"),
    [
        ("a,b\n1,2\nx,3\n", "struct<a:int,b:int>", r"in.csv:3: column 'a' \(int\): cannot read 'x'"),
        ("a,b\n1,2\n3\n", "struct<a:int,b:int>", r"in.csv:3: expected 2 fields"),
        ("a\n1\n300\n", "struct<a:tinyint>", r"in.csv:3: column 'a': value 300 is outside the range of tinyint"),
        ("a\n\n5\n1234.5\n", "struct<a:decimal(4,1)>", r"in.csv:4: column 'a'.*does not fit"),
        ("a\n2024-13-01\n", "struct<a:date>", r"in.csv:2: column 'a' \(date\).*month must be in 1..12"),
        ("a\n2024-01-01 10:00+01:00\n", "struct<a:timestamp>", r"in.csv:2: .*wall-clock"),
        ("a\nzz\n", "struct<a:binary>", r"in.csv:2: .*hexadecimal"),
        ("a\nmaybe\n", "struct<a:boolean>", r"in.csv:2: .*true/false"),
        ("a\n1\n", "struct<a:array<int>>", r"primitive"),
    ],
)
def test_errors_name_line_and_column(tmp_path, text, schema, message) -> None:
    csv_path = tmp_path / "in.csv"
    csv_path.write_text(text, encoding="utf-8")
    with pytest.raises(OrcError, match=message):
        write_csv(csv_path, tmp_path / "out.orc", schema)
