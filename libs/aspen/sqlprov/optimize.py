"""The optimized instrumentation of a query: the provenance-aware transformations applied
(:mod:`aspen.sqlprov.pats`), then the choices — each DISTINCT under set semantics removed or
kept, each base table's provenance column made early or late, each grouped aggregate joined
back or computed by windows — decided by cost (:mod:`aspen.sqlprov.choose`, costs from the
engine's plan estimates, :mod:`aspen.sqlprov.cost`).

Without a cost function every choice takes its first option (the heuristic one: late
provenance columns, aggregates joined back, DISTINCT removed); with ``optimize=False`` nothing
is rewritten and the instrumentation is the fixed rewrite (early, joined back).

>>> plan = plan_query(parse_sql("SELECT DISTINCT src, dst FROM link"), optimize=True)
>>> plan.rules, [p.describe() for p in plan.points]
(('remove_distinct_by_key',), ['provenance column of link link: late'])
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aspen.sqlprov.choose import ChoicePoint, Chooser, Search, search
from aspen.sqlprov.instrument import Instrumented, fixed_option, instrument
from aspen.sqlprov.parse import parse_sql
from aspen.sqlprov.pats import CHOICE_RULES, RULES, Context, rewrite
from aspen.sqlprov.tables import SQL_TABLES, SqlTable

if TYPE_CHECKING:
    from aspen.sqlprov.algebra import Query

__all__ = ["Plan", "explain_text", "plan_query", "plan_sql"]


@dataclass(frozen=True)
class Plan:
    """An instrumentation chosen: the statements, the rules that fired, the choice points met
    and the options taken, the estimated cost (seconds; None when not costed), the search
    (None when not searched) and the seconds the optimizer took."""

    inst: Instrumented
    rules: tuple[str, ...]
    points: tuple[ChoicePoint, ...]
    cost: float | None
    found: Search[tuple[Instrumented, tuple[str, ...]]] | None
    seconds: float


def plan_query(query: Query, tables: Mapping[str, SqlTable] | None = None,
               cost: Callable[[str], float] | None = None, engine: str = "duckdb",
               strategy: str = "adaptive", optimize: bool = True, limit: int = 64) -> Plan:
    """The instrumentation of ``query``: with ``optimize``, the PATs applied and the choices
    made by ``strategy`` on ``cost`` (the estimated seconds of an instrumented statement in
    ``engine``'s dialect); else the fixed rewrite."""
    tables = SQL_TABLES if tables is None else tables
    start = time.perf_counter()
    if not optimize:  # the fixed rewrite, its options recorded
        points: list[ChoicePoint] = []

        def fixed(label: str, options: tuple[str, ...]) -> int:
            points.append(ChoicePoint(label, options, fixed_option(label, options)))
            return points[-1].taken

        inst = instrument(query, tables, fixed)
        return Plan(inst, (), tuple(points), None, None, time.perf_counter() - start)
    context = Context(tables)
    base = rewrite(query, RULES, context)
    heuristic = tuple(context.fired)

    def generate(chooser: Chooser) -> tuple[Instrumented, tuple[str, ...]]:
        inner = Context(tables, chooser)
        chosen = rewrite(base, CHOICE_RULES, inner)
        return instrument(chosen, tables, chooser), (*heuristic, *inner.fired)

    if cost is None:
        chooser = Chooser()
        inst, fired = generate(chooser)
        return Plan(inst, fired, tuple(chooser.points), None, None, time.perf_counter() - start)
    found = search(generate, lambda made: cost(made[0].instrumented_sql(engine)), strategy,
                   limit)
    best = found.best
    return Plan(best.plan[0], best.plan[1], best.points, best.cost, found,
                time.perf_counter() - start)


def explain_text(plan: Plan, engine: str) -> str:
    """``plan`` for a person: the rules applied, the choices made with the estimated cost of
    each plan tried, the plain and the instrumented SQL.

    >>> text = explain_text(plan_query(parse_sql("SELECT src FROM link")), "duckdb")
    >>> text.splitlines()[0], "-- instrumented (duckdb)" in text
    ('-- rules applied: none', True)
    """
    lines = [f"-- rules applied: {', '.join(plan.rules) or 'none'}"]
    if plan.points:
        lines.append("-- choices made:")
        lines += [f"--   {p.describe()}" for p in plan.points]
    else:
        lines.append("-- choices made: none (no choice point)")
    if plan.found is not None:
        found = plan.found
        stop = ", stopped by the adaptive rule" if found.stopped_early else ""
        lines.append(f"-- search: {found.strategy}, {len(found.tried)} plan(s) costed in "
                     f"{found.seconds * 1e3:.1f} ms{stop}; estimated seconds per plan:")
        best = found.best
        for tried in found.tried:
            options = ", ".join(p.options[p.taken] for p in tried.points) or "(no choices)"
            mark = "  <- chosen" if tried is best else ""
            lines.append(f"--   {tried.cost:.3g} s  [{options}]{mark}")
    else:
        lines.append("-- search: none (choices by their first option, not costed)")
    lines += [f"-- plain ({engine})", plan.inst.plain_sql(engine),
              f"-- instrumented ({engine})", plan.inst.instrumented_sql(engine)]
    return "\n".join(lines)


def plan_sql(sql: str, tables: Mapping[str, SqlTable] | None = None, **options: object
             ) -> Plan:
    """:func:`plan_query` of ``sql`` parsed (ConfigError when it is not one supported
    statement).

    >>> plan_sql("SELECT src FROM link", optimize=False).rules
    ()
    """
    return plan_query(parse_sql(sql, tables), tables, **options)  # type: ignore[arg-type]
