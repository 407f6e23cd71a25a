"""Tiny tables and a small grammar of queries for the incremental tests (shared helpers)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import pyarrow as pa

from aspen.queries.incremental.delta import SignedRows
from aspen.queries.sql import parse_query
from aspen.queries.tables import TableColumns

#: Three small tables: r(k, v, w), s(k, x), t(x, y).
COLUMNS: dict[str, tuple[str, ...]] = {"r": ("k", "v", "w"), "s": ("k", "x"), "t": ("x", "y")}
SCHEMAS: dict[str, pa.Schema] = {
    "r": pa.schema([("k", pa.int64()), ("v", pa.int64()), ("w", pa.float64())]),
    "s": pa.schema([("k", pa.int64()), ("x", pa.int64())]),
    "t": pa.schema([("x", pa.int64()), ("y", pa.string())]),
}
TABLES = {name: TableColumns(cols, cols) for name, cols in COLUMNS.items()}

#: FROM clauses of one to three relations (a self-join among them).
FROMS: tuple[str, ...] = (
    "r a",
    "r a JOIN s b ON a.k = b.k",
    "r a JOIN r b ON a.v = b.k",
    "r a JOIN s b ON a.k = b.k JOIN t c ON b.x = c.x",
    "s b JOIN t c ON b.x = c.x JOIN r a ON a.k = b.k AND a.v = c.x",
)
FILTERS: tuple[str, ...] = ("", "a.v > 1", "a.w IS NOT NULL", "a.v IN (0, 2, 3)")
AGGREGATES: tuple[str, ...] = (
    "COUNT(*)", "COUNT(a.w)", "SUM(a.v)", "SUM(a.w)", "AVG(a.v)", "AVG(a.w)", "MIN(a.w)",
    "MAX(a.v)", "COUNT(DISTINCT a.v)", "SUM(a.v) + COUNT(*)",
)


def parse(sql: str):
    """The query over the tiny tables."""
    return parse_query("q", sql, TABLES)


def signed(table: str, rows: Mapping[tuple, int]) -> SignedRows:
    """Signed rows of ``table``."""
    return SignedRows(COLUMNS[table], {r: n for r, n in rows.items() if n})


def as_signed(model: Mapping[str, Counter]) -> dict[str, SignedRows]:
    """Every table of ``model`` (table → Counter of rows) as inserted rows."""
    return {t: signed(t, rows) for t, rows in model.items()}


def rounded(result: Mapping[tuple, int]) -> dict[tuple, int]:
    """A result with floats rounded to 9 digits (the same value summed in another order)."""
    def norm(v):
        return round(v, 9) if isinstance(v, float) else v
    out: Counter = Counter()
    for row, n in result.items():
        out[tuple(norm(v) for v in row)] += n
    return {r: n for r, n in out.items() if n}
