"""Running statements over named tables: DuckDB in process (frames: pandas or Arrow), or
Spark SQL (temporary views of the lake's tables).

>>> import pandas as pd
>>> run_duckdb({"t": pd.DataFrame({"x": [1, 2]})}, ["SELECT x FROM t ORDER BY x"])
[[(1,), (2,)]]
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from aspen.errors import QueryRunError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["MAX_WITNESS_ROWS", "registered", "run_duckdb", "run_on", "run_spark", "spark_cell"]

#: The most instrumented rows a query may give (they are composed in one process).
MAX_WITNESS_ROWS = 2_000_000


_LOCAL = threading.local()


def _connection() -> Any:
    """This thread's in-memory DuckDB connection (opening one takes tens of milliseconds)."""
    import duckdb

    con = getattr(_LOCAL, "con", None)
    if con is None:
        con = _LOCAL.con = duckdb.connect()
    return con


def _capped(rows: list[tuple], cap: int | None) -> list[tuple]:
    if cap is not None and len(rows) > cap:
        raise QueryRunError(f"the instrumented query gives more than {cap:,} witness rows: "
                            "narrow the query (WHERE, fewer joins) or leave out --provenance")
    return rows


@contextmanager
def registered(frames: Mapping[str, Any]) -> Iterator[Any]:
    """This thread's DuckDB connection with ``frames`` registered as tables of their names
    (unregistered after)."""
    con = _connection()
    try:
        for name, frame in frames.items():
            con.register(name, frame)
        yield con
    finally:
        for name in frames:
            con.unregister(name)


def run_on(con: Any, statements: Sequence[str], caps: Sequence[int | None] | None = None
           ) -> list[list[tuple]]:
    """Each statement's rows on DuckDB connection ``con``; a statement with a cap in ``caps``
    refuses more rows than that."""
    import duckdb

    out = []
    for sql, cap in zip(statements, caps or [None] * len(statements), strict=True):
        try:
            relation = con.sql(sql)
            rows = (relation if cap is None else relation.limit(cap + 1)).fetchall()
            out.append(_capped([tuple(r) for r in rows], cap))
        except duckdb.Error as err:
            first = str(err).splitlines()[0]
            raise QueryRunError(f"DuckDB refused the query: {first}") from None
    return out


def run_duckdb(frames: Mapping[str, Any], statements: Sequence[str],
               caps: Sequence[int | None] | None = None) -> list[list[tuple]]:
    """Each statement's rows, with ``frames`` registered as tables of their names (for the
    run only); a statement with a cap in ``caps`` refuses more rows than that."""
    with registered(frames) as con:
        return run_on(con, statements, caps)


def spark_cell(value: Any) -> Any:
    """A Spark cell as DuckDB would give it (bytes, lists)."""
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, list):
        return [spark_cell(v) for v in value]
    return value


def run_spark(spark: SparkSession, frames: Mapping[str, DataFrame],
              statements: Sequence[str], caps: Sequence[int | None] | None = None
              ) -> list[list[tuple]]:
    """Each statement's rows, with ``frames`` as temporary views of their names (dropped
    after); caps as :func:`run_duckdb`'s."""
    for name, frame in frames.items():
        frame.createOrReplaceTempView(name)
    try:
        out = []
        for sql, cap in zip(statements, caps or [None] * len(statements), strict=True):
            frame = spark.sql(sql)
            rows = (frame if cap is None else frame.limit(cap + 1)).collect()
            out.append(_capped([tuple(spark_cell(v) for v in row) for row in rows], cap))
        return out
    finally:
        for name in frames:
            spark.catalog.dropTempView(name)
