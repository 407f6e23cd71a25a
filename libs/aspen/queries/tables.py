"""The tables a query may name, with their columns: the base tables and the views (data only).

A table's *columns* are every column a query may read; its *tuple columns* are the ones
``SELECT *`` expands to. A base table is read one row per live tuple
(:mod:`aspen.queries.base_tuples`): its columns are the tuple's values and the per-tuple
bookkeeping (``instances``, ``expires_at`` …), not the stored instance columns (``var``,
``seq`` …); a view's are its Delta table's columns, its attributes and provenance bookkeeping.

>>> known_tables()["link"].tuple_columns
('src', 'dst', 'cost')
>>> "instances" in known_tables()["link"].columns, "var" in known_tables()["link"].columns
(True, False)
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
    """Every table a query may name: the base tables (aspen.lake.tables, as their live tuples)
    and the views (aspen.catalog), by name."""
    from aspen.catalog import VIEW_COLUMNS
    from aspen.lake.tables import BASE_TABLES, BASE_VALUE_COLUMNS
    from aspen.queries.base_tuples import tuple_columns

    out: dict[str, TableColumns] = {}
    for table in BASE_TABLES:
        out[table] = TableColumns(tuple_columns(table), BASE_VALUE_COLUMNS[table])
    for view, attributes in VIEW_COLUMNS.items():
        out[view] = TableColumns((*attributes, *_VIEW_EXTRA_COLUMNS), attributes)
    return out
