"""Helpers of the optimization tests: run an algebra query (rewritten or not, with given
choices) over frames and compare answers row by row, formulas in one shared manager."""

from __future__ import annotations

from collections import Counter

from aspen.provenance.bdd import ProvenanceManager
from aspen.sqlprov.algebra import Query
from aspen.sqlprov.engines import run_duckdb
from aspen.sqlprov.instrument import instrument
from aspen.sqlprov.run import compose


def answer(query: Query, frames, manager: ProvenanceManager, choose=None):
    """The answer of ``query`` over ``frames`` (formulas in ``manager``)."""
    return answer_of(instrument(query, choose=choose), query.names, frames, manager)


def answer_of(inst, names, frames, manager: ProvenanceManager):
    """The answer of an instrumentation over ``frames`` (formulas in ``manager``)."""
    statements = {"plain": inst.plain_sql("duckdb"),
                  "instrumented": inst.instrumented_sql("duckdb")}
    tables = {t: frames[t] for t in inst.tables}
    results = run_duckdb(tables, list(statements.values()))
    return compose(names, inst, results, statements, {}, None, "duckdb", manager)


def by_values(out) -> tuple[Counter, dict]:
    """The answer's rows as a multiset, and each distinct row's formula."""
    return Counter(out.rows), dict(zip(out.rows, out.formulas, strict=True))


def assert_same(a, b, context: object = None) -> None:
    """Same rows (as a bag) and the same formula (one BDD node) for each."""
    rows_a, formulas_a = by_values(a)
    rows_b, formulas_b = by_values(b)
    assert rows_a == rows_b, context
    for row, f in formulas_a.items():
        assert formulas_b[row] == f, (context, row)
