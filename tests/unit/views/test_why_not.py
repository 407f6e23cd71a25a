"""Why not: exact answers on tiny literal graphs, and a property against brute force (networkx and
every subset of the dead links) on random small graphs."""

from __future__ import annotations

import itertools
import math
import random

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.baselines.scratch import evaluate
from aspen.engine.batch import BaseFact
from aspen.views.why_not import Link, WhyNot, route_through, why_not

# -- tiny literal graphs ---------------------------------------------------------------------


def test_a_deleted_link_that_would_connect_the_pair_is_named() -> None:
    answer = why_not("a", "d", [("a", "b", 1.0), ("b", "c", 2.0)],
                     [("c", "d", 1.5, "deleted", 3), ("a", "d", 3.5, "deleted", 1)])
    # both routes need one dead link; a → d is cheaper (3.5 < 4.5)
    assert answer.verdict == "dead"
    assert answer.nodes == ("a", "d")
    assert answer.dead_links == (Link("a", "d", 3.5, "deleted", 1),)
    assert answer.cost == 3.5
    assert answer.sentences() == [
        "a cannot reach d over live links.",
        "The route needing the fewest recently dead links is a → d (3.5 ms); it needs 1 dead "
        "link:",
        "a → d (3.5 ms), deleted in batch 1",
    ]


def test_fewest_dead_links_beats_a_cheaper_route_with_more_of_them() -> None:
    live = [("a", "b", 100.0), ("b", "c", 100.0)]
    dead = [("a", "x", 1.0, "deleted", 2), ("x", "y", 1.0, "expired", 3),
            ("y", "d", 1.0, "deleted", 4), ("c", "d", 100.0, "expired", 5)]
    answer = why_not("a", "d", live, dead)
    assert answer.nodes == ("a", "b", "c", "d")
    assert [link.describe() for link in answer.dead_links] == ["c → d (100 ms), expired in batch 5"]
    assert answer.cost == 300.0


def test_ties_go_to_the_cheaper_route_then_the_first_by_node_ids() -> None:
    dead = [("b", "d", 1.0, "deleted", 1), ("c", "d", 1.0, "deleted", 1)]
    answer = why_not("a", "d", [("a", "c", 1.0), ("a", "b", 1.0)], dead)
    assert answer.nodes == ("a", "b", "d")  # same dead count and cost: b before c
    cheaper = why_not("a", "d", [("a", "c", 1.0), ("a", "b", 2.0)], dead)
    assert cheaper.nodes == ("a", "c", "d")


def test_equal_cost_ties_prefer_fewer_links_so_zero_cost_cycles_end() -> None:
    live = [("a", "b", 0.0), ("b", "a", 0.0), ("a", "c", 0.0)]
    answer = why_not("a", "d", live, [("c", "d", 0.0, "deleted", 1)])
    assert answer.nodes == ("a", "c", "d")


def test_a_live_route_means_the_view_is_behind() -> None:
    answer = why_not("a", "c", [("a", "b", 1.0), ("b", "c", 2.0)], [("a", "c", 1.0, "deleted", 1)])
    assert answer.verdict == "reachable"
    assert answer.nodes == ("a", "b", "c") and not answer.dead_links
    assert answer.sentences() == [
        "a reaches c over live links now: a → b → c (3 ms).",
        "The view may not have caught up with the latest links yet.",
    ]


def test_a_dead_pair_that_is_live_again_counts_as_live() -> None:
    answer = why_not("a", "b", [("a", "b", 5.0)], [("a", "b", 1.0, "deleted", 9)])
    assert answer.verdict == "reachable" and answer.route == (Link("a", "b", 5.0),)


def test_several_instances_of_a_link_count_as_the_cheapest() -> None:
    answer = why_not("a", "b", [("a", "b", 5.0), ("a", "b", 2.0)], [])
    assert answer.cost == 2.0


def test_a_node_reaches_itself_only_around_a_cycle() -> None:
    # as in the reachable view: (a, a) only via a cycle
    assert evaluate("reachable", [BaseFact("link", ("a", "b", 1.0), "v1")]) == {("a", "b")}
    alone = why_not("a", "a", [("a", "b", 1.0)], [])
    assert alone.verdict == "cut"
    assert alone.source_side == ("a", "b") and alone.target_side == ("a",)
    assert alone.candidates == (("b", "a"), ("a", "a"))  # a link back first, the self-link last
    assert "A node reaches itself only around a cycle of at least one link." in alone.sentences()
    back = why_not("a", "a", [("a", "b", 1.0)], [("b", "a", 2.0, "expired", 4)])
    assert back.verdict == "dead" and back.nodes == ("a", "b", "a")
    assert back.sentences()[0] == "a cannot reach itself over live links."
    around = why_not("a", "a", [("a", "b", 1.0), ("b", "a", 1.0)], [])
    assert around.verdict == "reachable" and around.nodes == ("a", "b", "a")


def test_a_self_link_is_a_cycle() -> None:
    assert why_not("a", "a", [("a", "a", 1.0)], []).nodes == ("a", "a")


def test_cut_pairs_name_both_sides_and_the_links_that_would_join_them() -> None:
    live = [("a", "b", 1.0), ("c", "d", 1.0), ("e", "c", 1.0)]
    answer = why_not("a", "d", live, [("d", "a", 1.0, "deleted", 2)], max_candidates=3)
    assert answer.verdict == "cut" and not answer.route
    assert answer.source_side == ("a", "b")
    assert answer.target_side == ("c", "d", "e")
    assert answer.candidates == (("a", "d"), ("a", "c"), ("b", "d"))
    assert answer.sentences() == [
        "a cannot reach d, not even through recently dead links.",
        "Group 1, a and the nodes it reaches through live or recently dead links (2 nodes): "
        "a, b.",
        "Group 2, d and the nodes that reach it (3 nodes): c, d, e.",
        "No link, live or recently dead, goes from group 1 to group 2.",
        "Any one of these missing links would connect them: a → d, a → c, b → d.",
    ]


def test_long_node_lists_are_cut_short_in_words() -> None:
    live = [("a", f"n{i:02d}", 1.0) for i in range(20)] + [("z", "y", 1.0)]
    lines = why_not("a", "y", live, []).sentences()
    assert lines[1].endswith("n10 and 9 more.")
    assert "(21 nodes)" in lines[1]


def test_an_end_on_no_link_is_no_node_of_the_network() -> None:
    answer = why_not("q", "z", [("a", "b", 1.0)], [("b", "c", 1.0, "deleted", 1)])
    assert answer.verdict == "unknown" and answer.missing == ("q", "z")
    assert answer.sentences() == [
        "q is not a node of the network: no live or recently dead link starts or ends there.",
        "z is not a node of the network: no live or recently dead link starts or ends there.",
    ]
    assert why_not("a", "c", [("a", "b", 1.0)], [("b", "c", 1.0, "deleted", 1)]).verdict == "dead"


def test_missing_costs_and_batches_are_words_not_errors() -> None:
    answer = why_not("a", "c", [("a", "b", None)], [("b", "c", float("nan"), None, None)])
    assert answer.verdict == "dead"
    assert answer.sentences()[-1] == "b → c (cost unknown), deleted"
    assert math.isnan(answer.cost)


def test_names_go_through_the_given_quoting() -> None:
    answer = why_not("a", "c", [("a", "b", 1.0)], [("b", "c", 1.0, "deleted", 2)])
    assert answer.sentences(lambda node: f"`{node}`")[-1] == "`b` → `c` (1 ms), deleted in batch 2"


def test_the_answer_is_frozen() -> None:
    answer = why_not("a", "b", [("a", "b", 1.0)], [])
    with pytest.raises(AttributeError):
        answer.verdict = "cut"  # type: ignore[misc]


def test_route_through_a_witness() -> None:
    assert route_through([("b", "c"), ("a", "b")], "a", "c") == ["a", "b", "c"]
    assert route_through([("a", "b"), ("a", "c")], "a", "c") is None  # a fork
    assert route_through([], "a", "a") is None
    assert route_through([("a", "b")], "a", "c") is None


# -- the property ------------------------------------------------------------------------------

NODES = "abcdef"


@st.composite
def graphs(draw: st.DrawFn) -> tuple[list, list, str, str]:
    """Live links, dead links (at most 6: every subset is tried) and a pair (src, dst) that is
    not reachable over the live links; integer costs, so sums compare exactly."""
    pairs = [(u, v) for u in NODES for v in NODES]
    chosen = draw(st.lists(st.sampled_from(pairs), max_size=12, unique=True))
    dead_count = draw(st.integers(0, min(6, len(chosen))))
    costs = draw(st.lists(st.integers(0, 9), min_size=len(chosen), max_size=len(chosen)))
    batches = draw(st.lists(st.integers(1, 5), min_size=len(chosen), max_size=len(chosen)))
    live = [(u, v, float(c)) for (u, v), c in zip(chosen[dead_count:], costs[dead_count:],
                                                 strict=True)]
    dead = [(u, v, float(c), draw(st.sampled_from(["deleted", "expired"])), b)
            for (u, v), c, b in zip(chosen[:dead_count], costs, batches, strict=False)]
    reachable = _closure([(u, v) for u, v, _ in live])
    nodes = sorted({u for u, _ in chosen} | {v for _, v in chosen})
    # mostly a pair of the network's nodes; now and then one end that is on no link
    ends = nodes if nodes and draw(st.integers(0, 9)) else [*NODES, "z"]
    unreachable = [(u, v) for u in ends for v in ends if (u, v) not in reachable]
    if not unreachable:  # every pair is reachable: cut one node off
        src = draw(st.sampled_from(nodes))
        live = [link for link in live if link[0] != src]
        return live, dead, src, draw(st.sampled_from(nodes))
    # half the time, if there is one, a pair that the dead links would connect
    rescued = [pair for pair in unreachable if pair in _closure(chosen)]
    src, dst = draw(st.sampled_from(rescued if rescued and draw(st.booleans()) else unreachable))
    return live, dead, src, dst


def _closure(links: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """Reachable pairs (≥ 1 link), by networkx: descendants of each link's head."""
    graph = nx.DiGraph(links)
    return {(u, w) for u, v in links for w in {v} | nx.descendants(graph, v)}


def _reaches(links: list[tuple[str, str]], src: str, dst: str) -> bool:
    return (src, dst) in _closure(links)


@settings(max_examples=300, deadline=None)
@given(graphs(), st.randoms(use_true_random=False))
def test_why_not_against_brute_force(case: tuple[list, list, str, str], rnd: random.Random) -> None:
    live, dead, src, dst = case
    live_pairs = [(u, v) for u, v, _ in live]
    assert not _reaches(live_pairs, src, dst)
    answer = why_not(src, dst, live, dead)
    assert isinstance(answer, WhyNot)

    # deterministic: the order of the links does not matter
    shuffled_live, shuffled_dead = live[:], dead[:]
    rnd.shuffle(shuffled_live)
    rnd.shuffle(shuffled_dead)
    assert why_not(src, dst, shuffled_live, shuffled_dead) == answer

    nodes = {u for u, _ in live_pairs} | {v for _, v in live_pairs}
    nodes |= {link[0] for link in dead} | {link[1] for link in dead}
    if src not in nodes or dst not in nodes:
        assert answer.verdict == "unknown"
        assert set(answer.missing) == {src, dst} - nodes
        return
    assert answer.verdict != "reachable"  # not reachable over live links, by construction

    live_set = set(live_pairs)
    dead_by_pair = {(u, v): (c, death, b) for u, v, c, death, b in dead}
    # brute force: the fewest dead links that make (src, dst) reachable
    fewest = next(
        (size for size in range(len(dead) + 1)
         for subset in itertools.combinations([(u, v) for u, v, *_ in dead], size)
         if _reaches(live_pairs + list(subset), src, dst)),
        None,
    )
    if fewest is None:
        assert answer.verdict == "cut" and not answer.route
        assert not _reaches(live_pairs + list(dead_by_pair), src, dst)
        assert src in answer.source_side and dst in answer.target_side
        assert answer.candidates
        for u, v in answer.candidates:
            assert u in nodes and v in nodes
            assert _reaches(live_pairs + list(dead_by_pair) + [(u, v)], src, dst)
        return

    assert answer.verdict == "dead"
    route = answer.route
    assert route[0].src == src and route[-1].dst == dst
    assert all(a.dst == b.src for a, b in itertools.pairwise(route))
    for link in route:
        pair = (link.src, link.dst)
        if link.live:
            assert pair in live_set
        else:
            assert pair not in live_set and pair in dead_by_pair
            assert (link.cost, link.death, link.batch) == dead_by_pair[pair]
    assert len(answer.dead_links) == fewest

    # among routes with the fewest dead links, the cheapest (networkx, one weight: dead links
    # dominate, then cost; a first link out of src, so that src == dst needs a cycle)
    big = 1 + sum(c for *_, c in live) + sum(link[2] for link in dead)
    graph = nx.DiGraph()
    for u, v, c in live:
        graph.add_edge(u, v, weight=c)
    for u, v, c, *_ in dead:
        if (u, v) not in live_set:
            graph.add_edge(u, v, weight=big + c)
    to_dst = nx.single_source_dijkstra_path_length(graph.reverse(), dst)
    best = min(w + to_dst[v] for _, v, w in graph.out_edges(src, data="weight") if v in to_dst)
    assert answer.cost + big * len(answer.dead_links) == best
