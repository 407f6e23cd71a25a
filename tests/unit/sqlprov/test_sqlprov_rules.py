"""Golden tests, one per rewrite rule, on tiny literal tables: the formula each construct gets,
and the statements and shapes refused."""

from __future__ import annotations

import pandas as pd
import pytest
import sqlglot

from aspen.errors import ConfigError
from aspen.provenance.bdd import ProvenanceManager
from aspen.sqlprov.formula import at_least
from aspen.sqlprov.parse import parse_sql
from aspen.sqlprov.render import to_json
from aspen.sqlprov.run import prepare, run_frames

LINKS = pd.DataFrame({"src": ["a", "a", "b", "c"], "dst": ["b", "c", "c", "a"],
                      "cost": [1.0, 2.0, 1.0, 5.0]})
SENSORS = pd.DataFrame({"id": ["a", "c"], "x": [0.0, 1.0], "y": [0.0, 0.0]})
TRIGGERED = pd.DataFrame({"id": ["c"]})
FRAMES = {"link": LINKS, "sensor": SENSORS, "triggered": TRIGGERED}


def formulas(sql: str) -> dict[tuple, object]:
    """Each answer row → its formula as JSON."""
    out = run_frames(FRAMES, sql)
    return {row: out.provenance(i) for i, row in enumerate(out.rows)}


def v(name: str) -> dict:
    return {"var": name}


def test_a_base_row_is_its_tuple() -> None:
    assert formulas("SELECT src, dst FROM link WHERE cost > 1") == {
        ("a", "c"): v("link:a:c"), ("c", "a"): v("link:c:a")}


def test_a_reading_is_its_id_and_base_tables_read_as_tuples() -> None:
    readings = pd.DataFrame({"id": [7, 8], "sensor": ["c", "c"], "value": [1.5, 0.5]})
    out = run_frames({**FRAMES, "readings": readings},
                     "SELECT r.sensor FROM readings r JOIN triggered t ON t.id = r.sensor "
                     "WHERE r.value > 1")
    assert out.rows == [("c",)]
    assert out.provenance(0) == {"and": [v("reading:7"), v("triggered:c")]}


def test_a_join_is_and() -> None:
    assert formulas("SELECT x.src, y.dst FROM link x JOIN link y ON x.dst = y.src "
                    "WHERE x.src = 'a'") == {
        ("a", "c"): {"and": [v("link:a:b"), v("link:b:c")]},
        ("a", "a"): {"and": [v("link:a:c"), v("link:c:a")]}}


def test_a_projection_is_or_over_its_witnesses() -> None:
    assert formulas("SELECT dst FROM link WHERE dst = 'c'") == {
        ("c",): {"or": [v("link:a:c"), v("link:b:c")]}}


def test_distinct_and_union_are_or() -> None:
    assert formulas("SELECT DISTINCT src FROM link WHERE src = 'a'") == {
        ("a",): {"or": [v("link:a:b"), v("link:a:c")]}}
    assert formulas("SELECT src AS n FROM link WHERE src = 'c' UNION SELECT id FROM sensor") == {
        ("a",): v("sensor:a"), ("c",): {"or": [v("link:c:a"), v("sensor:c")]}}


def test_union_all_rows_share_the_formula_of_their_values() -> None:
    out = run_frames(FRAMES, "SELECT id FROM sensor UNION ALL SELECT id FROM triggered")
    assert sorted(out.rows) == [("a",), ("c",), ("c",)]
    assert [out.provenance(i) for i, r in enumerate(out.rows) if r == ("c",)] == [
        {"or": [v("sensor:c"), v("triggered:c")]}] * 2


def test_except_is_and_not_the_subtracted_witnesses() -> None:
    assert formulas("SELECT id FROM sensor EXCEPT SELECT dst FROM link WHERE src = 'b'") == {
        ("a",): v("sensor:a")}
    # c is subtracted now (link b→c): not an answer row; a row present now whose values the
    # other side could reach keeps AND NOT of those witnesses
    assert formulas("SELECT dst FROM link EXCEPT SELECT id FROM triggered WHERE id = 'z'") == {
        ("a",): v("link:c:a"), ("b",): v("link:a:b"),
        ("c",): {"or": [v("link:a:c"), v("link:b:c")]}}


def test_not_exists_keeps_rows_a_deletion_would_bring_back() -> None:
    # a's links: a→b (b not triggered) derives a now; a→c would, were c not triggered
    assert formulas("SELECT l.src FROM link l WHERE NOT EXISTS "
                    "(SELECT 1 FROM triggered t WHERE t.id = l.dst) AND l.src = 'a'") == {
        ("a",): {"or": [v("link:a:b"), {"and": [v("link:a:c"), {"not": v("triggered:c")}]}]}}


def test_exists_and_in_are_and_of_the_or_of_matches() -> None:
    # (a→b ∨ a→c) ∧ sensor a, rendered as a DNF
    expected = {("a",): {"or": [{"and": [v("link:a:b"), v("sensor:a")]},
                                {"and": [v("link:a:c"), v("sensor:a")]}]}}
    assert formulas("SELECT s.id FROM sensor s WHERE EXISTS "
                    "(SELECT 1 FROM link l WHERE l.src = s.id) AND s.id = 'a'") == expected
    assert formulas("SELECT s.id FROM sensor s WHERE s.id IN (SELECT src FROM link) "
                    "AND s.id = 'a'") == expected


def test_left_join_matched_and_unmatched_rows() -> None:
    got = formulas("SELECT l.src, l.dst, t.id FROM link l LEFT JOIN triggered t "
                   "ON t.id = l.dst WHERE l.src = 'a'")
    assert got == {("a", "c", "c"): {"and": [v("link:a:c"), v("triggered:c")]},
                   ("a", "b", None): v("link:a:b")}


def test_having_count_at_least_k_is_a_threshold() -> None:
    out = run_frames(FRAMES, "SELECT dst, COUNT(*) AS n FROM link GROUP BY dst "
                             "HAVING COUNT(*) >= 2")
    assert out.rows == [("c", 2)] and out.exact
    assert out.provenance(0) == {"and": [v("link:a:c"), v("link:b:c")]}
    # three candidates, at least two: every pair
    out = run_frames(FRAMES, "SELECT COUNT(*) AS n FROM link WHERE src <> 'c' OR dst = 'a' "
                             "HAVING COUNT(*) > 1")
    m = ProvenanceManager()
    names = ["link:a:b", "link:a:c", "link:b:c", "link:c:a"]
    assert out.rows == [(4,)]
    assert to_json(out.manager, out.formulas[0]) == to_json(
        m, at_least(m, 2, [m.var(n) for n in names]))


def test_other_having_is_the_or_and_says_so() -> None:
    out = run_frames(FRAMES, "SELECT src, SUM(cost) AS c FROM link GROUP BY src "
                             "HAVING SUM(cost) > 2")
    assert out.rows == [("a", 3.0), ("c", 5.0)]
    assert not out.exact and "HAVING other than COUNT(*) >= k" in out.notes[0]
    assert out.provenance(0) == {"or": [v("link:a:b"), v("link:a:c")]}
    assert out.as_json()[0]["exact"] is False


def test_a_global_aggregate_always_has_its_row() -> None:
    out = run_frames(FRAMES, "SELECT COUNT(*) AS n, MAX(cost) AS c FROM link")
    assert out.rows == [(4, 5.0)] and out.provenance(0) is True


def test_a_group_is_the_or_of_its_rows() -> None:
    assert formulas("SELECT src, MIN(cost) AS c FROM link WHERE src = 'a' GROUP BY src") == {
        ("a", 1.0): {"or": [v("link:a:b"), v("link:a:c")]}}


def test_a_subquery_in_from() -> None:
    assert formulas("SELECT q.d FROM (SELECT DISTINCT dst AS d FROM link) q JOIN sensor s "
                    "ON s.id = q.d") == {
        ("a",): {"and": [v("link:c:a"), v("sensor:a")]},
        ("c",): {"or": [{"and": [v("link:a:c"), v("sensor:c")]},
                        {"and": [v("link:b:c"), v("sensor:c")]}]}}


def test_order_and_limit_apply_to_the_answer() -> None:
    out = run_frames(FRAMES, "SELECT src, dst, cost FROM link ORDER BY cost DESC LIMIT 2")
    assert out.rows == [("c", "a", 5.0), ("a", "c", 2.0)]
    assert out.notes and "LIMIT 2" in out.notes[0]
    out = run_frames(FRAMES, "SELECT src AS s FROM link ORDER BY s DESC, 1")
    assert [r[0] for r in out.rows] == ["c", "b", "a", "a"]


def test_without_provenance_no_formulas() -> None:
    out = run_frames(FRAMES, "SELECT src FROM link", provenance=False)
    assert out.formulas is None and "instrumented" not in out.sql
    with pytest.raises(ConfigError, match="no provenance"):
        out.provenance(0)


def test_both_dialects_are_generated() -> None:
    _, inst = prepare("SELECT src FROM link EXCEPT SELECT id FROM triggered")
    spark, duck = inst.instrumented_sql("spark"), inst.instrumented_sql("duckdb")
    assert "`_o1` IS NOT DISTINCT FROM" in spark and '"_o1" IS NOT DISTINCT FROM' in duck
    assert sqlglot.parse_one(spark, read="spark") is not None


@pytest.mark.parametrize(("sql", "fragment"), [
    ("INSERT INTO link VALUES ('a', 'b', 1.0)", "expected one read-only SELECT statement"),
    ("SELECT src FROM link l WHERE l.dst = (SELECT MAX(id) FROM sensor)", "a subquery may be"),
    ("SELECT src FROM link EXCEPT ALL SELECT id FROM sensor", "EXCEPT ALL is not supported"),
    ("SELECT src FROM link RIGHT JOIN sensor ON id = dst", "RIGHT JOIN is not supported"),
    ("SELECT l.src FROM link l WHERE EXISTS (SELECT s.id FROM sensor s WHERE s.id = l.dst "
     "GROUP BY s.id)", "a correlated subquery must be one SELECT"),
    ("SELECT l.src FROM link l WHERE EXISTS (SELECT 1 FROM sensor s WHERE EXISTS "
     "(SELECT 1 FROM triggered t WHERE t.id = l.dst))", "two levels out"),
    ("SELECT src FROM link WHERE src = 'a' OR EXISTS (SELECT 1 FROM sensor)", "a subquery may be"),
    ("SELECT src FROM link ORDER BY cost", "ORDER BY 'cost'"),
    ("SELECT src, cost FROM link GROUP BY src", "neither grouped nor aggregated"),
    ("SELECT reflect('java.lang.System', 'exit', 0) AS x FROM link", "not supported"),
    ("SELECT src FROM link UNION SELECT id, x FROM sensor", "1 and 2 columns"),
    ("SELECT src FROM (SELECT src FROM link)", "needs an alias"),
])
def test_refused_with_one_line(sql: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=None) as info:
        parse_sql(sql)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_too_many_witness_rows_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from aspen.errors import QueryRunError
    from aspen.sqlprov import engines

    monkeypatch.setattr(engines, "MAX_WITNESS_ROWS", 3)
    with pytest.raises(QueryRunError, match="more than 3 witness rows"):
        run_frames(FRAMES, "SELECT src FROM link")
    assert len(run_frames(FRAMES, "SELECT src FROM link", provenance=False).rows) == 4
