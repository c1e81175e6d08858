"""More differential steps for issue 14's catalog semantics, to include in differential_calls.run_differential_calls
next to catalog_calls: `catalog_semantics_calls(rec, c, T, n)`.

Every step answers the same on our server and on the reference HMS 2.3.10 (checked against it on Derby, with
tests/server/test_hive_semantics.py run through the same client), except the steps named in
`EXPECTED_DIFFERENCES`, which intentional_differences.py should list with these reasons.
Paths live in a folder of their own under the temporary directory, so both servers' answers compare as they are.
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
from typing import Any

from interop.scenarios.scenario_common import Names, Recorder, orc_storage

DDL_TIME = "transient_lastDdlTime"

#: step -> why our answer differs from HMS 2.3.10's on purpose.
EXPECTED_DIFFERENCES: dict[str, str] = {
    "semantics_get_tables_invalid_regex": (
        "An invalid regular expression in a name pattern is a MetaException naming the bad alternative (the only "
        "exception get_tables declares; the server's error is InvalidInput); HMS 2.3 on Derby answers an empty list "
        "(DataNucleus turns the pattern into SQL LIKE), on other databases it can fail with PatternSyntaxException."
    ),
    "semantics_get_tables_char_class": (
        "Name patterns are evaluated as the regular expressions Hive documents ([..], +, ?, groups); HMS 2.3 on "
        "Derby supports only '.', '.*' and literal text (DataNucleus's regex-to-LIKE translation)."
    ),
    "semantics_filter_like_char_class": (
        "LIKE in a partition filter is a whole-value regular expression with every construct; HMS 2.3 on Derby "
        "supports only '.', '.*' and literal text (DataNucleus's regex-to-LIKE translation)."
    ),
    "semantics_filter_like_invalid_regex": (
        "An invalid LIKE regular expression is a MetaException naming it and its position; HMS 2.3 on Derby "
        "answers an empty list."
    ),
    "semantics_create_table_relative_location": (
        "A relative location is InvalidObjectException saying so; HMS 2.3 answers MetaException with Java's "
        "URISyntaxException text."
    ),
}


def _ddl(params: dict[str, str] | None) -> dict[str, Any]:
    """Parameters with transient_lastDdlTime masked unless it is a value a client chose (small numbers)."""
    out: dict[str, Any] = {}
    for k, v in sorted((params or {}).items()):
        out[k] = "<server clock>" if k == DDL_TIME and v.isdigit() and int(v) > 1_000_000_000 else v
    return out


def catalog_semantics_calls(rec: Recorder, c: Any, T: Any, n: Names) -> None:
    """Locations, transient_lastDdlTime, name patterns, LIKE and rename_partition beyond catalog_calls' steps."""
    db = f"{n.db}_sem"
    # Named after the prefix, which the differential test renames in our answers, so paths compare equal.
    base = f"{tempfile.gettempdir()}/{db}"
    shutil.rmtree(base, ignore_errors=True)
    cols = [("a", "string")]

    def table(name: str, location: str | None = None, external: bool = False, **params: str) -> Any:
        t = T.Table(
            tableName=name, dbName=db, owner="interop", createTime=0, lastAccessTime=0, retention=0,
            sd=orc_storage(T, cols, location),
            partitionKeys=[T.FieldSchema(name="p", type="string", comment=None)],
            parameters=dict(params), tableType="EXTERNAL_TABLE" if external else "MANAGED_TABLE",
        )
        if external:
            t.parameters["EXTERNAL"] = "TRUE"
        return t

    def part(tbl: str, value: str, location: str | None = None, **params: str) -> Any:
        return T.Partition(values=[value], dbName=db, tableName=tbl, sd=orc_storage(T, cols, location),
                           parameters=dict(params))

    # Locations: trailing and repeated slashes, `.`, file:/// all end as file:/path.
    rec.step("semantics_create_database", lambda: c.create_database(
        T.Database(name=db, description=None, locationUri=f"{base}/db.db/", parameters={})))
    rec.step("semantics_database_location", lambda: c.get_database(db).locationUri)
    rec.step("semantics_create_table_odd_location", lambda: c.create_table(table("t", f"{base}//x/./t/")))
    rec.step("semantics_table_location", lambda: c.get_table(db, "t").sd.location)
    rec.step("semantics_create_table_file_uri", lambda: c.create_table(table("u", f"file://{base}/u")))
    rec.step("semantics_table_location_file_uri", lambda: c.get_table(db, "u").sd.location)
    rec.step("semantics_create_table_relative_location", lambda: c.create_table(table("rel", "relative/dir")))
    rec.step("semantics_add_partition_given_location", lambda: c.add_partition(part("t", "a", f"{base}/pa/")).sd.location)

    def alter_table_location() -> Any:
        t = c.get_table(db, "u")
        t.sd.location = f"{base}/u_moved/"
        c.alter_table(db, "u", t)
        return c.get_table(db, "u").sd.location

    rec.step("semantics_alter_table_location", alter_table_location)


    # transient_lastDdlTime: kept when given on create, alter_table keeps even "0", alter_partition renews "0".
    rec.step("semantics_create_table_given_ddl_time", lambda: c.create_table(table("g", **{DDL_TIME: "12345"})))
    rec.step("semantics_table_given_ddl_time", lambda: _ddl(c.get_table(db, "g").parameters))

    def alter_table_zero() -> Any:
        t = c.get_table(db, "g")
        t.parameters[DDL_TIME] = "0"
        c.alter_table(db, "g", t)
        return _ddl(c.get_table(db, "g").parameters)

    rec.step("semantics_alter_table_zero_ddl_time", alter_table_zero)
    rec.step("semantics_add_partition_given_ddl_time", lambda: _ddl(c.add_partition(part("g", "x", **{DDL_TIME: "7"})).parameters))

    def alter_partition_zero() -> Any:
        p = c.get_partition(db, "g", ["x"])
        p.parameters = {DDL_TIME: "0"}
        c.alter_partition(db, "g", p)
        return sorted(k for k in c.get_partition(db, "g", ["x"]).parameters if k == DDL_TIME) + [
            c.get_partition(db, "g", ["x"]).parameters[DDL_TIME] != "0"
        ]

    rec.step("semantics_alter_partition_zero_ddl_time", alter_partition_zero)

    # Name patterns: `p.*` needs a character after p (it became p..*), only the whole pattern is trimmed.
    for name in ("abc", "abd", "a_c", "xyz"):
        rec.step(f"semantics_create_pattern_table_{name}", lambda nm=name: c.create_table(table(nm)))
    for step, pattern in [
        ("semantics_get_tables_empty", ""),
        ("semantics_get_tables_dot", "ab."),
        ("semantics_get_tables_any_char", "a.c"),
        ("semantics_get_tables_star_suffix", "*c"),
        ("semantics_get_tables_trimmed", " ABC "),
        ("semantics_get_tables_spaced_alternatives", "abc | xyz"),
        ("semantics_get_tables_dot_star_needs_a_char", "xyz.*"),
        ("semantics_get_tables_char_class", "a[bz]c"),
        ("semantics_get_tables_invalid_regex", "abc|x["),
    ]:
        rec.step(step, lambda pt=pattern: sorted(c.get_tables(db, pt)))
    rec.step("semantics_get_table_meta_empty_pattern", lambda: len(c.get_table_meta(db, "", [])))

    # LIKE in partition filters: the whole value must match; % and _ are literal; \. is a dot.
    rec.step("semantics_create_filter_table", lambda: c.create_table(table("f")))
    values = ["p1", "p11", "xp1", "P1a", "a_b", "a%b", "axb", "ab.c"]
    rec.step("semantics_add_filter_partitions", lambda: c.add_partitions([part("f", v) for v in values]))
    for step, flt in [
        ("semantics_filter_like_whole_value", 'p like "1"'),
        ("semantics_filter_like_prefix", 'p like "p1.*"'),
        ("semantics_filter_like_case", 'p like "P1.*"'),
        ("semantics_filter_like_percent_literal", 'p like "a%b"'),
        ("semantics_filter_like_underscore_literal", 'p like "a_b"'),
        ("semantics_filter_like_dot", 'p like "a.b"'),
        ("semantics_filter_like_escaped_dot", 'p like "ab\\.c"'),
        ("semantics_filter_like_char_class", 'p like "p1[12]"'),
        ("semantics_filter_like_invalid_regex", 'p like "p1["'),
    ]:
        rec.step(step, lambda ft=flt: sorted(x.values[0] for x in c.get_partitions_by_filter(db, "f", ft, -1)))

    # rename_partition: a managed partition moves to <table>/<new name> with its data, whatever its location was;
    # an external one keeps its location; an existing target directory is refused.
    rec.step("semantics_create_rename_table", lambda: c.create_table(table("r")))
    custom = f"{base}/custom_b"
    os.makedirs(custom, exist_ok=True)
    with open(f"{custom}/f.txt", "w") as fh:
        fh.write("y")
    rec.step("semantics_add_custom_partition", lambda: c.add_partition(part("r", "b", custom)).sd.location)

    def rename(tbl: str, old: str, new: str, location: str | None = None) -> Any:
        p = copy.deepcopy(c.get_partition(db, tbl, [old]))
        p.values = [new]
        if location is not None:
            p.sd.location = location
        c.rename_partition(db, tbl, [old], p)
        return c.get_partition(db, tbl, [new]).sd.location

    rec.step("semantics_rename_custom_partition", lambda: rename("r", "b", "b2", f"{base}/ignored"))
    rec.step("semantics_custom_data_moved", lambda: (os.path.exists(custom), sorted(os.listdir(f"{base}/db.db/r/p=b2"))))
    rec.step("semantics_create_external_table", lambda: c.create_table(table("e", f"{base}/ext", external=True)))
    rec.step("semantics_add_external_partition", lambda: c.add_partition(part("e", "a")).sd.location)
    rec.step("semantics_rename_external_partition", lambda: rename("e", "a", "a2", f"{base}/elsewhere"))
    rec.step("semantics_add_partition_d", lambda: c.add_partition(part("r", "d")).sd.location)
    os.makedirs(f"{base}/db.db/r/p=d2", exist_ok=True)
    rec.step("semantics_rename_onto_existing_directory", lambda: rename("r", "d", "d2"))
    rec.step("semantics_partition_names_after_refused_rename", lambda: sorted(c.get_partition_names(db, "r", -1)))

    # A new location in alter_database: both keep the old one (HMS 2.3 ignores it; Hive 4 would move it).
    def alter_database_location() -> Any:
        d = c.get_database(db)
        d.locationUri = f"{base}/db2"
        c.alter_database(db, d)
        return c.get_database(db).locationUri

    rec.step("semantics_database_location_after_alter", alter_database_location)
    rec.step("semantics_drop_database", lambda: c.drop_database(db, True, True))
