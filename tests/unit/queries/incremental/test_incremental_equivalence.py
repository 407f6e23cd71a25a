"""Incremental maintenance equals recomputation: random tables, random signed batches
(inserts, deletes of present rows, value changes, deletes of absent rows — ignored), random
queries over one to three relations; after each batch the maintained result equals DuckDB's
answer of the same SQL over the same rows, and the state equals one built from scratch."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from incremental_cases import (
    AGGREGATES,
    COLUMNS,
    FILTERS,
    FROMS,
    SCHEMAS,
    as_signed,
    parse,
    rounded,
    signed,
)

from aspen.queries.incremental.apply import IncrementalQuery
from aspen.queries.incremental.compile import IncrementalPlan, compile_query
from aspen.queries.incremental.delta import admissible
from aspen.queries.incremental.scratch import scratch_answer

_small = st.one_of(st.none(), st.integers(0, 3))
_weight = st.one_of(st.none(), st.sampled_from([0.5, 1.25, 2.0, -0.75]))
ROWS = {
    "r": st.tuples(_small, _small, _weight),
    "s": st.tuples(_small, _small),
    "t": st.tuples(_small, st.sampled_from(["p", "q", None])),
}


@st.composite
def queries(draw, froms: tuple[str, ...] = FROMS) -> str:
    """A query of the small grammar: a FROM, a filter, then an aggregate, a projection or a
    DISTINCT projection."""
    source = draw(st.sampled_from(froms))
    where = draw(st.sampled_from(FILTERS))
    where = f" WHERE {where}" if where else ""
    shape = draw(st.sampled_from(["group", "global", "project", "distinct"]))
    keys = ["a.k", "a.k % 2", "COALESCE(a.v, -1)"] + (["b.x"] if "s b" in source else [])
    extra = draw(st.sampled_from(keys))
    if shape in ("group", "global"):
        chosen = draw(st.lists(st.sampled_from(AGGREGATES), min_size=1, max_size=3,
                               unique=True))
        outputs = ", ".join(f"{agg} AS g{i}" for i, agg in enumerate(chosen))
        if shape == "global":
            return f"SELECT {outputs} FROM {source}{where}"
        return f"SELECT {extra} AS key, {outputs} FROM {source}{where} GROUP BY {extra}"
    distinct = "DISTINCT " if shape == "distinct" else ""
    return f"SELECT {distinct}{extra} AS key, a.v AS v FROM {source}{where}"


@st.composite
def batch(draw, model: dict[str, Counter]) -> dict[str, Counter]:
    """A raw signed batch against ``model``: inserts, deletes of present rows, value changes,
    deletes of (likely) absent rows."""
    out: dict[str, Counter] = {t: Counter() for t in COLUMNS}
    for _ in range(draw(st.integers(0, 4))):
        table = draw(st.sampled_from(sorted(COLUMNS)))
        present = sorted((r for r, n in model[table].items() if n > 0), key=repr)
        kind = draw(st.sampled_from(["insert", "delete", "change", "absent"]))
        if kind in ("delete", "change") and present:
            row = draw(st.sampled_from(present))
            out[table][row] -= 1
            if kind == "change":
                out[table][draw(ROWS[table])] += 1
        elif kind == "absent":
            out[table][draw(ROWS[table])] -= 1
        else:
            out[table][draw(ROWS[table])] += 1
    return out


def _check_state_equals_build(plan: IncrementalPlan, query: IncrementalQuery,
                              model: dict[str, Counter]) -> None:
    fresh = IncrementalQuery(plan)
    fresh.build(as_signed(model))
    assert query.state.groups == fresh.state.groups
    assert query.state.rows == fresh.state.rows


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_incremental_result_equals_recompute_after_every_batch(data) -> None:
    sql = data.draw(queries(), label="sql")
    parsed = parse(sql)
    plan = compile_query(parsed)
    assert isinstance(plan, IncrementalPlan), plan
    model = {t: Counter(data.draw(st.lists(ROWS[t], max_size=6), label=f"initial {t}"))
             for t in COLUMNS}
    query = IncrementalQuery(plan)
    result = Counter(query.build(as_signed(model)))
    assert rounded(result) == rounded(scratch_answer(parsed, as_signed(model), SCHEMAS))
    for _ in range(data.draw(st.integers(1, 4), label="batches")):
        raw = data.draw(batch(model), label="batch")
        changes = {}
        for table, rows in raw.items():
            kept, _ = admissible(signed(table, rows), model[table])
            changes[table] = kept
            for row, count in kept.counts.items():
                model[table][row] += count
        outcome = query.apply(changes)
        result.update(outcome.result)
        result = Counter({r: n for r, n in result.items() if n})
        assert all(n > 0 for n in result.values())
        assert rounded(result) == rounded(scratch_answer(parsed, as_signed(model), SCHEMAS))
        assert rounded(result) == rounded(query.answer())
        _check_state_equals_build(plan, query, model)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_batch_then_its_inverse_restores_the_state_exactly(data) -> None:
    """The diminisher inverts the merge at the state level: no leftover groups or rows."""
    plan = compile_query(parse(data.draw(queries(), label="sql")))
    model = {t: Counter(data.draw(st.lists(ROWS[t], max_size=5))) for t in COLUMNS}
    query = IncrementalQuery(plan)
    query.build(as_signed(model))
    before_groups, before_rows = dict(query.state.groups), [dict(r) for r in query.state.rows]
    extra = {t: Counter(data.draw(st.lists(ROWS[t], max_size=4))) for t in COLUMNS}
    query.apply({t: signed(t, rows) for t, rows in extra.items()})
    query.apply({t: signed(t, {r: -n for r, n in rows.items()}) for t, rows in extra.items()})
    assert query.state.groups == before_groups
    assert query.state.rows == before_rows


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_the_state_does_not_depend_on_how_rows_are_cut_into_batches(data) -> None:
    plan = compile_query(parse(data.draw(queries(), label="sql")))
    rows = {t: data.draw(st.lists(ROWS[t], max_size=6)) for t in COLUMNS}
    whole = IncrementalQuery(plan)
    whole.build(as_signed({t: Counter(r) for t, r in rows.items()}))
    one_by_one = IncrementalQuery(plan)
    order = [(t, r) for t, rs in rows.items() for r in rs]
    for i in data.draw(st.permutations(range(len(order)))):
        table, row = order[i]
        one_by_one.apply({table: signed(table, {row: 1})})
    assert one_by_one.state.groups == whole.state.groups
    assert one_by_one.state.rows == whole.state.rows


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_h_is_a_homomorphism(data) -> None:
    """``h(A ⊎ B) = h(A) ⊗ h(B)`` on the groups of one-relation queries (joined rows = rows)."""
    from aspen.queries.incremental.apply import lift, new_state

    plan = compile_query(parse(data.draw(queries(froms=(FROMS[0],)), label="sql")))
    assert not plan.keep_rows
    a = Counter(data.draw(st.lists(ROWS["r"], max_size=6)))
    b = Counter(data.draw(st.lists(ROWS["r"], max_size=6)))
    admitted = plan.relations[0].admit

    def joined(rows: Counter) -> dict:
        out: Counter = Counter()
        for row, n in rows.items():
            projected = admitted(dict(zip(COLUMNS["r"], row, strict=True)))
            if projected is not None:
                out[(projected,)] += n
        return dict(out)

    together, apart = new_state(plan), new_state(plan)
    together.merge(lift(plan, joined(a + b)))
    apart.merge(lift(plan, joined(a)))
    apart.merge(lift(plan, joined(b)))
    assert together.groups == apart.groups
