"""One golden case per rewrite of the incremental plan, on tiny literal tables."""

from __future__ import annotations

import pytest
from incremental_cases import parse, signed

from aspen.queries.incremental.apply import IncrementalQuery
from aspen.queries.incremental.compile import IncrementalPlan, NotIncremental, compile_query
from aspen.queries.incremental.state import StateError
from aspen.queries.sql import parse_query


def _query(sql: str) -> IncrementalQuery:
    plan = compile_query(parse(sql))
    assert isinstance(plan, IncrementalPlan), plan
    return IncrementalQuery(plan)


def test_group_by_counts_sums_and_averages_and_drops_an_emptied_group() -> None:
    q = _query("SELECT a.k AS k, COUNT(*) AS n, SUM(a.v) AS s, AVG(a.w) AS m FROM r a "
               "GROUP BY a.k")
    q.apply({"r": signed("r", {(1, 2, 0.5): 1, (1, 4, None): 1, (2, 7, 2.0): 1})})
    assert q.answer() == {(1, 2, 6, 0.5): 1, (2, 1, 7, 2.0): 1}
    change = q.apply({"r": signed("r", {(2, 7, 2.0): -1})}).result
    assert change == {(2, 1, 7, 2.0): -1}
    assert (2,) not in q.state.groups


def test_a_group_whose_sum_is_zero_stays_while_it_has_rows() -> None:
    q = _query("SELECT a.k AS k, SUM(a.v) AS s FROM r a GROUP BY a.k")
    q.apply({"r": signed("r", {(1, 3, None): 1, (1, -3, None): 1})})
    assert q.answer() == {(1, 0): 1}
    q.apply({"r": signed("r", {(1, 3, None): -1, (1, -3, None): -1})})
    assert q.answer() == {}
    assert q.state.groups == {}


def test_min_and_max_are_exact_under_deletion_of_the_extreme() -> None:
    q = _query("SELECT a.k AS k, MIN(a.w) AS lo, MAX(a.v) AS hi FROM r a GROUP BY a.k")
    q.apply({"r": signed("r", {(1, 5, 0.5): 1, (1, 9, 2.0): 1, (1, 9, 1.25): 1})})
    assert q.answer() == {(1, 0.5, 9): 1}
    q.apply({"r": signed("r", {(1, 5, 0.5): -1, (1, 9, 2.0): -1})})
    assert q.answer() == {(1, 1.25, 9): 1}


def test_avg_of_no_value_is_null_and_sum_of_floats_is_exact_after_deletion() -> None:
    q = _query("SELECT a.k AS k, AVG(a.w) AS m, SUM(a.w) AS s FROM r a GROUP BY a.k")
    q.apply({"r": signed("r", {(1, 0, 0.1): 1, (1, 0, 0.2): 1, (1, 0, None): 1})})
    q.apply({"r": signed("r", {(1, 0, 0.2): -1})})
    assert q.answer() == {(1, 0.1, 0.1): 1}  # not 0.30000000000000004 - 0.2
    q.apply({"r": signed("r", {(1, 0, 0.1): -1})})
    assert q.answer() == {(1, None, None): 1}


@pytest.mark.parametrize("order", ["one side first", "other side first", "same batch"])
def test_join_cross_terms_give_the_batch_answer(order: str) -> None:
    """S1 = {(A=a, B=1)}, then S2 = {(C=1, D=10)}: the answer is {a: 10} whichever came
    first (the one-to-many restriction of the paper misses it)."""
    q = _query("SELECT a.k AS k, SUM(b.x) AS d FROM r a JOIN s b ON a.v = b.k GROUP BY a.k")
    left, right = signed("r", {(7, 1, None): 1}), signed("s", {(1, 10): 1})
    if order == "same batch":
        q.apply({"r": left, "s": right})
    else:
        first, second = ({"r": left}, {"s": right}) if order == "one side first" \
            else ({"s": right}, {"r": left})
        assert q.apply(first).result == {}
        q.apply(second)
    assert q.answer() == {(7, 10): 1}


def test_a_many_to_many_self_join_counts_every_pair() -> None:
    q = _query("SELECT a.k AS k, COUNT(*) AS n FROM r a JOIN r b ON a.v = b.k GROUP BY a.k")
    q.apply({"r": signed("r", {(1, 1, None): 1, (1, 2, None): 1})})
    assert q.answer() == {(1, 2): 1}  # (1,1)⋈(1,1), (1,1)⋈(1,2)
    q.apply({"r": signed("r", {(1, 1, None): -1})})
    assert q.answer() == {}


def test_a_value_change_is_minus_old_plus_new() -> None:
    q = _query("SELECT a.k AS k, MAX(a.v) AS hi FROM r a GROUP BY a.k")
    q.apply({"r": signed("r", {(1, 5, None): 1})})
    change = q.apply({"r": signed("r", {(1, 5, None): -1, (1, 8, None): 1})}).result
    assert change == {(1, 5): -1, (1, 8): 1}


def test_projection_keeps_bag_multiplicities_and_distinct_keeps_one() -> None:
    bag = _query("SELECT a.k AS k FROM r a WHERE a.v > 0")
    distinct = _query("SELECT DISTINCT a.k AS k FROM r a WHERE a.v > 0")
    rows = signed("r", {(1, 1, None): 1, (1, 2, None): 2, (3, 0, None): 1})
    for q in (bag, distinct):
        q.apply({"r": rows})
    assert bag.answer() == {(1,): 3}
    assert distinct.answer() == {(1,): 1}
    assert distinct.apply({"r": signed("r", {(1, 2, None): -2})}).result == {}
    assert distinct.apply({"r": signed("r", {(1, 1, None): -1})}).result == {(1,): -1}


def test_a_global_aggregate_has_one_row_even_when_empty() -> None:
    q = _query("SELECT COUNT(*) AS n, SUM(a.v) AS s, MIN(a.w) AS lo FROM r a")
    assert q.answer() == {(0, None, None): 1}
    q.apply({"r": signed("r", {(1, 4, 1.25): 1})})
    assert q.answer() == {(1, 4, 1.25): 1}
    assert q.apply({"r": signed("r", {(1, 4, 1.25): -1})}).result == {
        (1, 4, 1.25): -1, (0, None, None): 1}


def test_a_join_ignores_deleting_rows_it_never_held_and_never_counts_below_zero() -> None:
    q = _query("SELECT a.k AS k, COUNT(*) AS n FROM r a JOIN s b ON a.k = b.k GROUP BY a.k")
    q.apply({"r": signed("r", {(1, 0, None): 1}), "s": signed("s", {(1, 5): 1})})
    outcome = q.apply({"r": signed("r", {(1, 0, None): -3, (2, 0, None): -1})})
    assert outcome.ignored == 3
    assert q.answer() == {}
    assert all(n > 0 for rows in q.state.rows for n in rows.values())


def test_a_one_relation_state_refuses_a_count_below_zero() -> None:
    q = _query("SELECT a.k AS k, COUNT(*) AS n FROM r a GROUP BY a.k")
    q.apply({"r": signed("r", {(1, 0, None): 1})})
    with pytest.raises(StateError, match="rebuild"):
        q.apply({"r": signed("r", {(1, 0, None): -2})})


def test_only_touched_keys_change_and_an_empty_batch_changes_nothing() -> None:
    q = _query("SELECT a.k AS k, COUNT(*) AS n FROM r a GROUP BY a.k")
    q.apply({"r": signed("r", {(k, 0, None): 1 for k in range(5)})})
    outcome = q.apply({"r": signed("r", {(3, 1, None): 1})})
    assert outcome.groups == {(3,)}
    assert outcome.result == {(3, 1): -1, (3, 2): 1}
    before = dict(q.state.groups)
    assert q.apply({}).result == {} and q.state.groups == before


def test_filters_drop_rows_before_they_reach_the_state() -> None:
    q = _query("SELECT a.k AS k, b.x AS x FROM r a JOIN s b ON a.k = b.k WHERE a.v > 1 "
               "AND b.x IS NOT NULL")
    q.apply({"r": signed("r", {(1, 0, None): 1, (1, 5, None): 1}),
             "s": signed("s", {(1, None): 1, (1, 4): 1})})
    assert q.answer() == {(1, 4): 1}
    assert q.state.rows == [{(1,): 1}, {(1, 4): 1}]


@pytest.mark.parametrize(("sql", "reason"), [
    ("SELECT DISTINCT COUNT(*) AS n FROM r a GROUP BY a.k", "DISTINCT over an aggregating"),
    ("SELECT a.k AS k FROM r a WHERE datediff(a.k, a.v) > 1", "DateDiff"),
    ("SELECT a.k AS k FROM r a JOIN r b ON a.k = b.k JOIN r c ON b.k = c.k "
     "JOIN r d ON c.k = d.k", "joins 4 relations"),
    ("SELECT a.k AS k, COUNT(DISTINCT a.v, a.w) AS n FROM r a GROUP BY a.k", "several"),
])
def test_what_is_not_incremental_says_why(sql: str, reason: str) -> None:
    plan = compile_query(parse(sql))
    assert isinstance(plan, NotIncremental)
    assert reason in plan.reason


def test_the_lake_tables_compile() -> None:
    parsed = parse_query("hot", "SELECT a.src, COUNT(*) AS n FROM link a JOIN link b "
                                "ON a.dst = b.src WHERE b.cost > 1 GROUP BY a.src")
    plan = compile_query(parsed)
    assert isinstance(plan, IncrementalPlan)
    assert plan.tables == ("link",) and plan.keep_rows
