"""Conversion between Hive's Thrift Function / Type structs and metastore.functions / metastore.user_types."""

from __future__ import annotations

from metastore.api.hive_metastore import ttypes as tt
from metastore.errors import InvalidObject
from metastore.functions import JAVA_FUNCTION, Function, FunctionResource
from metastore.user_types import UserType
from metastore.wire.catalog import field_from_thrift, field_to_thrift


def function_from_thrift(f: tt.Function) -> Function:
    """The domain function of a Thrift Function (its createTime is the server's business)."""
    resources = []
    for r in f.resourceUris or []:
        if r.resourceType is None or r.uri is None:
            raise InvalidObject(f"function {f.functionName}: a resource needs a resourceType and a uri")
        resources.append(FunctionResource(resource_type=r.resourceType, uri=r.uri))
    return Function(
        name=f.functionName or "", db_name=f.dbName or "", class_name=f.className, owner_name=f.ownerName,
        owner_type=f.ownerType, create_time=f.createTime or 0,
        function_type=JAVA_FUNCTION if f.functionType is None else f.functionType, resources=tuple(resources),
    )


def function_to_thrift(f: Function) -> tt.Function:
    """The Thrift Function of a domain function (resourceUris always set, as Hive's)."""
    return tt.Function(
        functionName=f.name, dbName=f.db_name, className=f.class_name, ownerName=f.owner_name,
        ownerType=f.owner_type, createTime=f.create_time, functionType=f.function_type,
        resourceUris=[tt.ResourceUri(resourceType=r.resource_type, uri=r.uri) for r in f.resources],
    )


def type_from_thrift(t: tt.Type) -> UserType:
    """The domain type of a Thrift Type."""
    return UserType(
        name=t.name or "", type1=t.type1, type2=t.type2,
        fields=tuple(field_from_thrift(f) for f in t.fields or []),
    )


def type_to_thrift(t: UserType) -> tt.Type:
    """The Thrift Type of a domain type (fields always set, empty for a collection type, as Hive's)."""
    return tt.Type(name=t.name, type1=t.type1, type2=t.type2, fields=[field_to_thrift(f) for f in t.fields])
