"""The network's health and a failure's impact on tiny literal graphs (exact counts), and
against networkx on random ones."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.views.network_health import (
    DomainImpact,
    failure_impact,
    network_health,
    pair_count,
    partitions,
    percent_text,
    region_changes,
    shortest_costs,
)

#: Two stub domains s0.0 (s0.0.0, s0.0.1) and s0.1 (s0.1.0) hanging off transit routers t0.0,
#: t0.1; links both ways; costs 2 ms inside a stub, 10 ms stub–transit, 50 ms transit–transit,
#: and a 100 ms backup s0.0.1 → s0.1.0 (one way).
ONE_WAY = [("s0.0.0", "s0.0.1", 2.0), ("s0.0.0", "t0.0", 10.0), ("t0.0", "t0.1", 50.0),
           ("t0.1", "s0.1.0", 10.0)]
LINKS = ONE_WAY + [(d, s, c) for s, d, c in ONE_WAY] + [("s0.0.1", "s0.1.0", 100.0)]


def _closure(links: list[tuple[str, str, float]]) -> set[tuple[str, str]]:
    graph = nx.DiGraph([(s, d) for s, d, _ in links])
    return {(s, d) for s in graph for d in nx.descendants(graph, s)}


def _min_costs(links: list[tuple[str, str, float]]) -> dict[tuple[str, str], float]:
    graph = nx.DiGraph()
    for s, d, c in links:
        graph.add_edge(s, d, cost=min(c, graph[s][d]["cost"]) if graph.has_edge(s, d) else c)
    return {(s, d): c for s, costs in nx.all_pairs_dijkstra_path_length(graph, weight="cost")
            for d, c in costs.items() if s != d}


def _impact_from_scratch(links: list[tuple[str, str, float]], deleted: set[tuple[str, str]]):
    """What the views would lose, evaluated from scratch, and the impact on those rows."""
    left = [link for link in links if (link[0], link[1]) not in deleted]
    before, after = _min_costs(links), _min_costs(left)
    lost_reach = sorted(_closure(links) - _closure(left))
    lost_cost = [(s, d, c) for (s, d), c in before.items() if after.get((s, d)) != c]
    return failure_impact(links, deleted, pair_count(_closure(links)), lost_reach, lost_cost), \
        before, after


def test_cutting_the_transit_link_disconnects_the_stubs_but_the_backup_keeps_one_way() -> None:
    impact, _, _ = _impact_from_scratch(LINKS, {("t0.0", "t0.1"), ("t0.1", "t0.0")})
    # before: 5 routers, all 20 ordered pairs reachable
    assert impact.reachable_pairs == 20
    # after: {s0.0.0, s0.0.1, t0.0} still reach s0.1.0 and t0.1 over the backup; s0.1.0 and
    # t0.1 reach none of those three: 2 × 3 pairs lost
    assert impact.disconnected == 6
    assert impact.share_text() == "6 of 20 pairs disconnected (30.0 %)"
    rerouted = {(r.src, r.dst): (r.before, r.after) for r in impact.reroutes}
    assert rerouted == {
        ("s0.0.0", "s0.1.0"): (70.0, 102.0), ("s0.0.0", "t0.1"): (60.0, 112.0),
        ("s0.0.1", "s0.1.0"): (72.0, 100.0), ("s0.0.1", "t0.1"): (62.0, 110.0),
        ("t0.0", "s0.1.0"): (60.0, 112.0), ("t0.0", "t0.1"): (50.0, 122.0),
    }
    assert impact.reroutes[0].added == 72.0  # worst first: t0.0 → t0.1
    # added: 32, 52, 28, 48, 52, 72 ms
    assert impact.added_median() == 50.0 and impact.added_worst() == 72.0
    assert impact.isolated == () and impact.unexplained == 0


def test_a_failed_router_is_not_counted_isolated_but_its_stub_is() -> None:
    gone = {(s, d) for s, d, _ in LINKS if "t0.0" in (s, d)}
    impact, _, _ = _impact_from_scratch(LINKS, gone)
    assert impact.isolated == ("t0.0",)
    impact = failure_impact(LINKS, gone, 20, [], [], failed=("t0.0",))
    assert impact.isolated == ()
    leaf = {("s0.1.0", "t0.1"), ("t0.1", "s0.1.0"), ("s0.0.1", "s0.1.0")}
    impact, _, _ = _impact_from_scratch(LINKS, leaf)
    assert impact.isolated == ("s0.1.0",)
    assert impact.disconnected == 8  # s0.1.0 to and from the 4 others
    by_domain = {d.domain: d for d in impact.domains}
    assert by_domain["s0.1"] == DomainImpact("s0.1", 1, 8, 0)
    assert by_domain["s0.0"].disconnected == 4 and by_domain["t0"].disconnected == 4


def test_a_pair_whose_least_cost_survives_keeps_its_cost() -> None:
    # a tie: a → c costs 2 over b and over d; losing a → b keeps a → c at 2 ms
    links = [("a", "b", 1.0), ("b", "c", 1.0), ("a", "d", 1.0), ("d", "c", 1.0)]
    impact, before, after = _impact_from_scratch(links, {("a", "b")})
    assert before[("a", "c")] == after[("a", "c")] == 2.0
    assert impact.disconnected == 1  # (a, b)
    assert impact.reroutes == []


def test_pairs_of_a_router_with_itself_are_left_out() -> None:
    impact = failure_impact([("a", "b", 1.0), ("b", "a", 1.0)], {("a", "b")}, 2,
                            [("a", "a"), ("b", "b"), ("a", "b")], [("a", "b", 1.0)])
    assert impact.disconnected == 1
    assert pair_count([("a", "a"), ("a", "b")]) == 1


def test_a_lost_least_cost_without_a_route_left_is_reported_not_guessed() -> None:
    impact = failure_impact([("a", "b", 1.0)], {("a", "b")}, 1, [], [("a", "b", 1.0)])
    assert impact.reroutes == [] and impact.unexplained == 1


def test_health_counts_routers_links_partitions_and_deaths() -> None:
    instances = [
        ("a", "b", None, None), ("b", "a", None, None),  # a ⇄ b live
        ("c", "d", None, None),  # c → d live: a second part
        ("b", "c", 5, "deleted"), ("b", "c", 7, "expired"),  # b → c down since batch 7
        ("d", "e", 6, "deleted"),  # e isolated since batch 6
        ("a", "b", 3, "replaced"),  # an old instance of a live link: no death of the link
        ("c", "d", 2, "deleted"),  # c → d died once, lives again
    ]
    health = network_health(instances, reachable_pairs=3, previous_pairs=9)
    assert health.routers == ("a", "b", "c", "d", "e")
    assert health.links_up == 3
    assert [(d.src, d.dst, d.death, d.batch) for d in health.links_down] == [
        ("b", "c", "expired", 7), ("d", "e", "deleted", 6)]
    assert health.isolated == [("e", 6)]
    assert health.partitions == [("a", "b"), ("c", "d"), ("e",)]
    assert health.split and health.routers_up == 4 and health.possible_pairs == 12
    assert health.change == -6
    assert health.reachable_text() == "3 of 12 pairs reachable (25.0 %)"


def test_a_whole_network_is_one_partition() -> None:
    health = network_health([("a", "b", None, None), ("c", "b", None, None)], 2)
    assert not health.split and health.isolated == [] and health.change is None


def test_regions_keep_the_members_still_present() -> None:
    members = [("r1", "s1"), ("r1", "s2"), ("r1", "s3"), ("r2", "s5"), ("r3", "s6")]
    changes = region_changes(members, [("r1", "s2"), ("r2", "s5")])
    assert [(c.region, c.size, c.kept, c.lost, c.gone) for c in changes] == [
        ("r1", 3, 2, ("s2",), False), ("r2", 1, 0, ("s5",), True), ("r3", 1, 1, (), False)]


@pytest.mark.parametrize(("part", "whole", "text"), [
    (1875, 10000, "18.8 %"), (1, 3, "33.3 %"), (1, 9900, "< 0.1 %"), (5, 5, "100.0 %"),
    (0, 7, "0 %")])
def test_percentages(part: int, whole: int, text: str) -> None:
    assert percent_text(part, whole) == text


NODES = st.sampled_from(["a", "b", "c", "d", "e", "f"])
EDGES = st.lists(st.tuples(NODES, NODES, st.integers(0, 9).map(float)), max_size=14).map(
    lambda edges: [e for e in edges if e[0] != e[1]])


@settings(max_examples=60, deadline=None)
@given(EDGES, st.sets(st.tuples(NODES, NODES), max_size=4))
def test_impact_agrees_with_networkx(links: list[tuple[str, str, float]],
                                     deleted: set[tuple[str, str]]) -> None:
    impact, before, after = _impact_from_scratch(links, deleted)
    left = [link for link in links if (link[0], link[1]) not in deleted]
    assert impact.disconnected == len(before.keys() - after.keys())
    assert {(r.src, r.dst): r.after for r in impact.reroutes} == {
        pair: after[pair] for pair in before.keys() & after.keys() if after[pair] != before[pair]}
    assert all(r.added > 0 for r in impact.reroutes)
    linked_after = {n for s, d, _ in left for n in (s, d)}
    assert set(impact.isolated) == {n for s, d, _ in links for n in (s, d)} - linked_after


@settings(max_examples=60, deadline=None)
@given(EDGES, st.sets(NODES, max_size=6))
def test_partitions_and_costs_agree_with_networkx(links: list[tuple[str, str, float]],
                                                  lone: set[str]) -> None:
    graph = nx.DiGraph()
    graph.add_nodes_from(lone)
    graph.add_edges_from((s, d) for s, d, _ in links)
    expected = sorted((tuple(sorted(c)) for c in nx.weakly_connected_components(graph)),
                      key=lambda c: (-len(c), c))
    assert partitions(lone | {n for s, d, _ in links for n in (s, d)},
                      [(s, d) for s, d, _ in links]) == expected
    costs = _min_costs(links)
    for source in {s for s, _, _ in links}:
        targets = {d for s, d in costs if s == source}
        assert shortest_costs(links, source, targets | {"zz"}) == {
            d: costs[(source, d)] for d in targets}
