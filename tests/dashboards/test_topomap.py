"""The network map's pure functions (``dashboards/topomap.py``): where nodes go, what the figure
draws and says on hover, what a click shows, and the overlays other pages share.

Small graphs are literal; one is generated (1,000 nodes, transit-stub) to check the layout and
the figure keep their properties at that size (timings are measured, not asserted).
"""

from __future__ import annotations

import json
import math
import random
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as hst

from aspen.generators.topology import TransitStubParams, transit_stub

DASHBOARDS = Path(__file__).resolve().parents[2] / "dashboards"
sys.path.insert(0, str(DASHBOARDS))
import topomap  # noqa: E402

#: Two transit nodes of one domain, one stub of three nodes each, and the links between them.
NODES = ["t0.0", "t0.1", "s0.0.0.0", "s0.0.0.1", "s0.0.0.2", "s0.1.0.0", "s0.1.0.1", "s0.1.0.2"]
LINKS = [
    ("t0.0", "t0.1", 50.0), ("t0.1", "t0.0", 50.0),
    ("t0.0", "s0.0.0.0", 10.0), ("s0.0.0.0", "t0.0", 10.0),
    ("t0.1", "s0.1.0.2", 10.0), ("s0.1.0.2", "t0.1", 10.0),
    ("s0.0.0.0", "s0.0.0.1", 2.0), ("s0.0.0.1", "s0.0.0.2", 2.0),
    ("s0.1.0.0", "s0.1.0.1", 2.0), ("s0.1.0.1", "s0.1.0.2", 2.0),
]
HOSTILE = ["<b>x</b>", "a→b", "", "$x$", "[click](http://evil.example/)", "a\nb"]
RED, GREY = "#d62728", "#7f7f7f"


def _distance(p: tuple[float, float], q: tuple[float, float]) -> float:
    return math.hypot(p[0] - q[0], p[1] - q[1])


def _trace(figure, name: str):
    (found,) = [t for t in figure.data if t.name == name]
    return found


def _hover_lines(figure) -> list[str]:
    """Every line of the link markers' hover texts."""
    return [line for text in _trace(figure, "links").hovertext for line in text.split("<br>")]


def _segments(trace) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """The (start, end) of every line segment of a lines trace (NaN between segments)."""
    xs, ys = list(trace.x), list(trace.y)
    assert all(math.isnan(v) for v in xs[2::3])
    return [((xs[i], ys[i]), (xs[i + 1], ys[i + 1])) for i in range(0, len(xs), 3)]


# -- layout -----------------------------------------------------------------------------------


def test_layout_places_every_node_and_link_end() -> None:
    positions = topomap.layout(["t0.9"], LINKS)
    assert set(positions) == {*NODES, "t0.9"}
    assert all(isinstance(n, str) for n in positions)
    assert all(math.isfinite(v) for xy in positions.values() for v in xy)
    assert len(set(positions.values())) == len(positions)  # no two nodes on one spot


def test_transit_nodes_are_nearer_the_centre_than_their_stubs() -> None:
    positions = topomap.layout(NODES, LINKS)
    centre = (0.0, 0.0)
    for transit in ("t0.0", "t0.1"):
        own = [n for n in NODES if n.startswith(f"s{transit[1:]}.")]
        assert own
        assert all(_distance(positions[transit], centre) < _distance(positions[s], centre)
                   for s in own)


def test_stub_nodes_cluster_by_their_transit_node_and_stub() -> None:
    positions = topomap.layout(NODES, LINKS)
    for stub in [n for n in NODES if n.startswith("s")]:
        own, other = f"t{stub[1:4]}", "t0.1" if stub[1:4] == "0.0" else "t0.0"
        assert _distance(positions[stub], positions[own]) < _distance(positions[stub],
                                                                     positions[other])
    first = [positions[n] for n in NODES if n.startswith("s0.0.0.")]
    second = [positions[n] for n in NODES if n.startswith("s0.1.0.")]
    widest = max(_distance(p, q) for group in (first, second) for p in group for q in group)
    assert widest < min(_distance(p, q) for p in first for q in second)


def test_layout_is_deterministic_and_ignores_input_order() -> None:
    shuffled = LINKS[:]
    random.Random(3).shuffle(shuffled)
    assert topomap.layout(NODES, LINKS) == topomap.layout(NODES[::-1], shuffled)
    assert topomap.layout(NODES, LINKS) == topomap.layout(NODES, LINKS)


def test_a_lone_transit_node_sits_in_the_middle_of_its_stubs() -> None:
    positions = topomap.layout(["t0.0", "s0.0.0.0", "s0.0.1.0", "s0.0.2.0"], [])
    assert positions["t0.0"] == (0.0, 0.0)
    radii = {round(_distance(positions[n], (0.0, 0.0)), 3) for n in positions if n != "t0.0"}
    assert len(radii) == 1 and radii.pop() > 0  # the three one-node stubs on one circle


def test_domains_are_grouped_on_the_transit_circle() -> None:
    transits = ["t0.0", "t0.1", "t0.2", "t1.0", "t1.1", "t1.2", "t2.0", "t2.1"]
    positions = topomap.layout(transits, [])
    # clockwise from the top, domain by domain
    clockwise = sorted(transits, key=lambda n: (math.pi / 2 - math.atan2(
        positions[n][1], positions[n][0])) % (2 * math.pi))
    assert [n[1] for n in clockwise] == ["0", "0", "0", "1", "1", "1", "2", "2"]
    radii = {round(_distance(positions[n], (0.0, 0.0)), 3) for n in transits}
    assert len(radii) == 1


def test_ids_that_do_not_parse_go_outside_the_structured_ones() -> None:
    positions = topomap.layout([*NODES, "x", "t0.1x", "s1"], LINKS)
    outermost = max(_distance(positions[n], (0.0, 0.0)) for n in NODES)
    for odd in ("x", "t0.1x", "s1"):
        assert _distance(positions[odd], (0.0, 0.0)) > outermost


def test_two_ids_for_one_place_both_get_their_own_spot() -> None:
    positions = topomap.layout(["t0.1", "t00.1", "t0.0"], [])
    assert positions["t0.1"] != positions["t00.1"]


def test_fallback_layout_takes_any_ids() -> None:
    links = [(HOSTILE[i], HOSTILE[i + 1]) for i in range(len(HOSTILE) - 1)]
    positions = topomap.layout(["lonely"], links)
    assert set(positions) == {*HOSTILE, "lonely"}
    assert all(math.isfinite(v) for xy in positions.values() for v in xy)
    assert len(set(positions.values())) == len(positions)
    assert positions == topomap.layout(["lonely"], links[::-1])


def test_fallback_layout_of_a_bigger_disconnected_graph_is_deterministic() -> None:
    links = [(f"n{i}", f"n{(i * 7 + 1) % 80}") for i in range(80)] + [("p", "q")]
    first = topomap.layout([], links)
    assert len(first) == 82 and first == topomap.layout([], links[::-1])
    assert topomap.layout([], []) == {} and topomap.layout(["only"], []) == {"only": (0.0, 0.0)}


def test_roles_and_link_kinds_come_from_the_ids() -> None:
    assert [topomap.role_of(n) for n in ("t0.0", "s0.0.0.1", "x", "", "t0")] == [
        "transit", "stub", "other", "other", "other"]
    assert topomap.link_kind("s0.0.0.1", "s0.0.0.2") == "inside a stub"
    assert topomap.link_kind("t0.0", "x") == ""


# -- the map figure ---------------------------------------------------------------------------


LIVE = [("a", "b", 10.0), ("b", "a", 10.0), ("b", "c", 2.0)]
DEAD = [("c", "d", "deleted", 3), ("d", "a", "expired", 4)]


def test_live_links_are_one_line_per_pair_and_hover_in_plain_words() -> None:
    figure = topomap.map_figure(LIVE, DEAD)
    legend = [t.name for t in figure.data if t.showlegend is not False]
    assert legend == ["live links, 2 ms", "live links, 10 ms", "deleted recently (dashed red)",
                      "expired recently (dashed grey)", "other node"]
    assert len(_segments(_trace(figure, "live links, 10 ms"))) == 1  # a→b and b→a: one line
    assert _trace(figure, "live links, 2 ms").hoverinfo == "skip"
    assert sorted(_hover_lines(figure)) == [
        "a → b, 10 ms", "b → a, 10 ms", "b → c, 2 ms", "c → d, deleted in batch 3",
        "d → a, expired in batch 4"]
    links = _trace(figure, "links")
    assert links.customdata.tolist() == [["link", "a", "b"], ["link", "a", "d"],
                                         ["link", "b", "c"], ["link", "c", "d"]]
    assert links.marker.color == "rgba(0,0,0,0)"  # invisible, but hoverable and clickable


def test_dead_links_are_dashed_red_when_deleted_and_grey_when_expired() -> None:
    figure = topomap.map_figure(LIVE, DEAD)
    positions = topomap.layout([], [*LIVE, *DEAD])
    deleted = _trace(figure, "deleted recently (dashed red)")
    expired = _trace(figure, "expired recently (dashed grey)")
    assert (deleted.line.dash, deleted.line.color) == ("dash", RED)
    assert (expired.line.dash, expired.line.color) == ("dash", GREY)
    assert _segments(deleted) == [(positions["c"], positions["d"])]
    assert _segments(expired) == [(positions["a"], positions["d"])]


def test_nodes_hover_with_id_role_and_degree() -> None:
    live = [*LINKS, ("x", "t0.0", 5.0)]
    figure = topomap.map_figure(live)
    transit = _trace(figure, "transit node")
    assert sorted(transit.hovertext) == ["t0.0 · transit · degree 3", "t0.1 · transit · degree 2"]
    assert transit.customdata.tolist() == [["node", "t0.0"], ["node", "t0.1"]]
    assert list(_trace(figure, "other node").hovertext) == ["x · other · degree 1"]
    assert len(_trace(figure, "stub node").x) == 6
    names = [t.name for t in figure.data]
    assert "live links, 2 ms (inside a stub)" in names
    assert "live links, 10 ms (transit–stub)" in names
    assert "live links, 50 ms (transit–transit)" in names
    assert "live links, 5 ms" in names  # x → t0.0: no kind


def test_hover_texts_and_labels_are_plain_and_escaped() -> None:
    live = [(HOSTILE[i], HOSTILE[i + 1], 1.5) for i in range(len(HOSTILE) - 1)]
    figure = topomap.map_figure(live, [("<b>x</b>", "$x$", "deleted", 2)])
    texts = [str(v) for t in figure.data for field in (t.hovertext, t.text) if field is not None
             for v in field]
    assert "&lt;b&gt;x&lt;/b&gt; → a→b, 1.5 ms" in _hover_lines(figure)
    assert "&lt;b&gt;x&lt;/b&gt; → &#36;x&#36;, deleted in batch 2" in _hover_lines(figure)
    assert "(empty id) · other · degree 2" in _trace(figure, "other node").hovertext
    assert "a\\nb · other · degree 1" in _trace(figure, "other node").hovertext
    for value in texts:
        assert "<b>" not in value and "$x$" not in value and "\n" not in value
        assert not re.search(r"\(\s*'|np\.|float\(|nan", value), value  # no Python reprs
    node_ids = [c[1] for c in _trace(figure, "other node").customdata.tolist()]
    assert sorted(node_ids) == sorted(HOSTILE)  # customdata keeps the raw ids (data, not text)


def test_overlays_are_drawn_on_top() -> None:
    figure = topomap.map_figure(
        LINKS, [("s0.1.0.0", "s0.1.0.2", "expired", 5)], focus="t0.1",
        matches=topomap.matching(NODES, "s0.0"), path=["s0.0.0.0", "t0.0", "t0.1"],
        lost=[("t0.0", "t0.1")], path_name="route <b>1</b>")
    names = [t.name for t in figure.data]
    node_trace = names.index("stub node")
    for overlay in ("route &lt;b&gt;1&lt;/b&gt;", "lost links (what if)",
                    "links of the focus node"):
        assert names.index(overlay) > names.index("live links, 50 ms (transit–transit)")
    for ring in ("search matches (3)", "focus node", "neighbours of the focus",
                 "route &lt;b&gt;1&lt;/b&gt;: nodes"):
        assert names.index(ring) > node_trace
    path = _trace(figure, "route &lt;b&gt;1&lt;/b&gt;")
    positions = topomap.layout([], LINKS)
    assert _segments(path) == [(positions["s0.0.0.0"], positions["t0.0"]),
                               (positions["t0.0"], positions["t0.1"])]
    assert path.line.width == 5 and _trace(figure, "lost links (what if)").line.width == 5
    assert len(_segments(_trace(figure, "links of the focus node"))) == 2  # t0.0, s0.1.0.2
    assert sorted(_trace(figure, "neighbours of the focus").text) == ["s0.1.0.2", "t0.0"]
    assert sorted(_trace(figure, "search matches (3)").text) == [
        "s0.0.0.0", "s0.0.0.1", "s0.0.0.2"]
    assert all(t.hoverinfo == "skip" for t in figure.data
               if t.name in ("focus node", "search matches (3)"))
    # the view zooms to the focus and its neighbours
    low, high = figure.layout.xaxis.range
    assert all(low < positions[n][0] < high for n in ("t0.0", "t0.1", "s0.1.0.2"))


def test_the_figure_has_equal_hidden_axes_and_a_legend() -> None:
    figure = topomap.map_figure(LIVE)
    assert figure.layout.yaxis.scaleanchor == "x" and figure.layout.yaxis.scaleratio == 1
    assert figure.layout.xaxis.visible is False and figure.layout.yaxis.visible is False
    assert figure.layout.showlegend is True and figure.layout.dragmode == "pan"
    assert all(t.type == "scatter" for t in figure.data)
    assert all(t.type == "scattergl" for t in topomap.map_figure(LIVE, webgl=True).data)
    json.loads(figure.to_json())


def test_an_empty_map_says_so() -> None:
    figure = topomap.map_figure([])
    assert not figure.data
    assert figure.layout.annotations[0].text == "No links to draw"


def test_nodes_without_a_position_are_left_out() -> None:
    figure = topomap.map_figure(LIVE, positions={"a": (0.0, 0.0), "b": (1.0, 0.0)})
    assert sorted(_trace(figure, "other node").customdata[:, 1]) == ["a", "b"]
    assert list(_trace(figure, "links").hovertext) == ["a → b, 10 ms<br>b → a, 10 ms"]


# -- a generated thousand-node network --------------------------------------------------------


@pytest.fixture(scope="module")
def thousand() -> object:
    topology = transit_stub(TransitStubParams(transit_domains=10), seed=11)
    assert len(topology.nodes) == 1000
    return topology


def test_a_thousand_node_network_gets_a_structured_layout(thousand) -> None:
    links = [(link.src, link.dst, link.cost) for link in thousand.links]
    positions = topomap.layout(thousand.node_ids, links)
    assert set(positions) == set(thousand.node_ids)
    assert len(set(positions.values())) == 1000
    transits = {n.id: positions[n.id] for n in thousand.nodes if n.kind == "transit"}
    radius = max(_distance(p, (0.0, 0.0)) for p in transits.values())
    for node in thousand.nodes:
        if node.kind != "stub":
            continue
        own = f"t{node.domain}.{node.transit}"
        here = positions[node.id]
        assert _distance(here, (0.0, 0.0)) > radius
        nearest = min(transits, key=lambda t: _distance(here, transits[t]))
        assert nearest == own, (node.id, nearest)


def test_a_thousand_node_network_gets_a_figure(thousand) -> None:
    links = [(link.src, link.dst, link.cost) for link in thousand.links]
    dead = [(a, b, "deleted", 7) for a, b, _ in links[:10]]
    figure = topomap.map_figure(links[10:], dead, nodes=thousand.node_ids, focus="t3.1",
                                matches=topomap.matching(thousand.node_ids, "s3.1.0."))
    assert all(t.type == "scattergl" for t in figure.data)  # many markers: WebGL
    drawn = [c[1] for role in ("transit node", "stub node")
             for c in _trace(figure, role).customdata.tolist()]
    assert sorted(drawn) == sorted(thousand.node_ids)
    assert len(_trace(figure, "links").x) == len(links) // 2  # one marker per pair
    assert len(_trace(figure, "search matches (8)").x) == 8
    classes = [t.name for t in figure.data if t.name.startswith("live links")]
    assert classes == ["live links, 2 ms (inside a stub)", "live links, 10 ms (transit–stub)",
                       "live links, 50 ms (transit–transit)"]
    assert len(figure.to_json()) > 0


# -- the small figure of a few links ----------------------------------------------------------


def test_subgraph_figure_labels_costs_and_highlights() -> None:
    figure = topomap.subgraph_figure([("a", "b", 1.0), ("b", "a", 4.0), ("b", "c", 2.0)],
                                     [("b", "c")])
    costs = _trace(figure, "costs")
    assert sorted(costs.text) == ["1 ms", "2 ms", "4 ms"]
    assert sorted(costs.hovertext) == ["a → b, 1 ms", "b → a, 4 ms", "b → c, 2 ms"]
    assert len(set(zip(costs.x, costs.y, strict=True))) == 3  # a→b and b→a labels apart
    colours = sorted(a.arrowcolor for a in figure.layout.annotations)
    assert colours == ["#8c8c8c", "#8c8c8c", "#d62728"]


def test_subgraph_figure_draws_the_links_where_they_sit_in_the_network() -> None:
    positions = topomap.layout(NODES, LINKS)
    figure = topomap.subgraph_figure([("t0.0", "t0.1", 50.0)], [("t0.0", "t0.1")], positions)
    transit = _trace(figure, "transit node")
    drawn = dict(zip(transit.text, zip(transit.x, transit.y, strict=True), strict=True))
    assert drawn == {"t0.0": positions["t0.0"], "t0.1": positions["t0.1"]}
    # a node missing from the positions: the few links get a layout of their own
    figure = topomap.subgraph_figure([("t0.0", "zz", 1.0)], [], positions)
    assert sorted(_trace(figure, "other node").text) == ["zz"]


# -- what a click shows ------------------------------------------------------------------------


def _edges() -> pd.DataFrame:
    return pd.DataFrame({"src": ["t0.0", "t0.1", "t0.0"], "dst": ["t0.1", "t0.0", "s0.0.0.0"],
                         "cost": [50.0, 50.0, 10.0], "instances": [2, 1, 1]})


def _dead() -> pd.DataFrame:
    return pd.DataFrame({"src": ["s0.0.0.0"], "dst": ["t0.0"], "cost": [10.0],
                         "death": ["expired"], "deleted_batch": [6], "instances": [1]})


def test_clicked_reads_the_customdata_of_a_selection() -> None:
    assert topomap.clicked({"points": [{"customdata": ["link", "a", "b"]}]}) == ("link", "a", "b")
    assert topomap.clicked({"points": [{"point_index": 1}]}) is None
    assert topomap.clicked({"points": [{"customdata": ["node"]}]}) is None
    assert topomap.clicked(None) is None and topomap.clicked({}) is None


def test_a_clicked_node_shows_its_role_links_and_deaths() -> None:
    details = topomap.selection_details({"points": [{"customdata": ["node", "t0.0"]}]},
                                        _edges(), _dead())
    assert details.kind == "node" and details.subject == ("t0.0",) and details.found
    assert dict(details.facts) == {"role": "transit node", "live links out": "2",
                                   "live links in": "1", "live neighbours": "2",
                                   "recently dead links": "1"}
    assert list(details.table.columns) == topomap.DETAIL_COLUMNS
    assert details.table[["from", "to", "state", "cost (ms)"]].values.tolist() == [
        ["t0.0", "s0.0.0.0", "live", 10.0], ["t0.0", "t0.1", "live", 50.0],
        ["t0.1", "t0.0", "live", 50.0], ["s0.0.0.0", "t0.0", "expired", 10.0]]
    assert details.table["died in batch"].tolist()[-1] == 6


def test_a_clicked_link_shows_both_directions() -> None:
    details = topomap.selection_details({"points": [{"customdata": ["link", "s0.0.0.0", "t0.0"]}]},
                                        _edges(), _dead())
    assert details.kind == "link" and details.found
    assert dict(details.facts) == {"kind": "transit–stub link", "cost": "10 ms",
                                   "live directions": "1 of 2", "live copies": "1",
                                   "recently died": "expired in batch 6 (one direction)"}
    assert details.table[["from", "to", "state", "live copies"]].values.tolist() == [
        ["t0.0", "s0.0.0.0", "live", 1], ["s0.0.0.0", "t0.0", "expired", 0]]
    both = topomap.link_details("t0.0", "t0.1", _edges(), _dead())
    assert dict(both.facts)["live copies"] == "3" and dict(both.facts)["live directions"] == (
        "2 of 2")


def test_a_click_on_something_gone_says_so() -> None:
    details = topomap.link_details("p", "q", _edges(), _dead())
    assert not details.found
    assert details.table["state"].tolist() == ["no link", "no link"]
    assert not topomap.node_details("gone", _edges(), _dead()).found


def test_details_facts_carry_no_lake_text() -> None:
    edges = pd.DataFrame({"src": ["<b>x</b>"], "dst": ["$x$"], "cost": [1.0], "instances": [1]})
    dead = pd.DataFrame({"src": ["$x$"], "dst": ["<b>x</b>"], "cost": [1.0],
                         "death": ["**odd**"], "deleted_batch": [2], "instances": [1]})
    for details in (topomap.node_details("<b>x</b>", edges, dead),
                    topomap.link_details("<b>x</b>", "$x$", edges, dead)):
        for _, value in details.facts:
            assert "<" not in value and "$" not in value and "*" not in value
    # a death recorded under another name counts as deleted
    assert "deleted" in topomap.link_details("<b>x</b>", "$x$", edges, dead).table["state"].values


# -- what is in view ---------------------------------------------------------------------------


def test_search_matches_substrings_case_insensitively() -> None:
    assert topomap.matching(NODES, "S0.1") == ["s0.1.0.0", "s0.1.0.1", "s0.1.0.2"]
    assert topomap.matching(HOSTILE, "<B>") == ["<b>x</b>"]
    assert topomap.matching(NODES, "  ") == []
    assert topomap.neighbourhood("t0.1", LINKS) == {"t0.1", "t0.0", "s0.1.0.2"}


def test_batch_window_caption_names_exactly_the_batches_searched() -> None:
    assert topomap.window_caption(1, [9]) == (
        "Links that died in the last batch are drawn: batch 9.")
    assert topomap.window_caption(5, [10, 8, 6, 5, 4]) == (
        "Links that died in the last 5 batches are drawn: batches 4–6, 8 and 10.")
    assert topomap.window_caption(5, [9, 8, 6, 5, 4]).endswith("batches 4–6 and 8–9.")
    assert "no ingest batch is recorded yet" in topomap.window_caption(3, [])


# -- overlays shared with other pages ----------------------------------------------------------


@pytest.fixture
def no_overlay() -> object:
    topomap.clear_overlay()
    yield
    topomap.clear_overlay()


def test_shared_overlays_round_trip(no_overlay) -> None:
    import streamlit as st

    assert topomap.shared_overlay() is None
    topomap.share_path("Why", ["a", "b", "c"])
    assert st.session_state["map_overlay"] == {"kind": "path", "label": "Why",
                                               "nodes": ["a", "b", "c"]}
    assert topomap.shared_overlay() == {"kind": "path", "label": "Why", "nodes": ["a", "b", "c"]}
    topomap.share_losses("What if", [("a", "b")])
    assert topomap.shared_overlay() == {"kind": "losses", "label": "What if",
                                        "links": [("a", "b")]}
    topomap.clear_overlay()
    assert topomap.shared_overlay() is None


def test_a_malformed_overlay_is_ignored(no_overlay) -> None:
    import streamlit as st

    for bad in ("path", {"kind": "path"}, {"kind": "circle", "nodes": []},
                {"kind": "losses", "links": "a→b"}):
        st.session_state["map_overlay"] = bad
        assert topomap.shared_overlay() is None
    st.session_state["map_overlay"] = {"kind": "losses", "label": 3, "links": [["a", "b"], "x"]}
    assert topomap.shared_overlay() == {"kind": "losses", "label": "3", "links": [("a", "b")]}


def test_overlays_off_the_map_draw_nothing() -> None:
    figure = topomap.map_figure(LIVE, path=["zz", "yy"], lost=[("zz", "a")], focus="zz",
                                matches=["zz"])
    names = {t.name for t in figure.data}
    assert names == {"live links, 2 ms", "live links, 10 ms", "links", "other node"}


# -- a route as a path, its labels apart ------------------------------------------------------


def _box(centre: tuple[float, float], size: tuple[float, float]) -> tuple[float, ...]:
    return (centre[0] - size[0] / 2, centre[1] - size[1] / 2,
            centre[0] + size[0] / 2, centre[1] + size[1] / 2)


def _apart(a: tuple[float, ...], b: tuple[float, ...], slack: float = 1e-9) -> bool:
    """Whether two boxes do not overlap (touching is apart)."""
    return (a[2] <= b[0] + slack or b[2] <= a[0] + slack or a[3] <= b[1] + slack
            or b[3] <= a[1] + slack)


def test_declutter_puts_labels_of_one_spot_around_it_exactly() -> None:
    centres = topomap.declutter([(0.0, 0.0)] * 5, [(2.0, 1.0)] * 5)
    # above, below; beside or diagonal would overlap those two, so one ring out: above,
    # below, then to the right (touching the first two, not overlapping)
    assert centres == [(0.0, 0.5), (0.0, -0.5), (0.0, 1.5), (0.0, -1.5), (2.0, 0.0)]


def test_declutter_keeps_a_label_off_another_node() -> None:
    # above (0, 0) would cover the node at (0, 1): the label goes below
    centres = topomap.declutter([(0.0, 0.0), (0.0, 1.0)], [(2.0, 1.0), (2.0, 1.0)],
                                clearance=0.25)
    assert centres == [(0.0, -0.75), (0.0, 1.75)]


def test_declutter_leaves_a_free_label_above_its_node() -> None:
    assert topomap.declutter([(0.0, 0.0), (10.0, 0.0)], [(2.0, 1.0), (4.0, 1.0)],
                             clearance=0.5) == [(0.0, 1.0), (10.0, 1.0)]


_spot = hst.tuples(hst.integers(-6, 6).map(float), hst.integers(-6, 6).map(float))
_size = hst.tuples(hst.integers(1, 6).map(float), hst.integers(1, 2).map(float))


def _through(box: tuple[float, ...], segment) -> bool:
    """Whether a segment runs through the inside of a box (sampled at 400 points)."""
    (x0, y0), (x1, y1) = segment
    for i in range(401):
        x, y = x0 + (x1 - x0) * i / 400, y0 + (y1 - y0) * i / 400
        if box[0] + 1e-6 < x < box[2] - 1e-6 and box[1] + 1e-6 < y < box[3] - 1e-6:
            return True
    return False


@given(hst.lists(hst.tuples(_spot, _size), min_size=1, max_size=25),
       hst.lists(hst.tuples(_spot, _spot), max_size=6),
       hst.sampled_from([0.0, 0.5]), hst.integers(0, 3))
@hsettings(max_examples=150, deadline=None)
def test_decluttered_labels_never_overlap_each_other_a_node_or_a_line(labels, segments,
                                                                      clearance, rings) -> None:
    anchors = [a for a, _ in labels]
    sizes = [s for _, s in labels]
    centres = topomap.declutter(anchors, sizes, clearance=clearance, rings=rings,
                                segments=segments)
    boxes = [_box(c, s) for c, s in zip(centres, sizes, strict=True)]
    marks = [(x - clearance, y - clearance, x + clearance, y + clearance) for x, y in anchors]
    for i, box in enumerate(boxes):
        assert all(_apart(box, other) for other in boxes[i + 1:])
        assert all(_apart(box, mark) for mark in marks)
        assert not any(_through(box, segment) for segment in segments)


def _far_route(thousand) -> list[str]:
    """A cheapest route between two stub nodes of different transit domains."""
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_weighted_edges_from((link.src, link.dst, link.cost) for link in thousand.links)
    return nx.shortest_path(graph, "s0.0.0.0", "s5.0.0.3", weight="weight")


def test_a_far_route_is_labelled_at_its_routers_only_and_labels_do_not_overlap(thousand) -> None:
    links = [(link.src, link.dst, link.cost) for link in thousand.links]
    positions = topomap.layout(thousand.node_ids, links)
    route = _far_route(thousand)
    assert len(route) >= 6  # across the network: stub, transit …, stub
    hops = list(zip(route, route[1:], strict=False))
    costs = {(a, b): c for a, b, c in links}
    labels = topomap.route_labels(hops, costs, positions, route)
    assert [lb.text for lb in labels if lb.kind == "router"] == route
    assert [lb.text for lb in labels if lb.kind == "cost"] == [
        topomap.cost_text(costs[hop]) for hop in hops]
    boxes = [_box(lb.centre, lb.size) for lb in labels]
    lines = [(positions[a], positions[b]) for a, b in hops]
    for i, box in enumerate(boxes):
        assert all(_apart(box, other) for other in boxes[i + 1:]), labels[i]
        assert not any(_through(box, line) for line in lines), labels[i]
    # the figure: the route red, only its routers named, each hop's cost written
    figure = topomap.route_figure(hops, costs, positions)
    assert list(_trace(figure, "routers").text) == route
    assert len(_trace(figure, "costs").text) == len(hops)
    assert len(figure.layout.annotations) == len(hops)
    assert {a.arrowcolor for a in figure.layout.annotations} == {RED}


def test_a_route_figure_draws_other_links_grey_and_dead_hops_apart() -> None:
    spots = {"a": (0.0, 0.0), "b": (1.0, 0.0), "c": (2.0, 0.0), "x": (1.0, 1.0)}
    figure = topomap.route_figure([("a", "b"), ("b", "c")], {("a", "b"): 1.0}, spots,
                                  others=[("a", "x"), ("a", "b")],
                                  dead={("b", "c"): "deleted in batch 4"})
    assert _segments(_trace(figure, "other links")) == [((0.0, 0.0), (1.0, 1.0))]
    assert list(_trace(figure, "other nodes").hovertext) == ["x"]
    assert list(_trace(figure, "costs").text) == ["1 ms", "no cost"]
    assert _trace(figure, "costs").hovertext[1] == "b → c, no cost, deleted in batch 4"
    assert [a.arrowcolor for a in figure.layout.annotations] == [RED, "#ff7f0e"]


def test_route_figure_writes_hostile_ids_as_plain_text() -> None:
    route = list(zip(HOSTILE, HOSTILE[1:], strict=False))
    figure = topomap.route_figure(route, {})
    assert list(_trace(figure, "routers").text) == [topomap._node_text(n) for n in HOSTILE]
    assert "<b>" not in json.dumps(figure.to_plotly_json()["data"])
