"""Nested queries maintained as stages: after every random signed batch the composed
incremental answer equals DuckDB's from-scratch answer of the same nested SQL; golden tests of
the compile step (the stages' SQL) and of the reasons a nested query is recomputed."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from incremental_cases import COLUMNS, SCHEMAS, TABLES, as_signed, rounded, signed

from aspen.queries.incremental.compile import NotIncremental
from aspen.queries.incremental.delta import admissible, plain_row
from aspen.queries.incremental.nested import NestedPlan, NestedQuery, compile_nested, is_nested
from aspen.queries.spec import DIALECT

_small = st.one_of(st.none(), st.integers(0, 3))
ROWS = {
    "r": st.tuples(_small, _small, st.one_of(st.none(), st.sampled_from([0.5, 1.25, 2.0]))),
    "s": st.tuples(_small, _small),
    "t": st.tuples(_small, st.sampled_from(["p", "q", None])),
}
#: A per-key count over a join: the derived table the outer blocks read.
PER_KEY = "(SELECT a.k AS k, COUNT(*) AS n FROM r a JOIN s b ON a.k = b.k GROUP BY a.k)"
NESTED = (
    # keys whose count is above the average count (a derived table, a scalar subquery)
    f"SELECT d.k AS k, d.n AS n FROM {PER_KEY} d "
    f"WHERE d.n > (SELECT AVG(e.n) AS m FROM {PER_KEY} e)",
    # aggregated again, joined to a base table
    f"SELECT c.y AS y, SUM(d.n) AS total, COUNT(*) AS groups FROM {PER_KEY} d "
    "JOIN t c ON d.k = c.x GROUP BY c.y",
    # filtered and aggregated again
    f"SELECT d.n AS n, COUNT(*) AS keys FROM {PER_KEY} d WHERE d.n >= 2 GROUP BY d.n",
    # IN and EXISTS semi-joins
    "SELECT a.k AS k, a.v AS v FROM r a WHERE a.v IN (SELECT b.k FROM s b WHERE b.x > 0)",
    "SELECT a.k AS k, COUNT(*) AS n FROM r a WHERE EXISTS "
    "(SELECT 1 FROM s b WHERE b.k = a.k AND b.x IS NOT NULL) GROUP BY a.k",
    "SELECT a.k AS k, a.w AS w FROM r a WHERE a.k IN (SELECT b.k FROM s b GROUP BY b.k)",
    # an uncorrelated EXISTS, and a scalar below a plain projection
    "SELECT a.k AS k FROM r a WHERE EXISTS (SELECT 1 FROM t c WHERE c.y = 'p')",
    "SELECT a.k AS k, a.v AS v FROM r a WHERE a.v < (SELECT MAX(b.x) AS m FROM s b)",
    # two levels of derived tables
    f"SELECT MAX(f.n) AS top FROM (SELECT d.n AS n FROM {PER_KEY} d WHERE d.k > 0) f",
)


def scratch(sql: str, model: dict[str, Counter]) -> dict[tuple, int]:
    """DuckDB's answer of ``sql`` over the rows of ``model``."""
    import duckdb
    import pyarrow as pa
    import sqlglot

    connection = duckdb.connect()
    try:
        for table, rows in model.items():
            expanded = [r for r, n in rows.items() for _ in range(n)]
            connection.register(table, pa.Table.from_pylist(
                [dict(zip(COLUMNS[table], r, strict=True)) for r in expanded],
                schema=SCHEMAS[table]))
        out: Counter = Counter(plain_row(row) for row in connection.execute(
            sqlglot.transpile(sql, read=DIALECT, write="duckdb")[0]).fetchall())
        return dict(out)
    finally:
        connection.close()


@st.composite
def batch(draw, model: dict[str, Counter]) -> dict[str, Counter]:
    """Inserts, deletions of present rows and value changes."""
    out: dict[str, Counter] = {t: Counter() for t in COLUMNS}
    for _ in range(draw(st.integers(0, 4))):
        table = draw(st.sampled_from(sorted(COLUMNS)))
        present = sorted((r for r, n in model[table].items() if n > 0), key=repr)
        if present and draw(st.booleans()):
            out[table][draw(st.sampled_from(present))] -= 1
            if draw(st.booleans()):
                out[table][draw(ROWS[table])] += 1
        else:
            out[table][draw(ROWS[table])] += 1
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_nested_answer_equals_recompute_after_every_batch(data) -> None:
    sql = data.draw(st.sampled_from(NESTED), label="sql")
    plan = compile_nested("q", sql, TABLES)
    assert isinstance(plan, NestedPlan), plan
    model = {t: Counter(data.draw(st.lists(ROWS[t], max_size=6), label=f"initial {t}"))
             for t in COLUMNS}
    query = NestedQuery(plan)
    result = Counter(query.build(as_signed(model)))
    assert rounded(result) == rounded(scratch(sql, model))
    for _ in range(data.draw(st.integers(1, 4), label="batches")):
        raw = data.draw(batch(model), label="batch")
        changes = {}
        for table, rows in raw.items():
            kept, _ = admissible(signed(table, rows), model[table])
            changes[table] = kept
            for row, count in kept.counts.items():
                model[table][row] += count
        result.update(query.apply(changes))
        result = Counter({r: n for r, n in result.items() if n})
        assert all(n > 0 for n in result.values())
        assert rounded(result) == rounded(scratch(sql, model))
        assert rounded(result) == rounded(query.answer())


def test_a_batch_then_its_inverse_restores_the_answer() -> None:
    plan = compile_nested("q", NESTED[0], TABLES)
    assert isinstance(plan, NestedPlan)
    query = NestedQuery(plan)
    start = {"r": Counter({(1, 1, None): 2, (2, 0, 1.0): 1}), "s": Counter({(1, 0): 1, (2, 5): 1}),
             "t": Counter()}
    before = query.build(as_signed(start))
    change = {"r": signed("r", {(2, 0, 1.0): 1, (3, 3, None): 1}), "s": signed("s", {(3, 1): 1})}
    forward = query.apply(change)
    assert forward  # key 2 now counts 2 > the average
    back = query.apply({t: signed(t, {r: -n for r, n in rows.counts.items()})
                        for t, rows in change.items()})
    assert Counter(forward) + Counter() == Counter({r: -n for r, n in back.items()}) + Counter()
    assert query.answer() == before


GOLDEN = {
    NESTED[0]: [
        "SELECT a.k AS k, COUNT(*) AS n FROM r AS a JOIN s AS b ON a.k = b.k GROUP BY a.k",
        "SELECT a.k AS k, COUNT(*) AS n FROM r AS a JOIN s AS b ON a.k = b.k GROUP BY a.k",
        "SELECT AVG(e.n) AS v, 1 AS one_ FROM _n2 AS e",
        "SELECT d.k AS c0, d.n AS c1, 1 AS one_ FROM _n1 AS d",
        "SELECT p.c0, p.c1, s0.v AS v0 FROM _n4 AS p JOIN _n3 AS s0 ON p.one_ = s0.one_",
        "SELECT j.c0 AS k, j.c1 AS n FROM _n5 AS j WHERE j.c1 > j.v0",
    ],
    NESTED[3]: [
        "SELECT DISTINCT b.k AS k FROM s AS b WHERE b.x > 0",
        "SELECT a.k AS k, a.v AS v FROM r AS a JOIN _n1 AS _s1 ON a.v = _s1.k",
    ],
    NESTED[4]: [
        "SELECT DISTINCT b.k AS k0 FROM s AS b WHERE NOT b.x IS NULL",
        "SELECT a.k AS k, COUNT(*) AS n FROM r AS a JOIN _n1 AS _s1 ON a.k = _s1.k0 "
        "GROUP BY a.k",
    ],
    NESTED[5]: [
        "SELECT b.k AS k FROM s AS b GROUP BY b.k",
        "SELECT DISTINCT x.k AS k FROM _n1 AS x",
        "SELECT a.k AS k, a.w AS w FROM r AS a JOIN _n2 AS _s2 ON a.k = _s2.k",
    ],
}


@pytest.mark.parametrize("sql", sorted(GOLDEN))
def test_compile_golden(sql: str) -> None:
    plan = compile_nested("q", sql, TABLES)
    assert isinstance(plan, NestedPlan), plan
    assert [s.sql for s in plan.stages] == GOLDEN[sql]
    assert plan.tables == tuple(sorted({"r", "s"} | ({"t"} if " t " in sql else set())))


@pytest.mark.parametrize(("sql", "reason"), [
    ("SELECT a.k AS k FROM r a WHERE a.k NOT IN (SELECT b.k FROM s b)",
     "NOT IN (an anti-join) is recomputed"),
    ("SELECT a.k AS k FROM r a WHERE NOT EXISTS (SELECT 1 FROM s b WHERE b.k = a.k)",
     "NOT EXISTS (an anti-join) is recomputed"),
    ("SELECT a.k AS k FROM r a WHERE EXISTS (SELECT 1 FROM s b WHERE b.k > a.k)",
     "the correlation 'b.k > a.k' is not an equality of an inner and an outer column "
     "(recomputed)"),
    ("SELECT a.k AS k FROM r a WHERE a.v IN (SELECT b.k FROM s b WHERE b.x = a.k)",
     "a correlated IN subquery is recomputed"),
    ("SELECT a.k AS k FROM r a WHERE a.v > (SELECT COUNT(*) AS c FROM s b GROUP BY b.k)",
     "a scalar subquery must aggregate to one value without GROUP BY"),
    ("SELECT a.k AS k, (SELECT MAX(b.x) AS m FROM s b) AS m FROM r a",
     "a subquery in SELECT or GROUP BY is recomputed"),
    ("SELECT * FROM r a WHERE a.v > (SELECT AVG(b.x) AS m FROM s b)",
     "name the outputs (no *) of a block with a scalar subquery"),
    ("SELECT DISTINCT d.n AS n FROM (SELECT a.k AS k, COUNT(*) AS n FROM r a GROUP BY a.k) d "
     "WHERE d.n > 0 OR d.k IN (SELECT b.k FROM s b)",
     "the subquery in 'd.n > 0 OR d.k IN (SELECT b.k FROM s AS b)' is recomputed (only IN, "
     "EXISTS and comparisons with a scalar subquery are decorrelated)"),
])
def test_reasons_a_nested_query_is_recomputed(sql: str, reason: str) -> None:
    plan = compile_nested("q", sql, TABLES)
    assert isinstance(plan, NotIncremental)
    assert plan.reason == reason


def test_a_refused_inner_block_names_itself() -> None:
    sql = ("SELECT d.k AS k FROM (SELECT DISTINCT COUNT(*) AS n, a.k AS k FROM r a "
           "GROUP BY a.k) d")
    plan = compile_nested("q", sql, TABLES)
    assert isinstance(plan, NotIncremental)
    assert plan.reason.startswith("DISTINCT over an aggregating query is recomputed (in the "
                                  "block 'SELECT DISTINCT COUNT(*)")


def test_is_nested() -> None:
    assert is_nested(NESTED[3]) and not is_nested("SELECT a.k FROM r a")
