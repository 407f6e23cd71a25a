"""The front door: a read-only SQL statement over the lake, its answer and, with provenance,
each row's formula over base-tuple variables.

:func:`run_sql` reads the lake (on Spark by default, or in process with DuckDB: delta-rs →
pandas → DuckDB); :func:`run_frames` runs over frames already in hand, with the variable names
of any view's instance variables (what the tests use). Both parse (:mod:`~aspen.sqlprov.parse`),
instrument — by default optimized: the PATs applied and the choices made by the engine's cost
estimates (:mod:`~aspen.sqlprov.optimize`) — run the plain and the instrumented statement,
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
from aspen.provenance.bdd import Formula, ProvenanceManager
from aspen.settings import Settings
from aspen.sqlprov.algebra import Query, scans
from aspen.sqlprov.answer import SqlAnswer
from aspen.sqlprov.formula import Composer, ViewFormulas, values_key
from aspen.sqlprov.instrument import ENGINES, Instrumented, instrument
from aspen.sqlprov.optimize import Plan, explain_text, plan_query
from aspen.sqlprov.parse import parse_sql
from aspen.sqlprov.shape import Shape, columns, identity_of_values
from aspen.sqlprov.tables import SQL_TABLES, SqlTable

__all__ = ["compose", "explain_sql", "parsed", "prepare", "run_frames", "run_sql"]


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
    query = parsed(sql)
    return query.names, instrument(query)


@lru_cache(maxsize=64)
def _parsed(sql: str) -> Query:
    return parse_sql(sql)


def parsed(sql: str, tables: Mapping[str, SqlTable] | None = None) -> Query:
    """``sql`` parsed (cached for the lake's own tables).

    >>> parsed("SELECT id FROM triggered").names
    ('id',)
    """
    return _parsed(sql) if tables is None else parse_sql(sql, tables)


def _check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise ConfigError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")


def run_frames(frames: Mapping[str, Any], sql: str, provenance: bool = True,
               names: Mapping[str, str] | None = None, backend: str | None = None,
               optimize: bool = True, strategy: str = "adaptive",
               manager: ProvenanceManager | None = None,
               tables: Mapping[str, SqlTable] | None = None) -> SqlAnswer:
    """``sql`` over ``frames`` (table name → pandas or Arrow; base tables one row per live
    tuple) in DuckDB; ``names`` maps the instance variables of the views' stored formulas to
    base tuple names. With ``optimize`` (the default) the instrumentation is chosen by
    ``strategy`` on DuckDB's estimates; formulas go to ``manager`` when given; ``tables``
    replaces the lake's catalog (other tables, e.g. TPC-H's)."""
    from aspen.sqlprov.cost import duckdb_seconds
    from aspen.sqlprov.engines import registered, run_on

    query = parsed(sql, tables)
    used = tuple(dict.fromkeys(s.table for s in scans(query.root)))
    missing = [t for t in used if t not in frames]
    if missing:
        raise ConfigError(f"no frame for table(s) {', '.join(missing)}")
    with registered({t: frames[t] for t in used}) as con:
        if provenance:
            plan = plan_query(query, tables, lambda text: duckdb_seconds(con, text), "duckdb",
                              strategy, optimize)
            inst = plan.inst
        else:
            inst = prepare(sql)[1] if tables is None else instrument(query, tables)
        statements = _statements(inst, "duckdb", provenance)
        results = run_on(con, list(statements.values()), _caps(statements))
    return compose(query.names, inst, results, statements, names or {}, backend, "duckdb",
                   manager)


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

    views = provenance and any(SQL_TABLES[t].kind == "view" for t in inst.tables)
    names = variable_names(settings) if views else {}
    if engine == "duckdb":
        from aspen.sqlprov.cost import duckdb_seconds
        from aspen.sqlprov.engines import registered, run_on

        with registered(lake_frames(settings, inst.tables)) as con:
            if provenance:
                inst = plan_query(parsed(sql), None, lambda text: duckdb_seconds(con, text),
                                  engine).inst
            statements = _statements(inst, engine, provenance)
            results = run_on(con, list(statements.values()), _caps(statements))
    else:
        from aspen.spark.session import get_spark
        from aspen.sqlprov.engines import run_spark

        spark = get_spark("aspen-sql")
        frames = spark_frames(spark, settings, inst.tables)
        if provenance:
            inst = _spark_plan(spark, frames, sql).inst
        statements = _statements(inst, engine, provenance)
        results = run_spark(spark, frames, list(statements.values()), _caps(statements))
    return compose(columns_, inst, results, statements, names, backend, engine)


def _spark_plan(spark: Any, frames: Mapping[str, Any], sql: str) -> Plan:
    """The optimized plan costed by Spark's plan estimates (the frames as temporary views for
    the costing); without estimates (an error from the plan's statistics), the heuristic
    choices."""
    from aspen.sqlprov.cost import spark_seconds

    for name, frame in frames.items():
        frame.createOrReplaceTempView(name)
    try:
        return plan_query(parsed(sql), None, lambda text: spark_seconds(spark, text), "spark")
    except Exception:  # noqa: BLE001 - no estimates from this Spark: the heuristic choices
        return plan_query(parsed(sql), None, None, "spark")
    finally:
        for name in frames:
            spark.catalog.dropTempView(name)


def explain_sql(settings: Settings, sql: str, engine: str = "spark",
                strategy: str = "adaptive") -> str:
    """The rules applied, the choices made with each plan's estimated cost, the plain and the
    instrumented SQL of ``sql`` over the lake of ``settings`` (costed by ``engine``'s
    estimates over the lake's tables; nothing runs).

    Example, on a lake::

        print(explain_sql(settings, "SELECT src FROM link", "duckdb"))
        # -- rules applied: none …
    """
    _check_engine(engine)
    query = parsed(sql)
    used = tuple(dict.fromkeys(s.table for s in scans(query.root)))
    from aspen.sqlprov.lake import lake_frames, spark_frames

    if engine == "duckdb":
        from aspen.sqlprov.cost import duckdb_seconds
        from aspen.sqlprov.engines import registered

        with registered(lake_frames(settings, used)) as con:
            plan = plan_query(query, None, lambda text: duckdb_seconds(con, text), engine,
                              strategy)
    else:
        from aspen.spark.session import get_spark

        spark = get_spark("aspen-sql")
        plan = _spark_plan(spark, spark_frames(spark, settings, used), sql)
    return explain_text(plan, engine)


def _statements(inst: Instrumented, engine: str, provenance: bool) -> dict[str, str]:
    out = {"plain": inst.plain_sql(engine)}
    if provenance:
        out["instrumented"] = inst.instrumented_sql(engine)
    return out


def _caps(statements: Mapping[str, str]) -> list[int | None]:
    """The plain answer uncapped; the instrumented rows at most MAX_WITNESS_ROWS."""
    from aspen.sqlprov.engines import MAX_WITNESS_ROWS

    return [MAX_WITNESS_ROWS if name == "instrumented" else None for name in statements]


def _reads_views(shape: Shape) -> bool:
    """Whether any witness of ``shape`` (nested groups included) is a view row's formula."""
    return any(leaf.kind == "view" for part in shape for leaf in part.ids) or any(
        _reads_views(group.shape) for part in shape for group in part.groups)


def compose(names: tuple[str, ...], inst: Instrumented, results: Sequence[list[tuple]],
            statements: Mapping[str, str], variables: Mapping[str, str],
            backend: str | None, engine: str, manager: ProvenanceManager | None = None,
            structured: bool = True) -> SqlAnswer:
    """The answer from the plain rows (``results[0]``) and, when there, the instrumented ones
    (formulas in ``manager``, a new one when None). With ``structured`` (the default) the
    answer's variables are declared up front in structural order and each group's formula is
    built once (:meth:`~aspen.sqlprov.formula.Composer.declare`); without, in row order and
    per outer row — the same functions, only slower."""
    rows = results[0]
    if len(results) < 2:
        return SqlAnswer(names, rows, sql=dict(statements), engine=engine)
    manager = ProvenanceManager(backend) if manager is None else manager
    ordered = structured and not _reads_views(inst.shape)
    composer = Composer(manager, ViewFormulas(manager, variables), memo=structured)
    header = inst.outputs + columns(inst.shape)
    width = len(inst.outputs)
    by_values: dict[tuple, list[dict[str, Any]]] = {}
    for raw in results[1]:
        record = dict(zip(header, raw, strict=True))
        by_values.setdefault(values_key(raw[:width]), []).append(record)
    by_rounded: dict[tuple, list[dict[str, Any]]] | None = None  # built when first needed
    # each distinct answer row's witnesses, once (rows with equal values share a formula)
    witnesses_of: dict[tuple, list[dict[str, Any]]] = {}
    for row in rows:
        key = values_key(row)
        if key not in witnesses_of:
            found = by_values.get(key)
            if found is None:  # a float aggregate summed in another order by the other run
                if by_rounded is None:
                    by_rounded = {}
                    for values, records in by_values.items():
                        by_rounded.setdefault(_rounded(values), []).extend(records)
                found = by_rounded.get(_rounded(row), [])
            witnesses_of[key] = found
    if structured:
        # with view witnesses the decoded view formulas place their own variables, and the
        # up-front order measured slower there (docs/sql-provenance.md): bulk decoding only
        composer.declare((w for w in witnesses_of.values() if w), inst.shape,
                         order_variables=ordered)
    # where every answer's tuples lie in few runs of the structural order, that order is the
    # one wanted: CUDD's sifting would only spend time (most of it, on thousands of variables)
    # and move it away; tuples crossing many others (TPC-H Q5's suppliers across customers)
    # blow up in a fixed order, and sifting keeps them bounded — restored afterwards
    fixed = (ordered and manager.backend == "cudd"
             and composer.crossing(witnesses_of.values(), inst.shape) <= MAX_CROSSING)
    before = manager.bdd.configure(reordering=False)["reordering"] if fixed else None
    try:
        formula_of = {key: composer.answer(w, inst.shape) if w else manager.false
                      for key, w in witnesses_of.items()}
    finally:
        if fixed:
            manager.bdd.configure(reordering=before)
    formulas = []
    notes = list(inst.notes)
    false_now = 0
    for row in rows:
        f = formula_of[values_key(row)]
        if not _true_when_all_present(manager, f):
            false_now += 1
        formulas.append(f)
    if false_now and not notes:
        notes.append(f"{false_now} row(s) whose formula is false over the current tuples")
    return SqlAnswer(names, rows, manager, formulas, tuple(notes), dict(statements), engine)


#: The most tuples open at once (:meth:`~aspen.sqlprov.formula.Composer.crossing`) under which
#: formulas are composed in the structural order with CUDD's reordering off.
MAX_CROSSING = 24


def _true_when_all_present(manager: ProvenanceManager, formula: Formula) -> bool:
    """Whether ``formula`` holds when every tuple it mentions is present: the path of high
    edges from its root (``manager.support`` lists variables in time quadratic in their number
    on CUDD, and the path is what ``evaluate`` would restrict to anyway).

    >>> m = ProvenanceManager(backend="python")
    >>> x, y = m.var("x"), m.var("y")
    >>> [_true_when_all_present(m, f) for f in (x | y, x & ~y, ~x | y, m.false)]
    [True, False, True, False]
    """
    node, true, false = formula, manager.true, manager.false
    while node != true and node != false:
        node = ~(~node).high if getattr(node, "negated", False) else node.high
    return node == true


def _rounded(values: Sequence[Any]) -> tuple:
    """Row values as a key, floats to 12 significant digits.

    >>> _rounded((0.1 + 0.2, "a")) == _rounded((0.3, "a"))
    True
    """
    return tuple(float(f"{v:.12g}") if isinstance(v, float) else v
                 for v in identity_of_values(tuple(values)))
