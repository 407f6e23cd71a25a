"""The tables a provenance query may name, their columns, and the variable each row stands for.

Base tables read as users mean them: one row per live tuple (:mod:`aspen.queries.base_tuples`),
and each tuple is one variable named by its relation and key — ``link:SRC:DST``,
``sensor:ID``, ``triggered:ID``, ``region_seed:REGION:ID`` (its live instances OR-ed into one).
``readings`` is append-only: each reading is ``reading:ID``. A view's row contributes its stored
formula, its instance variables renamed to these names (:func:`tuple_name`).

>>> sorted(SQL_TABLES)[:3]
['active_region', 'cheapest_path', 'fewest_hops']
>>> SQL_TABLES["link"].star, SQL_TABLES["link"].kind
(('src', 'dst', 'cost'), 'base')
>>> SQL_TABLES["readings"].columns[:3]
('id', 'batch_id', 'source')
>>> tuple_name("link", ["a", "b", 2.0]), tuple_name("region_seed", ["r1", "s7"])
('link:a:b', 'region_seed:r1:s7')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aspen.catalog import VIEW_COLUMNS
from aspen.lake.tables import (
    BASE_KEY_COLUMNS,
    BASE_TABLES,
    BASE_VALUE_COLUMNS,
    READINGS,
    TABLE_DDL,
)
from aspen.queries.base_tuples import tuple_columns

__all__ = ["NO_FORMULA_VIEWS", "SQL_TABLES", "SqlTable", "tuple_name", "variable_parts"]

#: Views whose rows store no formula (aggregates of other views): no provenance to compose.
NO_FORMULA_VIEWS = frozenset({"region_sizes", "largest_regions"})
#: The readings table's columns, from its DDL (aspen.lake.tables).
_READING_COLUMNS = tuple(part.split()[0].strip("`") for part in TABLE_DDL[READINGS].split(","))


@dataclass(frozen=True)
class SqlTable:
    """A table as a query reads it: ``kind`` ``base`` (a variable per row, named from
    ``key``), ``view`` (a stored formula per row) or ``readings``; every column a query may
    read; the ones ``SELECT *`` expands to."""

    name: str
    kind: str
    columns: tuple[str, ...]
    star: tuple[str, ...]
    key: tuple[str, ...] = ()
    prefix: str = ""


def _catalog() -> dict[str, SqlTable]:
    out = {t: SqlTable(t, "base", tuple_columns(t), BASE_VALUE_COLUMNS[t], BASE_KEY_COLUMNS[t], t)
           for t in BASE_TABLES}
    out[READINGS] = SqlTable(READINGS, "readings", _READING_COLUMNS, _READING_COLUMNS, ("id",),
                             "reading")
    for view, attributes in VIEW_COLUMNS.items():
        out[view] = SqlTable(view, "view", (*attributes, "provenance"), attributes)
    return out


#: Every table a provenance query may name, by name.
SQL_TABLES: dict[str, SqlTable] = _catalog()


def variable_parts(table: SqlTable) -> tuple[str, tuple[str, ...]]:
    """The variable name's prefix and the columns joined after it (``link``: src, dst).

    >>> variable_parts(SQL_TABLES["readings"])
    ('reading', ('id',))
    """
    return table.prefix, table.key


def tuple_name(relation: str, values: Sequence[Any]) -> str:
    """The variable of base tuple ``relation(values)``: the relation, then its key values,
    joined by ``:``."""
    arity = len(BASE_KEY_COLUMNS.get(relation, values))
    return ":".join([relation, *(str(v) for v in list(values)[:arity])])
