"""Plans that follow the data, in memory: the live statistics of a join after random signed
batches equal the same statistics computed from scratch by DuckDB over the same rows, and any
join order read off any plan of the query — changed between batches, the state untouched —
gives the result DuckDB gives."""

from __future__ import annotations

import math
from collections import Counter

import duckdb
import pyarrow as pa
import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from incremental_cases import COLUMNS, FILTERS, FROMS, SCHEMAS, as_signed, parse, rounded, signed
from test_incremental_equivalence import ROWS, batch, queries

from aspen.optimizer.brute import plans
from aspen.queries.incremental.apply import IncrementalQuery
from aspen.queries.incremental.compile import IncrementalPlan, compile_query
from aspen.queries.incremental.delta import admissible
from aspen.queries.incremental.order import plan_orders
from aspen.queries.incremental.scratch import scratch_answer
from aspen.queries.spec import DIALECT

JOINS = FROMS[1:]
#: Filters on b too, so that a self-join's two relations are filtered apart.
MORE_FILTERS = (*FILTERS, "b.k > 0", "a.v > 1 AND b.k IS NOT NULL")


def _count(connection: duckdb.DuckDBPyConnection, sql: str) -> int:
    return int(connection.execute(sqlglot.transpile(sql, read=DIALECT, write="duckdb")[0])
               .fetchone()[0])


def scratch_statistics(parsed, model: dict[str, Counter]) -> dict:
    """The live statistics' definitions, computed by DuckDB over the whole tables."""
    connection = duckdb.connect()
    try:
        for table in parsed.tables:
            rows = [r for r, n in model[table].items() for _ in range(n)]
            connection.register(table, pa.Table.from_pylist(
                [dict(zip(COLUMNS[table], r, strict=True)) for r in rows],
                schema=SCHEMAS[table]))
        query, spec = parsed.query, parsed.spec
        tables: dict = {t: {"rows": float(_count(connection, f"SELECT COUNT(*) FROM {t}"))}
                        for t in parsed.tables}
        selectivity: dict = {}
        where = {r.alias: " AND ".join(f"({f})" for f in r.filters) or "TRUE"
                 for r in spec.relations}
        kept = {r.alias: _count(connection, f"SELECT COUNT(*) FROM {r.table} "
                                            f"WHERE {where[r.alias]}") for r in spec.relations}
        for rel in spec.relations:
            rows = tables[rel.table]["rows"]
            if rel.filters and rows > 0:
                for f in rel.filters:
                    selectivity[f"{rel.alias}: {f}"] = (kept[rel.alias] / rows) ** (
                        1 / len(rel.filters))
        pairs: dict = {}
        for pred in query.joins:
            pairs.setdefault(tuple(sorted(pred.aliases)), []).append(pred)
        tables_of = {r.alias: r.table for r in spec.relations}
        for (a, b), preds in pairs.items():
            if kept[a] * kept[b] == 0:
                continue
            on = " AND ".join(f"{p.left} = {p.right}" for p in preds)
            joined = _count(connection,
                            f"SELECT COUNT(*) FROM (SELECT * FROM {tables_of[a]} WHERE "
                            f"{where[a]}) AS {a}, (SELECT * FROM {tables_of[b]} WHERE "
                            f"{where[b]}) AS {b} WHERE {on}")
            for p in preds:
                share = joined / (kept[a] * kept[b])
                selectivity[p.id] = share if len(preds) == 1 or share == 0 else share ** (
                    1 / len(preds))
        for rel in spec.relations:
            if rel.filters:
                continue
            columns = sorted({c.split(".", 1)[1] for p in query.joins for c in (p.left, p.right)
                              if tables_of[c.split(".", 1)[0]] == rel.table})
            for column in (c for c in columns if c in rel.columns):  # the columns it reads
                tables[rel.table].setdefault("columns", {})[column] = {"ndv": float(_count(
                    connection, f"SELECT COUNT(DISTINCT {column}) FROM {rel.table}"))}
        return {"tables": tables, "selectivity": selectivity}
    finally:
        connection.close()


def _close(found: dict, expected: dict) -> None:
    assert found["tables"] == expected["tables"]
    assert found["selectivity"].keys() == expected["selectivity"].keys()
    for key, value in expected["selectivity"].items():
        assert math.isclose(found["selectivity"][key], value, rel_tol=1e-9, abs_tol=1e-12), key


@st.composite
def join_queries(draw) -> str:
    sql = draw(queries(froms=JOINS))
    extra = draw(st.sampled_from(MORE_FILTERS[len(FILTERS):] + ("",)))
    if extra and " b " in sql:
        sql = sql.replace(" WHERE ", f" WHERE {extra} AND ") if " WHERE " in sql else (
            _add_where(sql, extra))
    return sql


def _add_where(sql: str, condition: str) -> str:
    for tail in (" GROUP BY ",):
        if tail in sql:
            head, rest = sql.split(tail, 1)
            return f"{head} WHERE {condition}{tail}{rest}"
    return f"{sql} WHERE {condition}"


def _step(model: dict[str, Counter], raw: dict[str, Counter]) -> dict:
    changes = {}
    for table, rows in raw.items():
        kept, _ = admissible(signed(table, rows), model[table])
        changes[table] = kept
        for row, count in kept.counts.items():
            model[table][row] += count
    return changes


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_live_statistics_equal_a_from_scratch_computation_after_every_batch(data) -> None:
    parsed = parse(data.draw(join_queries(), label="sql"))
    plan = compile_query(parsed)
    assert isinstance(plan, IncrementalPlan) and plan.keep_rows
    model = {t: Counter(data.draw(st.lists(ROWS[t], max_size=6), label=f"initial {t}"))
             for t in COLUMNS}
    query = IncrementalQuery(plan)
    query.build(as_signed(model))
    _close(query.statistics(), scratch_statistics(parsed, model))
    for _ in range(data.draw(st.integers(1, 4), label="batches")):
        query.apply(_step(model, data.draw(batch(model), label="batch")))
        _close(query.statistics(), scratch_statistics(parsed, model))
    # read back from its rows (a new process): the same statistics
    again = IncrementalQuery(plan, query.state)
    assert again.statistics() == query.statistics()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_plan_order_changed_between_batches_keeps_the_result_exact(data) -> None:
    parsed = parse(data.draw(queries(froms=JOINS), label="sql"))
    plan = compile_query(parsed)
    assert isinstance(plan, IncrementalPlan)
    trees = list(plans(parsed.query, ("broadcast_hash",)))
    model = {t: Counter(data.draw(st.lists(ROWS[t], max_size=6), label=f"initial {t}"))
             for t in COLUMNS}
    query = IncrementalQuery(plan)
    result = Counter(query.build(as_signed(model)))
    for _ in range(data.draw(st.integers(1, 4), label="batches")):
        tree = data.draw(st.sampled_from(trees), label="plan")
        groups, rows = dict(query.state.groups), [dict(r) for r in query.state.rows]
        query.follow(tree)
        assert query.plan.orders == plan_orders(plan, tree)
        assert (query.state.groups, query.state.rows) == (groups, rows)  # untouched
        result.update(query.apply(_step(model, data.draw(batch(model), label="batch"))).result)
        result = Counter({r: n for r, n in result.items() if n})
        assert rounded(result) == rounded(scratch_answer(parsed, as_signed(model), SCHEMAS))


def test_the_orders_follow_the_plan_tree_up_from_each_leaf() -> None:
    parsed = parse("SELECT a.k FROM r a JOIN s b ON a.k = b.k JOIN t c ON b.x = c.x")
    plan = compile_query(parsed)
    a, b, c = ({"scan": x} for x in "abc")
    left_deep = {"join": "shuffle_hash", "left": {"join": "shuffle_hash", "left": a,
                                                  "right": b}, "right": c}
    assert plan_orders(plan, left_deep) == ((1, 2), (0, 2), (1, 0))
    other = {"join": "shuffle_hash", "left": {"join": "shuffle_hash", "left": b,
                                              "right": c}, "right": a}
    assert plan_orders(plan, other) == ((1, 2), (2, 0), (1, 0))
    assert plan_orders(plan, {"join": "shuffle_hash", "left": a, "right": b}) is None
    assert plan_orders(plan, None) is None
    with pytest.raises(Exception, match="binds relation"):
        plan.ordered(((2, 1), (0, 2), (1, 0)))  # a's change cannot look c up first
