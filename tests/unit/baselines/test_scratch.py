"""The from-scratch oracle against brute force (networkx simple paths) and hand-worked cases."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.baselines.scratch import base_state, evaluate, evaluate_all
from aspen.catalog import VIEWS
from aspen.engine.batch import BaseFact
from aspen.errors import UnknownViewError

FIG3 = [("A", "B", "p1"), ("B", "C", "p2"), ("C", "A", "p3"), ("C", "B", "p4")]


def links(triples):
    return [BaseFact("link", (s, d, float(c)), f"v{i}") for i, (s, d, c) in enumerate(triples)]


def fig3(drop=()):
    return [BaseFact("link", (s, d, 1.0), v) for s, d, v in FIG3 if v not in drop]


def test_fig3_reachable_is_complete_and_survives_deleting_cb():
    full = {(a, b) for a in "ABC" for b in "ABC"}
    assert evaluate("reachable", fig3()) == full
    assert evaluate("reachable", fig3(drop={"p4"})) == full
    # deleting link(B,C) leaves only (A,B), (C,A), (C,B)
    assert evaluate("reachable", fig3(drop={"p2"})) == {("A", "B"), ("C", "A"), ("C", "B")}


def test_reachable_self_only_via_a_cycle():
    assert evaluate("reachable", links([("a", "b", 1)])) == {("a", "b")}
    assert evaluate("reachable", links([("a", "a", 1)])) == {("a", "a")}


def test_several_instances_count_once_and_parallel_costs_take_the_min():
    facts = [
        BaseFact("link", ("a", "b", 5.0), "v1"),
        BaseFact("link", ("a", "b", 5.0), "v2"),
        BaseFact("link", ("a", "b", 2.0), "v3"),
    ]
    out = evaluate_all(facts)
    assert out["reachable"] == {("a", "b")}
    assert out["min_cost"] == {("a", "b", 2.0)}
    assert out["cheapest_path"] == {("a", "b", ("a", "b"), 2.0)}
    assert out["fewest_hops"] == {("a", "b", ("a", "b"), 1)}


def test_ties_are_all_kept():
    graph = links([("a", "b", 1), ("b", "d", 1), ("a", "c", 1), ("c", "d", 1), ("a", "d", 3)])
    assert evaluate("cheapest_path", graph) >= {
        ("a", "d", ("a", "b", "d"), 2.0),
        ("a", "d", ("a", "c", "d"), 2.0),
    }
    assert {t for t in evaluate("cheapest_path", graph) if t[:2] == ("a", "d")} == {
        ("a", "d", ("a", "b", "d"), 2.0),
        ("a", "d", ("a", "c", "d"), 2.0),
    }
    assert {t for t in evaluate("fewest_hops", graph) if t[:2] == ("a", "d")} == {
        ("a", "d", ("a", "d"), 1)
    }
    scp = {t for t in evaluate("shortest_cheapest_path", graph) if t[:2] == ("a", "d")}
    assert scp == {
        ("a", "d", ("a", "b", "d"), 2.0, ("a", "d"), 1),
        ("a", "d", ("a", "c", "d"), 2.0, ("a", "d"), 1),
    }


def test_zero_cost_cycle_gives_simple_paths_only():
    graph = links([("a", "b", 0), ("b", "a", 0), ("b", "c", 0)])
    out = evaluate_all(graph)
    assert {t[2] for t in out["cheapest_path"] if t[:2] == ("a", "c")} == {("a", "b", "c")}
    # x ∉ p1: a path never returns to its source, so (a,a) is reachable but has no path
    assert ("a", "a") in out["reachable"]
    assert not [t for t in out["cheapest_path"] if t[0] == t[1]]
    assert not [t for t in out["min_cost"] if t[0] == t[1]]


def test_self_loops_follow_the_unguarded_base_rule():
    graph = links([("a", "a", 0), ("b", "a", 2)])
    out = evaluate_all(graph)
    assert out["min_cost"] == {("a", "a", 0.0), ("b", "a", 2.0)}
    assert out["min_hops"] == {("a", "a", 1), ("b", "a", 1)}
    # (b,a) then the 0-cost self-loop ties with (b,a): x ∉ p1 allows it (b ∉ (a,a))
    assert out["cheapest_path"] == {
        ("a", "a", ("a", "a"), 0.0),
        ("b", "a", ("b", "a"), 2.0),
        ("b", "a", ("b", "a", "a"), 2.0),
    }
    assert out["fewest_hops"] == {("a", "a", ("a", "a"), 1), ("b", "a", ("b", "a"), 1)}


def brute_force(triples):
    """Paths by the rules, literally: every link is a path; prepend x to p1 when x ∉ p1."""
    g = nx.DiGraph()
    for s, d, c in triples:
        if not g.has_edge(s, d) or c < g[s][d]["w"]:
            g.add_edge(s, d, w=float(c))
    reach = set(nx.transitive_closure(g, reflexive=False).edges)
    reach |= {(n, n) for n in g.nodes if g.has_edge(n, n)}
    all_paths = {(s, d) for s, d in g.edges}
    frontier = set(all_paths)
    while frontier:
        frontier = {
            (x, *p) for p in frontier for x in g.predecessors(p[0]) if x not in p
        } - all_paths
        all_paths |= frontier
    paths = {}
    for p in all_paths:
        paths.setdefault((p[0], p[-1]), []).append(p)

    def cost(p):
        total = 0.0
        for a, b in reversed(list(zip(p, p[1:], strict=False))):
            total = g[a][b]["w"] + total
        return total

    out = {"reachable": reach, "min_cost": set(), "min_hops": set()}
    out["cheapest_path"], out["fewest_hops"] = set(), set()
    for (s, d), ps in paths.items():
        best_c = min(cost(p) for p in ps)
        best_h = min(len(p) - 1 for p in ps)
        out["min_cost"].add((s, d, best_c))
        out["min_hops"].add((s, d, best_h))
        out["cheapest_path"] |= {(s, d, p, cost(p)) for p in ps if cost(p) == best_c}
        out["fewest_hops"] |= {(s, d, p, len(p) - 1) for p in ps if len(p) - 1 == best_h}
    return out


edge_lists = st.lists(
    st.tuples(st.sampled_from("abcde"), st.sampled_from("abcde"), st.integers(0, 3)),
    max_size=10,
)


@settings(max_examples=120, deadline=None)
@given(edge_lists)
def test_network_views_match_brute_force(triples):
    expected = brute_force(triples)
    got = evaluate_all(links(triples), views=tuple(expected))
    for view, tuples in expected.items():
        assert got[view] == tuples, view


@settings(max_examples=60, deadline=None)
@given(edge_lists)
def test_min_cost_matches_networkx_dijkstra(triples):
    g = nx.DiGraph()
    for s, d, c in triples:
        if s != d and (not g.has_edge(s, d) or c < g[s][d]["weight"]):
            g.add_edge(s, d, weight=float(c))
    got = {(s, d): c for s, d, c in evaluate("min_cost", links(triples)) if s != d}
    want = {
        (s, d): c
        for s, dists in nx.all_pairs_dijkstra_path_length(g)
        for d, c in dists.items()
        if s != d
    }
    assert got == want


def sensors(points, triggered, seeds):
    facts = [BaseFact("sensor", (s, x, y), f"s_{s}") for s, (x, y) in points.items()]
    facts += [BaseFact("triggered", (s,), f"t_{s}") for s in triggered]
    facts += [BaseFact("region_seed", (r, s), f"r_{r}_{s}") for r, s in seeds]
    return facts


def test_region_flood_fill_strict_distance_and_triggering():
    points = {"s1": (0, 0), "s2": (12, 16), "s3": (11, 16), "s4": (25, 16), "s5": (40, 40)}
    # s1–s3: 19.4 < 20; s1–s2: exactly 20 (not near); s3–s4: 14; s2 untriggered
    facts = sensors(points, {"s1", "s3", "s4", "s5"}, {("r1", "s1"), ("r2", "s5")})
    out = evaluate_all(facts)
    assert out["active_region"] == {("r1", "s1"), ("r1", "s3"), ("r1", "s4"), ("r2", "s5")}
    assert out["region_sizes"] == {("r1", 3), ("r2", 1)}
    assert out["largest_regions"] == {("r1", 3)}


def test_region_seed_must_be_a_triggered_sensor():
    points = {"s1": (0, 0), "s2": (5, 0)}
    assert evaluate("active_region", sensors(points, {"s2"}, {("r", "s1")})) == set()
    assert evaluate("active_region", sensors(points, {"s1", "s2"}, {("r", "s9")})) == set()
    both = sensors(points, {"s1", "s2"}, {("r", "s1")})
    assert evaluate("active_region", both) == {("r", "s1"), ("r", "s2")}
    # an untriggered sensor is not added even next to a member
    assert evaluate("active_region", sensors(points, {"s1"}, {("r", "s1")})) == {("r", "s1")}


def test_largest_regions_keeps_ties_and_is_empty_without_regions():
    points = {"a": (0, 0), "b": (100, 100)}
    facts = sensors(points, {"a", "b"}, {("r1", "a"), ("r2", "b")})
    assert evaluate("largest_regions", facts) == {("r1", 1), ("r2", 1)}
    assert evaluate("largest_regions", []) == set()
    assert evaluate("region_sizes", sensors(points, set(), {("r1", "a")})) == set()


def test_input_forms_agree():
    facts = fig3()
    by_var = {f.var: f for f in facts}
    by_relation = {"link": [f.values for f in facts]}
    assert evaluate("reachable", by_var) == evaluate("reachable", by_relation)
    assert base_state(by_relation).links == {(s, d, 1.0) for s, d, _ in FIG3}


def test_unknown_view_and_relation_are_refused():
    with pytest.raises(UnknownViewError):
        evaluate("reach", [])
    with pytest.raises(UnknownViewError):
        evaluate("reachable", {"linkz": [("a", "b", 1.0)]})
    assert set(evaluate_all([])) == set(VIEWS)
