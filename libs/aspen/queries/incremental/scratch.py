"""The from-scratch answer of a query over given rows, in DuckDB: the oracle the incremental
result is checked against (tests, the benchmark's recompute) — the same SQL, transpiled from
Spark SQL by sqlglot, over the same rows.

>>> import pyarrow as pa
>>> from aspen.queries.sql import parse_query
>>> from aspen.queries.incremental.delta import SignedRows
>>> parsed = parse_query("q", "SELECT src, COUNT(*) AS n FROM link GROUP BY src")
>>> rows = SignedRows(("src", "dst", "cost"), {("a", "b", 1.0): 1, ("a", "c", 2.0): 2})
>>> scratch_answer(parsed, {"link": rows})
{('a', 3): 1}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from aspen.queries.incremental.delta import SignedRows, plain_row
from aspen.queries.spec import DIALECT, ParsedQuery

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["scratch_answer"]


def scratch_answer(parsed: ParsedQuery, tables: Mapping[str, SignedRows],
                   schemas: Mapping[str, pa.Schema] | None = None) -> dict[tuple, int]:
    """The result of ``parsed`` over ``tables`` (each row as often as its count), each result
    row with its count; ``schemas`` gives tables' Arrow types (default: inferred; a column of
    only NULLs is a string)."""
    import duckdb
    import pyarrow as pa
    import sqlglot

    connection = duckdb.connect()
    try:
        for table in parsed.tables:
            rows = tables.get(table, SignedRows(()))
            expanded = [row for row, count in rows.counts.items() for _ in range(count)]
            schema = (schemas or {}).get(table)
            if schema is None:
                columns = {c: [r[i] for r in expanded] for i, c in enumerate(rows.columns)}
                data = pa.table({c: pa.array(v) if any(x is not None for x in v)
                                 else pa.array(v, pa.string()) for c, v in columns.items()})
            else:
                data = pa.Table.from_pylist(
                    [dict(zip(schema.names, r, strict=True)) for r in expanded], schema=schema)
            connection.register(table, data)
        sql = sqlglot.transpile(parsed.sql, read=DIALECT, write="duckdb")[0]
        out: dict[tuple, int] = {}
        for row in connection.execute(sql).fetchall():
            key = plain_row(row)
            out[key] = out.get(key, 0) + 1
        return out
    finally:
        connection.close()
