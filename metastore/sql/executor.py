"""Runs parsed statements against a metastore client; each statement gives one Result.

DDL, SHOW and DESCRIBE live here; INSERT/LOAD DATA (loading.py), MSCK (repair.py) and ANALYZE (analyze.py)
have modules of their own. Everything goes through the MetastoreClient, so the same statement works embedded
and against a remote server.
"""

from __future__ import annotations

import getpass
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TextIO

from metastore.catalog import (
    DEFAULT_DATABASE,
    Database,
    FieldSchema,
    SerDeInfo,
    StorageDescriptor,
    Table,
)
from metastore.client import MetastoreClient
from metastore.errors import AlreadyExists, MetastoreError, NoSuchObject
from metastore.sql import describe
from metastore.sql.errors import SqlError
from metastore.sql.output import Result
from metastore.sql.partition_specs import partial_values, partition_name, qualified, resolve_spec
from metastore.sql.statements import (
    AddPartitions,
    AlterTableProperties,
    Analyze,
    CreateDatabase,
    CreateTable,
    Describe,
    DescribeDatabase,
    DropDatabase,
    DropPartitions,
    DropTable,
    InsertValues,
    LoadData,
    MsckRepair,
    Name,
    ShowDatabases,
    ShowPartitions,
    ShowTables,
    ShowTblProperties,
    Statement,
    TableName,
    UseDatabase,
)
from metastore.sql.table_files import STORAGE_FORMATS, absolute_location

EXTERNAL_TABLE = "EXTERNAL_TABLE"
MANAGED_TABLE = "MANAGED_TABLE"
USER_PRINCIPAL = 1  # Hive's PrincipalType.USER


@dataclass
class ExecutorOptions:
    """How statements that touch data behave."""

    #: Show progress bars on `progress_stream` (the shell turns this on for terminals or --progress).
    progress: bool = False
    progress_stream: TextIO = field(default_factory=lambda: sys.stderr)
    #: KLL histograms for numeric, date and timestamp columns in ANALYZE ... FOR COLUMNS (Hive 4's field).
    histograms: bool = False
    #: Per-file statistics cache for incremental ANALYZE: "default" (the user's data dir), a path, or None.
    stats_cache: str | None = "default"
    #: Owner recorded for new databases and tables.
    user: str = field(default_factory=lambda: _user_name())


def _user_name() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in some containers; the owner is informational
        return "metastore"


class Executor:
    """Holds the session (current database) and runs statements."""

    def __init__(
        self, client: MetastoreClient, *, database: str = DEFAULT_DATABASE, options: ExecutorOptions | None = None
    ) -> None:
        self.client = client
        self.database = database.lower()
        self.options = options or ExecutorOptions()
        #: Called after statements that change the catalog (the shell refreshes its completions).
        self.on_catalog_change: Callable[[], None] | None = None

    # ------------------------------------------------------------------ helpers

    def db_of(self, name: TableName) -> str:
        return name.db.lower if name.db else self.database

    def table(self, name: TableName) -> Table:
        """The table a statement names; SqlError at the name when it (or its database) does not exist."""
        db = self.db_of(name)
        try:
            return self.client.get_table(db, name.table.lower)
        except NoSuchObject:
            if name.db is not None:
                self.database_exists(name.db)
            raise SqlError(f"table {db}.{name.table.lower} does not exist", name.table.position) from None

    def database_exists(self, name: Name) -> Database:
        try:
            return self.client.get_database(name.lower)
        except NoSuchObject:
            raise SqlError(f"database '{name.value}' does not exist", name.position) from None

    def changed(self) -> None:
        if self.on_catalog_change is not None:
            self.on_catalog_change()

    # ------------------------------------------------------------------ dispatch

    def execute(self, statement: Statement) -> Result:
        """Run one statement. SqlError (with a position) or MetastoreError when it cannot run."""
        handler = _HANDLERS.get(type(statement))
        if handler is None:  # pragma: no cover - the parser only builds known statements
            raise SqlError(f"{type(statement).__name__} cannot be run", statement.position)
        return handler(self, statement)

    # ------------------------------------------------------------------ databases

    def create_database(self, st: CreateDatabase) -> Result:
        db = Database(
            name=st.name.lower,
            description=st.comment,
            location_uri=absolute_location(st.location) if st.location else None,
            parameters=dict(st.properties),
            owner_name=self.options.user,
            owner_type=USER_PRINCIPAL,
        )
        try:
            self.client.create_database(db)
        except AlreadyExists:
            if st.if_not_exists:
                return Result(message=f"database {db.name} exists already")
            raise SqlError(f"database {db.name} exists already", st.name.position) from None
        self.changed()
        return Result(message="OK")

    def drop_database(self, st: DropDatabase) -> Result:
        name = st.name.lower
        try:
            self.client.drop_database(name, delete_data=True, cascade=st.cascade)
        except NoSuchObject:
            if st.if_exists:
                return Result(message=f"database {name} does not exist")
            raise SqlError(f"database {name} does not exist", st.name.position) from None
        except MetastoreError as exc:
            raise SqlError(str(exc), st.name.position) from None
        if self.database == name:
            self.database = DEFAULT_DATABASE
        self.changed()
        return Result(message="OK")

    def use(self, st: UseDatabase) -> Result:
        self.database_exists(st.name)
        self.database = st.name.lower
        self.changed()
        return Result(message="OK")

    def show_databases(self, st: ShowDatabases) -> Result:
        names = self.client.list_databases(st.pattern)
        return Result(["database_name"], [[n] for n in sorted(names)])

    def describe_database(self, st: DescribeDatabase) -> Result:
        db = self.database_exists(st.name)
        columns = ["db_name", "comment", "location", "owner_name", "owner_type"]
        owner_type = {1: "USER", 2: "ROLE", 3: "GROUP"}.get(db.owner_type or 0, "")
        row: list[Any] = [db.name, db.description or "", db.location_uri or "", db.owner_name or "", owner_type]
        if st.extended:
            columns.append("parameters")
            row.append(", ".join(f"{k}={v}" for k, v in sorted(db.parameters.items())))
        return Result(columns, [row])

    # ------------------------------------------------------------------ tables

    def show_tables(self, st: ShowTables) -> Result:
        db = st.database.lower if st.database else self.database
        try:
            names = self.client.list_tables(db, st.pattern)
        except NoSuchObject:
            raise SqlError(f"database '{db}' does not exist", (st.database or st).position) from None
        return Result(["tab_name"], [[n] for n in sorted(names)])

    def create_table(self, st: CreateTable) -> Result:
        from metastore.sql.loading import check_orc_properties

        db = self.db_of(st.table)
        fmt_name = (st.stored_as.value.upper() if st.stored_as else "ORC")
        formats = STORAGE_FORMATS.get(fmt_name)
        if formats is None:
            raise SqlError(
                f"STORED AS {st.stored_as.value if st.stored_as else ''}: unknown format (known: "
                f"{', '.join(STORAGE_FORMATS)})",
                st.stored_as.position if st.stored_as else st.position,
            )
        columns = [FieldSchema(c.name.lower, str(c.type), c.comment) for c in st.columns]
        if fmt_name == "ORC":
            check_orc_properties(st.properties, columns, st.position)
        params = dict(st.properties)
        if st.comment is not None:
            params["comment"] = st.comment
        if st.external:
            params["EXTERNAL"] = "TRUE"
        input_format, output_format, serde = formats
        table = Table(
            db_name=db,
            table_name=st.table.table.lower,
            owner=self.options.user,
            owner_type=USER_PRINCIPAL,
            sd=StorageDescriptor(
                cols=columns,
                location=absolute_location(st.location) if st.location else None,
                input_format=input_format,
                output_format=output_format,
                serde_info=SerDeInfo(serialization_lib=serde, parameters={"serialization.format": "1"}),
            ),
            partition_keys=[FieldSchema(c.name.lower, str(c.type), c.comment) for c in st.partition_columns],
            parameters=params,
            table_type=EXTERNAL_TABLE if st.external else MANAGED_TABLE,
        )
        try:
            self.client.create_table(table)
        except AlreadyExists:
            if st.if_not_exists:
                return Result(message=f"table {db}.{table.table_name} exists already")
            raise SqlError(f"table {db}.{table.table_name} exists already", st.table.position) from None
        except NoSuchObject:
            raise SqlError(f"database '{db}' does not exist", st.table.position) from None
        self.changed()
        return Result(message="OK")

    def drop_table(self, st: DropTable) -> Result:
        db = self.db_of(st.table)
        try:
            self.client.drop_table(db, st.table.table.lower, delete_data=True)
        except NoSuchObject:
            if st.if_exists:
                return Result(message=f"table {db}.{st.table.table.lower} does not exist")
            raise SqlError(f"table {db}.{st.table.table.lower} does not exist", st.table.position) from None
        self.changed()
        return Result(message="OK")

    def alter_properties(self, st: AlterTableProperties) -> Result:
        from metastore.sql.loading import check_orc_properties

        table = self.table(st.table)
        params = {**table.parameters, **st.properties}
        check_orc_properties(params, table.sd.cols, st.position)
        self.client.alter_table(table.db_name, table.table_name, replace(table, parameters=params))
        return Result(message="OK")

    def show_tblproperties(self, st: ShowTblProperties) -> Result:
        table = self.table(st.table)
        if st.key is not None:
            if st.key not in table.parameters:
                raise SqlError(f"table {qualified(table)} does not have property '{st.key}'", st.position)
            return Result(["prpt_name", "prpt_value"], [[st.key, table.parameters[st.key]]])
        return Result(["prpt_name", "prpt_value"], [[k, v] for k, v in sorted(table.parameters.items())])

    # ------------------------------------------------------------------ partitions

    def show_partitions(self, st: ShowPartitions) -> Result:
        table = self.table(st.table)
        if not table.partition_keys:
            raise SqlError(f"{qualified(table)} is not a partitioned table", st.table.position)
        if st.spec is None:
            names = self.client.list_partition_names(table.db_name, table.table_name)
        else:
            values = resolve_spec(table, st.spec, full=False, what="SHOW PARTITIONS")
            names = self.client.list_partition_names(table.db_name, table.table_name, partial_values(values))
        return Result(["partition"], [[n] for n in sorted(names)])

    def add_partitions(self, st: AddPartitions) -> Result:
        from metastore.catalog import Partition
        from metastore.sql.partition_specs import full_values

        table = self.table(st.table)
        parts = []
        seen: set[str] = set()
        for spec, location in st.partitions:
            values = full_values(table, spec, "ADD PARTITION")
            name = partition_name(table, values)
            if name in seen:
                raise SqlError(f"partition {name} is listed twice", spec.position)
            seen.add(name)
            sd = StorageDescriptor()
            if location:
                sd = replace(table.sd, location=absolute_location(location))
            parts.append(Partition(db_name=table.db_name, table_name=table.table_name, values=values, sd=sd))
        try:
            added = self.client.add_partitions(table.db_name, table.table_name, parts, if_not_exists=st.if_not_exists)
        except AlreadyExists as exc:
            raise SqlError(str(exc), st.position) from None
        skipped = len(parts) - len(added)
        message = f"added {len(added)} partition(s)" + (f", {skipped} existed already" if skipped else "")
        return Result(message=message)

    def drop_partitions(self, st: DropPartitions) -> Result:
        table = self.table(st.table)
        names: list[str] = []
        for spec in st.specs:
            values = resolve_spec(table, spec, full=False, what="DROP PARTITION")
            matching = self.client.list_partition_names(table.db_name, table.table_name, partial_values(values))
            if not matching and not st.if_exists:
                from metastore.sql.partition_specs import spec_text

                raise SqlError(
                    f"no partition of {qualified(table)} matches ({spec_text(table, values)})", spec.position
                )
            names.extend(n for n in matching if n not in names)
        dropped = self.client.drop_partitions(table.db_name, table.table_name, names, delete_data=True, if_exists=True)
        return Result(["partition"], [[partition_name(table, p.values)] for p in dropped],
                      message=f"dropped {len(dropped)} partition(s)")

    # ------------------------------------------------------------------ data and statistics

    def insert(self, st: InsertValues) -> Result:
        from metastore.sql.loading import insert_values

        return insert_values(self, st)

    def load(self, st: LoadData) -> Result:
        from metastore.sql.loading import load_data

        return load_data(self, st)

    def msck(self, st: MsckRepair) -> Result:
        from metastore.sql.repair import repair_table

        return repair_table(self, st)

    def analyze(self, st: Analyze) -> Result:
        from metastore.sql.analyze import analyze

        return analyze(self, st)

    def describe(self, st: Describe) -> Result:
        return describe.describe(self, st)


_HANDLERS: dict[type, Callable[[Executor, Any], Result]] = {
    CreateDatabase: Executor.create_database,
    DropDatabase: Executor.drop_database,
    UseDatabase: Executor.use,
    ShowDatabases: Executor.show_databases,
    DescribeDatabase: Executor.describe_database,
    ShowTables: Executor.show_tables,
    CreateTable: Executor.create_table,
    DropTable: Executor.drop_table,
    AlterTableProperties: Executor.alter_properties,
    ShowTblProperties: Executor.show_tblproperties,
    ShowPartitions: Executor.show_partitions,
    AddPartitions: Executor.add_partitions,
    DropPartitions: Executor.drop_partitions,
    InsertValues: Executor.insert,
    LoadData: Executor.load,
    MsckRepair: Executor.msck,
    Analyze: Executor.analyze,
    Describe: Executor.describe,
}
