"""The ``inputs`` suites: the ``updates`` log and the base tables it is applied to.

Schemas come from :data:`aspen.lake.tables.TABLE_DDL` (the tables Spark writes); the value rules
are those of docs/architecture.md, "Update records": ids non-empty, costs finite and ``≥ 0``,
coordinates finite, ``op`` and ``relation`` from the known sets. Base tables hold one row per
live insertion instance, so their unique key is the instance variable ``var``, not the tuple
key; every such variable must be alive in the ``variables`` registry (a cross-table check).

>>> [s.table for s in INPUT_SUITES]
['updates', 'link', 'sensor', 'triggered', 'region_seed', 'variables']
>>> INPUT_SUITES[0].expected_columns[:3]
('batch_id', 'seq', 'source')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from aspen.lake.tables import BASE_KEY_COLUMNS, TABLE_DDL, UPDATES, VARIABLES
from aspen.lake.validation import OPS, RELATIONS
from aspen.quality.expect import (
    FLOAT_MAX,
    at_least,
    between,
    finite,
    finite_non_negative,
    in_set,
    not_null,
    pair_at_least,
    unique,
)
from aspen.quality.spec import CrossCheck, CrossCheckResult, SuiteParams, TableSuite

if TYPE_CHECKING:
    import pandas as pd
    from great_expectations.expectations import Expectation

__all__ = ["INPUT_SUITES", "ddl_columns"]

FAMILY = "inputs"
_INSTANCE_COLUMNS = ("var", "inserted_at", "batch_id", "seq")


def ddl_columns(table: str) -> tuple[str, ...]:
    """The column names of ``table`` in :data:`TABLE_DDL` order.

    >>> ddl_columns("triggered")
    ('id', 'var', 'inserted_at', 'expires_at', 'batch_id', 'seq')
    """
    return tuple(part.split()[0].strip("`") for part in TABLE_DDL[table].split(","))


def _updates(_: SuiteParams) -> list[Expectation]:
    out = not_null("batch_id", "seq", "source", "op", "relation", "ingested_at")
    out += unique("batch_id", "seq")
    out += in_set("op", OPS) + in_set("relation", RELATIONS)
    for relation, (keys, values) in RELATIONS.items():
        where = f'relation == "{relation}"'
        out += not_null(*keys, where=where)
        if values:
            out += not_null(*values, where=f'{where} and op == "insert"')
    out += at_least("batch_id", 1) + between("cost", 0, FLOAT_MAX) + at_least("ttl_s", 0)
    out += finite("x") + finite("y")
    return out


def _base(table: str):
    def build(_: SuiteParams) -> list[Expectation]:
        out = not_null(*BASE_KEY_COLUMNS[table], *_INSTANCE_COLUMNS) + unique("var")
        if table == "link":
            out += finite_non_negative("cost")
        if table == "sensor":
            out += not_null("x", "y") + finite("x") + finite("y")
        return out

    return build


def _variables(_: SuiteParams) -> list[Expectation]:
    out = not_null("var", "relation", "key", "values", "inserted_batch", "inserted_seq")
    out += unique("var") + in_set("relation", RELATIONS)
    out += pair_at_least("deleted_batch", "inserted_batch")
    return out


def _vars_alive(frame: pd.DataFrame, tables: Mapping[str, pd.DataFrame]) -> CrossCheckResult:
    """Every instance variable of a base table is in the registry and not dead."""
    if VARIABLES not in tables or "var" not in frame:
        return None
    registry = tables[VARIABLES]
    alive = set(registry.loc[registry["deleted_batch"].isna(), "var"])
    bad = sorted(set(frame["var"].dropna()) - alive)
    if bad:
        return False, f"{len(bad)} variable(s) not alive in '{VARIABLES}', e.g. {bad[:5]}"
    return True, f"{frame['var'].nunique()} variable(s), all alive in '{VARIABLES}'"


_VARS_ALIVE = CrossCheck("aspen_vars_alive_in_registry", ("var",), _vars_alive)

INPUT_SUITES: tuple[TableSuite, ...] = (
    TableSuite(FAMILY, UPDATES, ddl_columns(UPDATES), _updates),
    *(
        TableSuite(FAMILY, table, ddl_columns(table), _base(table), cross_checks=(_VARS_ALIVE,))
        for table in BASE_KEY_COLUMNS
    ),
    TableSuite(FAMILY, VARIABLES, ddl_columns(VARIABLES), _variables),
)
