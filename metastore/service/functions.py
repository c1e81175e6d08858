"""Permanent functions (create/get/list/alter/drop_function, get_all_functions) with Hive 2.3's rules and errors."""

from __future__ import annotations

import re
import time
from dataclasses import replace

from metastore.catalog import DEFAULT_CATALOG
from metastore.errors import AlreadyExists, InvalidObject, MetastoreError, NoSuchObject
from metastore.functions import RESOURCE_TYPES, Function
from metastore.store import Store
from metastore.store.functions import FunctionRepository
from metastore.store.name_patterns import hive_name_matcher

# Hive's MetaStoreUtils.validateName: word characters only.
_VALID_NAME = re.compile(r"[A-Za-z0-9_]+")


def _validate(func: Function) -> None:
    """Hive 2.3's validateFunctionInfo, plus what its store would fail on with an internal error."""
    if not func.name or not _VALID_NAME.fullmatch(func.name):
        raise InvalidObject(f"{func.name} is not a valid object name")
    if func.class_name is None:
        raise InvalidObject("Function class name cannot be null")
    if not func.db_name:
        raise InvalidObject(f"function {func.name} has no database name")
    for resource in func.resources:
        if resource.resource_type not in RESOURCE_TYPES:
            raise InvalidObject(f"function {func.name}: resource type {resource.resource_type} is not 1 (jar), 2 (file) or 3 (archive)")


class FunctionService:
    """Functions of the databases of one catalog, one transaction per call."""

    def __init__(self, store: Store, catalog: str = DEFAULT_CATALOG) -> None:
        self.store = store
        self.catalog = catalog

    def create(self, func: Function) -> None:
        """Create a function; its create time is the server's clock, as Hive's. NoSuchObject for a missing
        database, AlreadyExists for a taken name, InvalidObject for a bad name or no class name."""
        _validate(func)
        func = replace(func, create_time=int(time.time()))
        with self.store.transaction() as uow:
            try:
                created = FunctionRepository(uow.connection).create(func, self.catalog)
            except NoSuchObject:
                raise NoSuchObject(f"The database {func.db_name} does not exist") from None
        if not created:
            raise AlreadyExists(f"Function {func.name} already exists")

    def get(self, db_name: str, name: str) -> Function:
        """The function db_name.name; NoSuchObject when there is none."""
        with self.store.read() as uow:
            found = FunctionRepository(uow.connection).get(self.catalog, db_name, name)
        if found is None:
            raise NoSuchObject(f"Function {db_name}.{name} does not exist")
        return found

    def names(self, db_name: str, pattern: str | None) -> list[str]:
        """Names of the database's functions matching a Hive name pattern (`*`, `a|b`, regular expressions),
        sorted; empty, as in Hive, when the database does not exist."""
        matches = hive_name_matcher(pattern)
        with self.store.read() as uow:
            names = FunctionRepository(uow.connection).names(self.catalog, db_name)
        return [n for n in names if matches(n)]

    def all(self) -> list[Function]:
        """Every function of the catalog, with its resources."""
        with self.store.read() as uow:
            return FunctionRepository(uow.connection).list_all(self.catalog)

    def alter(self, db_name: str, name: str, new: Function) -> None:
        """Replace name, database, class, owner and type of a function (Hive 2.3 keeps its create time and
        resources). MetastoreError (Hive's MetaException) when there is no such function."""
        _validate(new)
        with self.store.transaction() as uow:
            repo = FunctionRepository(uow.connection)
            target = (new.db_name.lower(), new.name.lower())
            if target != (db_name.lower(), name.lower()) and repo.get(self.catalog, *target) is not None:
                raise AlreadyExists(f"Function {new.name} already exists in database {new.db_name}")
            try:
                altered = repo.alter(self.catalog, db_name, name, new)
            except NoSuchObject as exc:
                raise MetastoreError(str(exc)) from None
        if not altered:
            raise MetastoreError(f"function {name} doesn't exist")

    def drop(self, db_name: str, name: str) -> None:
        """Drop a function; NoSuchObject when there is none."""
        with self.store.transaction() as uow:
            dropped = FunctionRepository(uow.connection).drop(self.catalog, db_name, name)
        if not dropped:
            raise NoSuchObject(f"Function {name} does not exist")
