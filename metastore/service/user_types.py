"""Hive 2.3's legacy type calls (create_type, get_type, drop_type, get_type_all) with Hive's errors."""

from __future__ import annotations

import re

from metastore.errors import AlreadyExists, InvalidObject, MetastoreError, NoSuchObject
from metastore.store import Store
from metastore.store.types import TypeRepository
from metastore.user_types import UserType

_VALID_NAME = re.compile(r"[A-Za-z0-9_]+")


class TypeService:
    """Named types, one transaction per call."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def create(self, user_type: UserType) -> None:
        """Create a type; InvalidObject for a name that is not word characters, AlreadyExists for a taken one."""
        if not user_type.name or not _VALID_NAME.fullmatch(user_type.name):
            raise InvalidObject("Invalid type name")
        with self.store.transaction() as uow:
            created = TypeRepository(uow.connection).create(user_type)
        if not created:
            raise AlreadyExists(f"Type {user_type.name} already exists")

    def get(self, name: str) -> UserType:
        """The type called `name`; NoSuchObject when there is none."""
        with self.store.read() as uow:
            found = TypeRepository(uow.connection).get(name)
        if found is None:
            raise NoSuchObject(f'Type "{name}" not found.')
        return found

    def drop(self, name: str) -> None:
        """Drop a type and its fields. A type that does not exist is no error: Hive 2.3 answers true for it
        too (its own tests drop their types before creating them)."""
        with self.store.transaction() as uow:
            TypeRepository(uow.connection).drop(name)

    def all_of(self, name: str) -> dict[str, UserType]:
        """get_type_all: Hive 2.3 never implemented it and answers MetaException "Not yet implemented"."""
        raise MetastoreError("Not yet implemented")
