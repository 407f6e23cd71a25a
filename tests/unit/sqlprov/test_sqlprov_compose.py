"""Composing answer formulas fast: the memo of group formulas and the up-front variable order
give the very same BDDs (one manager) as composing row by row, and a group's formula is built
once however many outer rows refer to it."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from sqlprov_helpers import assert_same
from test_sqlprov_meaning import CORPUS, VIEW_CORPUS, frames, lakes, reachable_frame

from aspen.provenance.bdd import ProvenanceManager
from aspen.sqlprov import formula
from aspen.sqlprov.engines import run_duckdb
from aspen.sqlprov.run import compose, prepare, run_frames

#: correlated subqueries whose groups repeat over outer rows
REPEATING = [
    "SELECT l.src, l.dst FROM link l WHERE l.src IN (SELECT src FROM link GROUP BY src "
    "HAVING COUNT(*) >= 2)",
    "SELECT l.src, l.dst FROM link l WHERE NOT EXISTS "
    "(SELECT 1 FROM link m WHERE m.src = l.src AND m.dst <> l.dst)",
    "SELECT l.src, l.dst FROM link l WHERE l.src IN (SELECT r.src FROM reachable r "
    "GROUP BY r.src HAVING COUNT(*) >= 2)",
]

QUERIES = [sql for _, sql, _, _ in CORPUS + VIEW_CORPUS] + REPEATING


def composed(full, sql, names, manager, structured):
    names_, inst = prepare(sql)
    statements = {"plain": inst.plain_sql("duckdb"),
                  "instrumented": inst.instrumented_sql("duckdb")}
    results = run_duckdb({t: full[t] for t in inst.tables}, list(statements.values()))
    return compose(names_, inst, results, statements, names, None, "duckdb",
                   manager, structured=structured)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tuples=lakes())
def test_structured_composing_gives_the_same_bdds(tuples) -> None:
    full = frames(tuples)
    full["reachable"], names = reachable_frame(tuples)
    m = ProvenanceManager()
    for sql in QUERIES:
        plain = composed(full, sql, names, m, structured=False)
        fast = composed(full, sql, names, m, structured=True)
        assert_same(plain, fast, sql)


def test_a_group_formula_is_built_once_per_router(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = formula.at_least
    monkeypatch.setattr(formula, "at_least",
                        lambda m, k, fs: calls.append(len(fs)) or real(m, k, fs))
    # a and b have three out-links each, c one: six outer rows, two groups with >= 2 rows
    links = pd.DataFrame({"src": ["a", "a", "a", "b", "b", "b", "c"],
                          "dst": ["b", "c", "d", "a", "c", "d", "d"], "cost": [1.0] * 7})
    out = run_frames({"link": links}, REPEATING[0])
    assert sorted(out.rows) == sorted(zip(links.src[:6], links.dst[:6], strict=True))
    assert calls == [3, 3]
    m = out.manager
    f = out.formulas[out.rows.index(("a", "b"))]
    assert m.evaluate(f, {"link:a:b", "link:a:c"})
    assert not m.evaluate(f, {"link:a:b", "link:b:c", "link:b:d"})


def test_view_witnesses_decode_in_bulk_once(monkeypatch: pytest.MonkeyPatch) -> None:
    tuples = {f"link:{s}:{d}": ("link", (s, d, 1.0))
              for s, d in [("a", "b"), ("b", "c"), ("a", "c"), ("c", "d")]}
    full = frames(tuples)
    full["reachable"], names = reachable_frame(tuples)
    bulk, single = [], []
    monkeypatch.setattr(ProvenanceManager, "decode_each",
                        lambda self, e, real=ProvenanceManager.decode_each:
                        bulk.append(len(e)) or real(self, e))
    monkeypatch.setattr(ProvenanceManager, "decode",
                        lambda self, d, real=ProvenanceManager.decode:
                        single.append(d) or real(self, d))
    out = run_frames(full, REPEATING[2], names=names)
    referenced = full["reachable"][full["reachable"].src.isin(["a", "b"])]
    assert bulk == [len(referenced)] and single == []
    assert sorted(out.rows) == [("a", "b"), ("a", "c"), ("b", "c")]  # a, b reach 2 or more
