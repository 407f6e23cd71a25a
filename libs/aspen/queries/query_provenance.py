"""Continuous queries that keep provenance: a registered query's SQL run through the SQL
provenance instrumentation (:func:`aspen.sqlprov.run.run_sql`), each result row written to
``q_<name>`` with its formula.

A query registered with provenance (``aspen query register NAME --sql … --provenance``) is
run this way by every run — ``aspen query run`` and the rounds after maintained batches
(:func:`aspen.queries.runner.run_registered`): never by its plan on Spark nor incrementally
(state + merge), always as a full instrumented run. ``q_<name>`` then holds the query's columns
and one more, :data:`PROVENANCE_COLUMN`: the row's formula as JSON text, in the form ``aspen
sql --provenance --format json`` prints (:func:`aspen.sqlprov.render.to_json`; rows with equal
values share one formula). The table is rewritten whole by delta-rs on each run.

>>> formula_column(["x"], [{"var": "link:a:b"}]).to_pylist()
[{'x': 'x', 'provenance': '{"var": "link:a:b"}'}]
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aspen.errors import ConfigError
from aspen.queries.names import result_table
from aspen.settings import Settings

if TYPE_CHECKING:
    import pyarrow as pa

    from aspen.sqlprov.answer import SqlAnswer

__all__ = ["PROVENANCE_COLUMN", "ProvenanceReport", "check_instrumentable", "formula_column",
           "query_answer", "result_data", "run_with_provenance"]

#: The column of ``q_<name>`` that holds a row's formula (JSON text).
PROVENANCE_COLUMN = "provenance"


@dataclass(frozen=True)
class ProvenanceReport:
    """One run of a query with provenance: its rows, seconds, run id, engine, and the notes
    that say where a formula is not the exact condition of its row.

    >>> ProvenanceReport("hot", 3, 0.52, "ab12", "duckdb").line()
    'hot: 3 rows with provenance into q_hot in 0.52 s (duckdb)'
    """

    name: str
    result_rows: int
    seconds: float
    run_id: str
    engine: str
    notes: tuple[str, ...] = ()

    def line(self) -> str:
        """The run in one line (without the leading ``query``)."""
        notes = f"; note: {'; '.join(self.notes)}" if self.notes else ""
        return (f"{self.name}: {self.result_rows} rows with provenance into "
                f"{result_table(self.name)} in {self.seconds:.2f} s ({self.engine}){notes}")


def check_instrumentable(name: str, sql: str) -> None:
    """Refuse, in one line, a query whose SQL the provenance instrumentation does not take, or
    whose result already has a column named :data:`PROVENANCE_COLUMN`.

    >>> check_instrumentable("ok", "SELECT src FROM link")
    >>> try:
    ...     check_instrumentable("p", "SELECT src AS provenance FROM link")
    ... except ConfigError as err:
    ...     print(err)
    query 'p' cannot keep provenance: its result has a column named 'provenance' already (rename it)
    """
    from aspen.sqlprov.run import prepare

    try:
        columns, _ = prepare(sql)
    except ConfigError as err:
        raise ConfigError(f"query {name!r} cannot keep provenance: {_first_line(err)}") from None
    if PROVENANCE_COLUMN in columns:
        raise ConfigError(f"query {name!r} cannot keep provenance: its result has a column "
                          f"named {PROVENANCE_COLUMN!r} already (rename it)")


def _first_line(err: Exception) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


def query_answer(settings: Settings, name: str, sql: str, engine: str) -> SqlAnswer:
    """The answer of the query ``name`` (its ``sql``) over the lake, with each row's formula
    (:func:`aspen.sqlprov.run.run_sql` on ``engine``)."""
    from aspen.sqlprov.run import run_sql

    check_instrumentable(name, sql)
    return run_sql(settings, sql, provenance=True, engine=engine)


def formula_column(columns: Sequence[str], rows: Sequence[Any],
                   values: Sequence[Sequence[Any]] | None = None) -> pa.Table:
    """``values`` (default: each column's name) under ``columns`` plus :data:`PROVENANCE_COLUMN`,
    each of ``rows`` (rendered formulas) as JSON text. A column without a value anywhere (an
    empty answer) is typed as text."""
    import pyarrow as pa

    if values is None:
        values = [tuple(columns) for _ in rows]
    arrays = {}
    for i, column in enumerate(columns):
        cells = [_cell(v[i]) for v in values]
        try:
            array = pa.array(cells)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed types: as text
            array = pa.array([None if c is None else str(c) for c in cells], pa.string())
        arrays[column] = array if array.type != pa.null() else array.cast(pa.string())
    arrays[PROVENANCE_COLUMN] = pa.array([json.dumps(r) for r in rows], pa.string())
    return pa.table(arrays)


def _cell(value: Any) -> Any:
    """A cell as Arrow takes it (NumPy arrays and scalars as lists and Python values)."""
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        return value.tolist()
    return value


def result_data(answer: SqlAnswer) -> pa.Table:
    """The rows of ``answer`` with their formulas, as ``q_<name>`` holds them."""
    rendered = [answer.provenance(i) for i in range(len(answer.rows))]
    return formula_column(answer.columns, rendered, answer.rows)


def run_with_provenance(settings: Settings, name: str, sql: str, engine: str = "spark",
                        write: bool = True) -> tuple[ProvenanceReport, SqlAnswer]:
    """Run the query ``name`` (its ``sql``) with provenance on ``engine`` (``spark`` or
    ``duckdb``, in process); with ``write`` rewrite ``q_<name>`` with its rows and formulas.

    Example, on a lake::

        report, answer = run_with_provenance(settings, "hot", entry.sql, engine="duckdb")
        answer.provenance(0)  # {'and': [{'var': 'link:a:b'}, {'var': 'link:b:c'}]}
    """
    from aspen.lake.deltars import write_table

    started = time.monotonic()
    answer = query_answer(settings, name, sql, engine)
    if write:
        write_table(settings, result_table(name), result_data(answer), mode="overwrite")
    report = ProvenanceReport(name, len(answer.rows), time.monotonic() - started,
                              uuid.uuid4().hex[:12], engine, tuple(answer.notes))
    return report, answer
