"""The tables a query may name, with their columns: the base tables and the views (data only).

A table's *columns* are every column of its Delta table (a query may read any of them); its
*tuple columns* are the ones ``SELECT *`` expands to (a base tuple's values, a view's
attributes — not the instance or provenance bookkeeping).

>>> known_tables()["link"].tuple_columns
('src', 'dst', 'cost')
>>> "batch_id" in known_tables()["reachable"].columns
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

__all__ = ["TableColumns", "known_tables"]

#: The bookkeeping columns of every view table (aspen.pipeline.view_tables), after its attributes.
_VIEW_EXTRA_COLUMNS = ("provenance", "prov_bytes", "batch_id", "node")


@dataclass(frozen=True)
class TableColumns:
    """A table's columns, and the ones ``SELECT *`` expands to."""

    columns: tuple[str, ...]
    tuple_columns: tuple[str, ...]


@cache
def known_tables() -> Mapping[str, TableColumns]:
    """Every table a query may name: the base tables (aspen.lake.tables) and the views
    (aspen.catalog), by name."""
    from aspen.catalog import VIEW_COLUMNS
    from aspen.lake.tables import BASE_TABLES, BASE_VALUE_COLUMNS, TABLE_DDL

    out: dict[str, TableColumns] = {}
    for table in BASE_TABLES:
        columns = tuple(part.split()[0].strip("`") for part in TABLE_DDL[table].split(","))
        out[table] = TableColumns(columns, BASE_VALUE_COLUMNS[table])
    for view, attributes in VIEW_COLUMNS.items():
        out[view] = TableColumns((*attributes, *_VIEW_EXTRA_COLUMNS), attributes)
    return out
