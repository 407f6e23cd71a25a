"""The provenance-aware transformations: golden rewrites per rule on tiny literal tables, and
by hypothesis that each rule keeps the answer and every row's formula (one BDD in a shared
manager) on random lakes."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from sqlprov_helpers import answer, assert_same
from test_sqlprov_meaning import frames, lakes

from aspen.provenance.bdd import ProvenanceManager
from aspen.sqlprov.algebra import Distinct, Filter, Scan
from aspen.sqlprov.parse import parse_sql
from aspen.sqlprov.pats import CHOICE_RULES, RULES, Context, rewrite
from aspen.sqlprov.pats.prune_columns import prune_columns
from aspen.sqlprov.pats.push_equalities import push_equalities
from aspen.sqlprov.pats.remove_distinct_by_key import remove_distinct_by_key
from aspen.sqlprov.pats.remove_distinct_by_set import remove_distinct_by_set
from aspen.sqlprov.render import to_json

LINKS = pd.DataFrame({"src": ["a", "a", "b", "c"], "dst": ["b", "c", "c", "a"],
                      "cost": [1.0, 2.0, 1.0, 5.0]})
SENSORS = pd.DataFrame({"id": ["a", "c"], "x": [0.0, 1.0], "y": [0.0, 0.0]})
TRIGGERED = pd.DataFrame({"id": ["c"]})
FRAMES = {"link": LINKS, "sensor": SENSORS, "triggered": TRIGGERED}

#: (rule, a query it rewrites)
CASES = [
    (remove_distinct_by_key, "SELECT DISTINCT src, dst FROM link WHERE cost > 1"),
    (remove_distinct_by_key, "SELECT DISTINCT l.src, l.dst, s.x FROM link l JOIN sensor s "
                             "ON s.id = l.src"),
    (remove_distinct_by_key, "SELECT DISTINCT g.s FROM (SELECT src AS s, COUNT(*) AS n FROM "
                             "link GROUP BY src) g"),
    (remove_distinct_by_set, "SELECT DISTINCT q.n FROM (SELECT DISTINCT dst AS n FROM link) q"),
    (remove_distinct_by_set, "SELECT s.id FROM sensor s WHERE s.id IN "
                             "(SELECT DISTINCT dst FROM link)"),
    (remove_distinct_by_set, "SELECT q.s FROM (SELECT DISTINCT src AS s FROM link) q "
                             "EXCEPT SELECT id FROM triggered"),
    (push_equalities, "SELECT l.src FROM link l WHERE l.dst = 'c' AND NOT EXISTS "
                      "(SELECT 1 FROM triggered t WHERE t.id = l.dst)"),
    (push_equalities, "SELECT x.src, y.dst FROM link x JOIN link y ON x.dst = y.src "
                      "WHERE x.dst = 'b'"),
    (push_equalities, "SELECT l.src, t.id FROM link l LEFT JOIN triggered t ON t.id = l.dst "
                      "WHERE l.dst = 'c'"),
    (push_equalities, "SELECT src FROM link WHERE src = 'a' EXCEPT SELECT id FROM triggered"),
    (prune_columns, "SELECT q.n FROM (SELECT src AS n, cost * 2 AS c FROM link) q"),
    (prune_columns, "SELECT g.d FROM (SELECT dst AS d, MAX(cost) AS m FROM link GROUP BY dst) g"),
]
IDS = [f"{rule.__name__}-{i}" for i, (rule, _) in enumerate(CASES)]


def test_each_rule_fires_on_its_cases() -> None:
    for rule, sql in CASES:
        context = Context()
        query = parse_sql(sql)
        assert rule(query, context) != query, sql
        assert context.fired == [rule.__name__]


def test_rules_leave_a_query_they_do_not_apply_to_as_it_is() -> None:
    query = parse_sql("SELECT x.src, y.dst FROM link x JOIN link y ON x.dst = y.src")
    context = Context()
    assert rewrite(query, RULES + CHOICE_RULES, context) is query and context.fired == []


def test_distinct_over_a_key_goes_and_formulas_stay() -> None:
    query = parse_sql("SELECT DISTINCT src, dst FROM link WHERE cost > 1")
    out = remove_distinct_by_key(query, Context())
    assert not any(isinstance(n, Distinct) for n in _nodes(out.root))
    m = ProvenanceManager()
    got = answer(out, FRAMES, m)
    assert sorted(got.rows) == [("a", "c"), ("c", "a")]
    assert {r: to_json(m, f) for r, f in zip(got.rows, got.formulas, strict=True)} == {
        ("a", "c"): {"var": "link:a:c"}, ("c", "a"): {"var": "link:c:a"}}


def test_distinct_over_a_projection_of_a_key_stays() -> None:
    # dst alone is no key of link: the DISTINCT merges rows
    query = parse_sql("SELECT DISTINCT dst FROM link")
    assert remove_distinct_by_key(query, Context()) is query


def test_inner_distinct_under_set_semantics_is_a_choice() -> None:
    query = parse_sql("SELECT DISTINCT q.n FROM (SELECT DISTINCT dst AS n FROM link) q")
    seen = []

    def keep(label: str, options: tuple[str, ...]) -> int:
        seen.append((label, options))
        return 1

    assert remove_distinct_by_set(query, Context(choose=keep)) == query
    assert len(seen) == 1 and seen[0][1] == ("remove", "keep")
    removed = remove_distinct_by_set(query, Context())
    assert sum(isinstance(n, Distinct) for n in _nodes(removed.root)) == 1
    m = ProvenanceManager()
    assert_same(answer(query, FRAMES, m), answer(removed, FRAMES, m))


def test_a_distinct_under_an_aggregate_is_never_removed() -> None:
    # COUNT sees every duplicate: the DISTINCT inside must stay
    query = parse_sql("SELECT COUNT(*) AS n FROM (SELECT DISTINCT dst AS d FROM link) q")
    assert remove_distinct_by_set(query, Context()) is query


def test_constants_reach_the_subquery_of_not_exists() -> None:
    query = parse_sql("SELECT l.src FROM link l WHERE l.dst = 'c' AND NOT EXISTS "
                      "(SELECT 1 FROM triggered t WHERE t.id = l.dst)")
    out = push_equalities(query, Context())
    right = out.root.child.right
    assert isinstance(right, Filter) and isinstance(right.child, Scan)
    assert right.condition.sql() == "t__id = 'c'"
    # a second pass adds nothing: a fixpoint
    assert push_equalities(out, Context()) is out
    m = ProvenanceManager()
    assert_same(answer(query, FRAMES, m), answer(out, FRAMES, m))


def test_nothing_is_pushed_into_the_right_of_a_left_join_from_above() -> None:
    query = parse_sql("SELECT l.src, t.id FROM link l LEFT JOIN triggered t ON t.id = l.dst "
                      "WHERE t.id = 'c'")
    out = push_equalities(query, Context())
    join = out.root.child.child
    assert isinstance(join.right, Scan)  # the filter above stays above


def test_pruned_columns_are_gone_from_the_instrumented_sql() -> None:
    query = parse_sql("SELECT q.n FROM (SELECT src AS n, cost * 2 AS c FROM link) q")
    out = prune_columns(query, Context())
    m = ProvenanceManager()
    before, after = answer(query, FRAMES, m), answer(out, FRAMES, m)
    assert_same(before, after)
    assert "* 2" in before.sql["instrumented"] and "* 2" not in after.sql["instrumented"]


@pytest.mark.parametrize(("rule", "sql"), CASES, ids=IDS)
@settings(max_examples=4, deadline=None)
@given(tuples=lakes())
def test_rule_keeps_rows_and_formulas(rule, sql, tuples) -> None:
    full = frames(tuples)
    query = parse_sql(sql)
    m = ProvenanceManager()
    assert_same(answer(query, full, m), answer(rule(query, Context()), full, m), sql)


def _nodes(node):
    from aspen.sqlprov.algebra import children

    yield node
    for child in children(node):
        yield from _nodes(child)
