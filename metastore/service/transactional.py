"""Hive 2.3's TransactionalValidationListener: the rules for the `transactional` table parameter.

Hive's metastore always runs this listener before create_table and alter_table, and Hive's own TestHiveMetaStore
checks its answers (MetaException with these exact messages):
- create: a `transactional` parameter (any case of the key) must be 'true' (any case), and then the table must be
  bucketed, stored in an ACID format (ORC's input and output formats) and not external; the key is stored as
  `transactional` with the value 'true'.
- alter: setting it to 'true' has the same requirements; any other value is refused unless it equals the old
  value (so 'true' cannot be unset). A new definition without parameters is not checked, as in Hive.
Hive decides "ACID format" by loading the format classes and testing for AcidInputFormat/AcidOutputFormat; without
a JVM, ORC's pair (the only ACID formats Hive ships) is what counts, and any other class is "not ACID" rather than
Hive's "Invalid input/output format" for a class it cannot load. `transactional_properties` is not checked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from metastore.catalog import Table
from metastore.errors import MetastoreError

TRANSACTIONAL = "transactional"
_ACID_INPUT_FORMATS = frozenset({"org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"})
_ACID_OUTPUT_FORMATS = frozenset({"org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat"})
_NOT_ACID = "The table must be bucketed and stored using an ACID compliant format (such as ORC)"


def _transactional(parameters: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(the key as the client spelled it, its value) of the `transactional` parameter, or (None, None)."""
    for key, value in parameters.items():
        if key.lower() == TRANSACTIONAL:
            return key, value
    return None, None


def _check_acid(table: Table) -> None:
    if (
        not table.sd.bucket_cols
        or table.sd.input_format not in _ACID_INPUT_FORMATS
        or table.sd.output_format not in _ACID_OUTPUT_FORMATS
    ):
        raise MetastoreError(_NOT_ACID)
    if table.table_type == "EXTERNAL_TABLE":
        raise MetastoreError(
            f"{table.db_name}.{table.table_name} cannot be declared transactional because it's an external table"
        )


def _normalised(parameters: Mapping[str, str], key: str | None, value: str | None) -> dict[str, str]:
    params = {k: v for k, v in parameters.items() if k != key}
    if key is not None and value is not None:
        params[TRANSACTIONAL] = value
    return params


def checked_for_create(table: Table) -> Table:
    """The table to create, its `transactional` key normalised; MetastoreError (Hive's MetaException) when the
    parameter breaks Hive's rules."""
    key, value = _transactional(table.parameters)
    if key is None:
        return table
    if (value or "").lower() != "true":
        raise MetastoreError("'transactional' property of TBLPROPERTIES may only have value 'true'")
    _check_acid(table)
    return replace(table, parameters=_normalised(table.parameters, key, "true"))


def checked_alter_parameters(
    old_parameters: Mapping[str, str], new_parameters: Mapping[str, str] | None, new_table: Callable[[], Table]
) -> dict[str, str] | None:
    """The new definition's parameters with the `transactional` key normalised, or None when it has none (not
    checked, as in Hive); MetastoreError for what Hive refuses. new_table() gives the new definition, needed only
    when it sets 'true' (Hive's test alters with a Table holding nothing but parameters)."""
    if not new_parameters:
        return None
    key, value = _transactional(new_parameters)
    _, old_value = _transactional(old_parameters)
    if value is not None and value.lower() == "true":
        _check_acid(new_table())
    elif (old_value is None) != (value is None) or (value is not None and value.lower() != (old_value or "").lower()):
        raise MetastoreError("TBLPROPERTIES with 'transactional'='true' cannot be unset")
    return _normalised(new_parameters, key, value)
