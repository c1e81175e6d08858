"""Runs parsed statements against a metastore client; each statement gives one Result.

Database and table DDL and SHOW live here; DESCRIBE (describe.py), partitions (partitions.py), INSERT/LOAD DATA
(loading.py), MSCK (repair.py) and ANALYZE (analyze.py) have modules of their own, which see the executor as a
`Session` (session.py) and never import it. Everything goes through the MetastoreClient, so the same statement
works embedded and against a remote server.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

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
from metastore.sql.errors import SqlError
from metastore.sql.output import Result
from metastore.sql.session import ExecutorOptions, Session
from metastore.sql.statements import (
    AddPartitions,
    AlterTableProperties,
    Analyze,
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
    LoadData,
    MsckRepair,
    Name,
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
from metastore.sql.table_files import STORAGE_FORMATS, absolute_location, qualified

#: SET keys of the shell's ANALYZE engine (issue 10).
ENGINE_KEY = "metastore.analyze.engine"
THRESHOLD_KEY = "metastore.analyze.spark.threshold"
ENGINES = ("local", "spark", "auto")
_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _byte_size(text: str, key: str, st: Statement) -> int:
    """A byte count written as 1073741824, 512m, 1g, 1 GiB or 2GB (binary units)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?", text.strip().lower())
    if match is None:
        raise SqlError(f"{key} must be a size in bytes (e.g. 1073741824, 512m, 1g), got '{text}'", st.position)
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2)])


EXTERNAL_TABLE = "EXTERNAL_TABLE"
MANAGED_TABLE = "MANAGED_TABLE"
USER_PRINCIPAL = 1  # Hive's PrincipalType.USER


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
        #: SET keys this shell does not use (Hive scripts set hive.* freely), kept so that SET shows them.
        self.variables: dict[str, str] = {}
        #: Statements started in this session, the running one included.
        self.statements_started = 0
        self._spark: Any = None

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
        """Called by statements that changed the catalog."""
        if self.on_catalog_change is not None:
            self.on_catalog_change()

    def spark_session(self) -> Any:
        """The SparkSession of `options.spark_master`, started on first use and kept until close()."""
        if self._spark is None:
            if not self.options.spark_master:
                raise SqlError("no Spark master is configured: start the shell with --spark MASTER")
            from metastore.spark.session import spark_session

            self._spark = spark_session(self.options.spark_master)
        return self._spark

    def close(self) -> None:
        """Stop what the session started (its SparkSession)."""
        if self._spark is not None:
            from metastore.spark.session import stop_spark_session

            stop_spark_session(self._spark)
            self._spark = None

    # ------------------------------------------------------------------ dispatch

    def execute(self, statement: Statement) -> Result:
        """Run one statement. SqlError (with a position) or MetastoreError when it cannot run."""
        handler = _HANDLERS.get(type(statement))
        if handler is None:  # pragma: no cover - the parser only builds known statements
            raise SqlError(f"{type(statement).__name__} cannot be run", statement.position)
        self.statements_started += 1
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

    def set_variable(self, st: SetVariable) -> Result:
        """SET: list the settings, show one, or change one (the shell's own are checked; others are kept)."""
        settings = {
            ENGINE_KEY: self.options.analyze_engine,
            THRESHOLD_KEY: str(self.options.spark_threshold),
            "metastore.spark.master": self.options.spark_master or "",
        }
        if st.key is None:
            rows = [[k, v] for k, v in settings.items()] + [[k, v] for k, v in sorted(self.variables.items())]
            return Result(["key", "value"], rows)
        key = st.key.strip()
        lowered = key.lower()
        if st.value is None:
            if lowered in settings:
                return Result(["key", "value"], [[lowered, settings[lowered]]])
            if key in self.variables:
                return Result(["key", "value"], [[key, self.variables[key]]])
            return Result(["key", "value"], [[key, "<undefined>"]])
        value = st.value.strip()
        if lowered == ENGINE_KEY:
            if value.lower() not in ENGINES:
                raise SqlError(f"{ENGINE_KEY} must be one of {', '.join(ENGINES)}, got '{value}'", st.position)
            self.options.analyze_engine = value.lower()
        elif lowered == THRESHOLD_KEY:
            self.options.spark_threshold = _byte_size(value, THRESHOLD_KEY, st)
        elif lowered == "metastore.spark.master":
            raise SqlError("metastore.spark.master is set when the shell starts: metastore sql --spark MASTER",
                           st.position)
        else:
            self.variables[key] = value
            return Result(message=f"{key} is not used by this shell (kept for SET)")
        return Result()

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
        # The ORC writer's option checks come with the ORC engine: loaded when a table is made, not at start-up.
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
        # The ORC engine, on first use (see create_table).
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

    # ------------------------------------------------------------------ the helper modules' statements

    def _run_in_helper(self, statement: Statement) -> Result:
        module_name, function_name = _HELPER_STATEMENTS[type(statement)]
        # Loaded on first use, deliberately: the helpers bring numpy, the ORC engine and the statistics code,
        # which `metastore sql -e "SHOW DATABASES;"` should not pay for at start-up.
        module = importlib.import_module(module_name)
        run: Callable[[Session, Statement], Result] = getattr(module, function_name)
        session: Session = self  # the type checker holds the executor to the helpers' interface here
        return run(session, statement)


#: Statements run by the helper modules: (module, function taking the session and the statement).
_HELPER_STATEMENTS: dict[type, tuple[str, str]] = {
    ShowPartitions: ("metastore.sql.partitions", "show_partitions"),
    AddPartitions: ("metastore.sql.partitions", "add_partitions"),
    DropPartitions: ("metastore.sql.partitions", "drop_partitions"),
    InsertValues: ("metastore.sql.loading", "insert_values"),
    LoadData: ("metastore.sql.loading", "load_data"),
    MsckRepair: ("metastore.sql.repair", "repair_table"),
    Analyze: ("metastore.sql.analyze", "analyze"),
    Describe: ("metastore.sql.describe", "describe"),
    CreateIndex: ("metastore.sql.indexes", "create_index"),
    ShowIndex: ("metastore.sql.indexes", "show_index"),
    UpdateIndex: ("metastore.sql.indexes", "update_index"),
    DropIndex: ("metastore.sql.indexes", "drop_index"),
    Select: ("metastore.sql.select", "select"),
    Explain: ("metastore.sql.select", "explain"),
}

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
    SetVariable: Executor.set_variable,
    **{kind: Executor._run_in_helper for kind in _HELPER_STATEMENTS},
}
