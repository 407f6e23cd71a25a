"""The front door: a read-only SQL statement over the lake, its answer and, with provenance,
each row's formula over base-tuple variables.

:func:`run_sql` reads the lake (on Spark by default, or in process with DuckDB: delta-rs →
pandas → DuckDB); :func:`run_frames` runs over frames already in hand, with the variable names
of any view's instance variables (what the tests use). Both parse (:mod:`~aspen.sqlprov.parse`),
instrument (:mod:`~aspen.sqlprov.instrument`), run the plain and the instrumented statement,
and compose each answer row's formula from the instrumented rows with the same values
(:mod:`~aspen.sqlprov.formula`). Rows with equal values (a bag answer) share one formula: the
condition for those values to be in the answer.

>>> import pandas as pd
>>> links = pd.DataFrame({"src": ["a", "b"], "dst": ["b", "c"], "cost": [1.0, 1.0]})
>>> out = run_frames({"link": links}, "SELECT x.src, y.dst FROM link x JOIN link y "
...                  "ON x.dst = y.src")
>>> out.rows, out.provenance(0)
([('a', 'c')], {'and': [{'var': 'link:a:b'}, {'var': 'link:b:c'}]})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from aspen.errors import ConfigError
from aspen.provenance.bdd import ProvenanceManager
from aspen.settings import Settings
from aspen.sqlprov.answer import SqlAnswer
from aspen.sqlprov.formula import Composer, ViewFormulas
from aspen.sqlprov.instrument import ENGINES, Instrumented, instrument
from aspen.sqlprov.parse import parse_sql
from aspen.sqlprov.shape import columns, identity_of_values
from aspen.sqlprov.tables import SQL_TABLES

__all__ = ["prepare", "run_frames", "run_sql"]


def prepare(sql: str) -> tuple[tuple[str, ...], Instrumented]:
    """The statement's column names and its instrumentation (ConfigError when it is not one
    supported read-only statement); nothing runs.

    >>> names, inst = prepare("SELECT id FROM triggered")
    >>> names, inst.tables
    (('id',), ('triggered',))
    """
    return _prepared(sql)


@lru_cache(maxsize=64)
def _prepared(sql: str) -> tuple[tuple[str, ...], Instrumented]:
    query = parse_sql(sql)
    return query.names, instrument(query)


def _check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise ConfigError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")


def run_frames(frames: Mapping[str, Any], sql: str, provenance: bool = True,
               names: Mapping[str, str] | None = None, backend: str | None = None
               ) -> SqlAnswer:
    """``sql`` over ``frames`` (table name → pandas or Arrow; base tables one row per live
    tuple) in DuckDB; ``names`` maps the instance variables of the views' stored formulas to
    base tuple names."""
    from aspen.sqlprov.engines import run_duckdb

    columns_, inst = prepare(sql)
    missing = [t for t in inst.tables if t not in frames]
    if missing:
        raise ConfigError(f"no frame for table(s) {', '.join(missing)}")
    statements = _statements(inst, "duckdb", provenance)
    results = run_duckdb({t: frames[t] for t in inst.tables}, list(statements.values()),
                         _caps(statements))
    return compose(columns_, inst, results, statements, names or {}, backend, "duckdb")


def run_sql(settings: Settings, sql: str, provenance: bool = True, engine: str = "spark",
            backend: str | None = None) -> SqlAnswer:
    """``sql`` over the lake of ``settings`` on ``engine`` (``spark`` or ``duckdb``).

    Example, on a lake::

        run_sql(settings, "SELECT src FROM link", engine="duckdb").provenance(0)
        # {'var': 'link:n1:n2'}
    """
    _check_engine(engine)
    columns_, inst = prepare(sql)
    from aspen.sqlprov.lake import lake_frames, spark_frames, variable_names

    statements = _statements(inst, engine, provenance)
    views = provenance and any(SQL_TABLES[t].kind == "view" for t in inst.tables)
    names = variable_names(settings) if views else {}
    if engine == "duckdb":
        from aspen.sqlprov.engines import run_duckdb

        results = run_duckdb(lake_frames(settings, inst.tables), list(statements.values()),
                             _caps(statements))
    else:
        from aspen.spark.session import get_spark
        from aspen.sqlprov.engines import run_spark

        spark = get_spark("aspen-sql")
        results = run_spark(spark, spark_frames(spark, settings, inst.tables),
                            list(statements.values()), _caps(statements))
    return compose(columns_, inst, results, statements, names, backend, engine)


def _statements(inst: Instrumented, engine: str, provenance: bool) -> dict[str, str]:
    out = {"plain": inst.plain_sql(engine)}
    if provenance:
        out["instrumented"] = inst.instrumented_sql(engine)
    return out


def _caps(statements: Mapping[str, str]) -> list[int | None]:
    """The plain answer uncapped; the instrumented rows at most MAX_WITNESS_ROWS."""
    from aspen.sqlprov.engines import MAX_WITNESS_ROWS

    return [MAX_WITNESS_ROWS if name == "instrumented" else None for name in statements]


def compose(names: tuple[str, ...], inst: Instrumented, results: Sequence[list[tuple]],
            statements: Mapping[str, str], variables: Mapping[str, str],
            backend: str | None, engine: str) -> SqlAnswer:
    """The answer from the plain rows (``results[0]``) and, when there, the instrumented ones."""
    rows = results[0]
    if len(results) < 2:
        return SqlAnswer(names, rows, sql=dict(statements), engine=engine)
    manager = ProvenanceManager(backend)
    composer = Composer(manager, ViewFormulas(manager, variables))
    header = inst.outputs + columns(inst.shape)
    width = len(inst.outputs)
    by_values: dict[tuple, list[dict[str, Any]]] = {}
    by_rounded: dict[tuple, list[dict[str, Any]]] = {}
    for raw in results[1]:
        record = dict(zip(header, raw, strict=True))
        by_values.setdefault(identity_of_values(raw[:width]), []).append(record)
        by_rounded.setdefault(_rounded(raw[:width]), []).append(record)
    formulas = []
    notes = list(inst.notes)
    false_now = 0
    for row in rows:
        witnesses = by_values.get(identity_of_values(row))
        if witnesses is None:  # a float aggregate summed in another order by the other run
            witnesses = by_rounded.get(_rounded(row), [])
        f = composer.answer(witnesses, inst.shape) if witnesses else manager.false
        if not manager.evaluate(f, manager.support(f)):
            false_now += 1
        formulas.append(f)
    if false_now and not notes:
        notes.append(f"{false_now} row(s) whose formula is false over the current tuples")
    return SqlAnswer(names, rows, manager, formulas, tuple(notes), dict(statements), engine)


def _rounded(values: Sequence[Any]) -> tuple:
    """Row values as a key, floats to 12 significant digits.

    >>> _rounded((0.1 + 0.2, "a")) == _rounded((0.3, "a"))
    True
    """
    return tuple(float(f"{v:.12g}") if isinstance(v, float) else v
                 for v in identity_of_values(tuple(values)))
