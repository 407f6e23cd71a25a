"""AppTest of the Why page: the default question, headings in words, witnesses with costs, why
not for a pair the view does not hold, more witnesses on request, and the map overlay.

The lake (delta-rs, no Spark): live links a→b (1), b→c (2), a→c (5) and a→m00…a→m24, m00→z …
m24→z (1 each); c→d (1.5) was deleted in batch 2, so d is a node only through a dead link.
``reachable`` holds (a, b), (b, c), (a, c) and (a, z); (a, z) has 25 witnesses, more than the
page shows at first. ``cheapest_path`` holds a → b, b → c and a → b → c.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest
from dashboard_apptest import commit_views, open_page
from streamlit.testing.v1 import AppTest

from aspen.lake.deltars import write_table
from aspen.pipeline.view_tables import view_frame
from aspen.provenance.bdd import ProvenanceManager
from aspen.settings import Settings

WHY = "pages/why.py"
WIDE = 25
#: var, src, dst, cost, deleted batch
LINKS = [("v1", "a", "b", 1.0, None), ("v2", "b", "c", 2.0, None), ("v3", "a", "c", 5.0, None),
         ("v4", "c", "d", 1.5, 2)]
LINKS += [(f"x{i}", "a", f"m{i:02d}", 1.0, None) for i in range(WIDE)]
LINKS += [(f"y{i}", f"m{i:02d}", "z", 1.0, None) for i in range(WIDE)]


@pytest.fixture
def why_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    lake = tmp_path / "lake"
    settings = Settings(lake=str(lake))
    write_table(settings, "variables", pd.DataFrame({
        "var": [r[0] for r in LINKS],
        "relation": ["link"] * len(LINKS),
        "key": [json.dumps([r[1], r[2]]) for r in LINKS],
        "values": [json.dumps([r[1], r[2], r[3]]) for r in LINKS],
        "inserted_batch": [1] * len(LINKS),
        "deleted_batch": pd.array([r[4] for r in LINKS], dtype="Int64"),
        "expires_at": pd.Series([None] * len(LINKS), dtype="datetime64[us, UTC]"),
        "death": pd.array(["deleted" if r[4] else None for r in LINKS], dtype="string"),
    }))
    live = [r for r in LINKS if r[4] is None]
    write_table(settings, "link", pd.DataFrame({
        "src": [r[1] for r in live], "dst": [r[2] for r in live], "cost": [r[3] for r in live],
        "var": [r[0] for r in live], "batch_id": [1] * len(live),
    }))
    write_table(settings, "ingest_files", pd.DataFrame({"source": ["f1", "f2"],
                                                        "batch_id": [1, 2]}))
    manager = ProvenanceManager()
    v1, v2, v3 = (manager.var(v) for v in ("v1", "v2", "v3"))
    wide = manager.disj(manager.and_(manager.var(f"x{i}"), manager.var(f"y{i}"))
                        for i in range(WIDE))
    formulas = {("a", "b"): v1, ("b", "c"): v2, ("a", "c"): manager.or_(v3, manager.and_(v1, v2)),
                ("a", "z"): wide}
    write_table(settings, "reachable", view_frame("reachable", formulas, manager, batch_id=2))
    paths = {("a", "b", ("a", "b"), 1.0): v1, ("b", "c", ("b", "c"), 2.0): v2,
             ("a", "c", ("a", "b", "c"), 3.0): manager.and_(v1, v2)}
    write_table(settings, "cheapest_path", view_frame("cheapest_path", paths, manager, batch_id=2))
    commit_views(settings.lake)
    monkeypatch.setenv("ASPEN_LAKE", str(lake))
    return lake


@pytest.fixture
def no_topomap(monkeypatch: pytest.MonkeyPatch) -> None:
    """The page as it is without ``dashboards/topomap.py``: ``import topomap`` fails."""
    monkeypatch.setitem(sys.modules, "topomap", None)


def _ask(app: AppTest, src: str, dst: str) -> AppTest:
    app.selectbox(key="why_from").select(src).run()
    app.selectbox(key="why_to").select(dst).run()
    assert not app.exception, app.exception
    return app


def _markdown(app: AppTest) -> str:
    return "\n".join(m.value for m in app.markdown)


def _witnesses(app: AppTest) -> pd.DataFrame:
    (frame,) = [d.value for d in app.dataframe if list(d.value.columns)[:1] == ["witness"]]
    return frame


def test_the_default_question_is_a_pair_of_two_nodes_in_words(why_lake: Path) -> None:
    app = open_page(WHY)
    assert app.selectbox(key="why_view").options == ["Reachable pair", "Cheapest path"]
    assert app.selectbox(key="why_from").value == "a"
    assert app.selectbox(key="why_to").value == "b"  # (a, b): the first pair, not (a, a)
    assert app.selectbox(key="why_from").options == ["a", "b", "c", "d", *(
        f"m{i:02d}" for i in range(WIDE)), "z"]
    assert [h.value for h in app.subheader] == ["Why can `a` reach `b`?"]
    assert any("view `reachable`" in c.value for c in app.caption)
    assert "(" not in app.subheader[0].value  # never a Python tuple


def test_witnesses_are_routes_with_costs_and_critical_links_in_words(why_lake: Path) -> None:
    app = _ask(open_page(WHY), "a", "c")
    assert [h.value for h in app.subheader] == ["Why can `a` reach `c`?"]
    frame = _witnesses(app)
    assert frame.to_dict("records") == [
        {"witness": 1, "route": "a → c", "links": "a → c (5 ms)", "size": 1},
        {"witness": 2, "route": "a → b → c", "links": "a → b (1 ms), b → c (2 ms)", "size": 2},
    ]
    assert "No single lost link removes the pair" in _markdown(app)
    _ask(app, "a", "b")
    assert "**Losing any of these links removes the pair:** `a` → `b` (1 ms)" in _markdown(app)


def _figure_traces(app: AppTest) -> dict[str, dict]:
    (chart,) = app.get("plotly_chart")
    return {t["name"]: t for t in json.loads(chart.proto.spec)["data"] if t.get("name")}


def test_the_witness_is_drawn_on_the_network_map_with_costs(why_lake: Path) -> None:
    app = _ask(open_page(WHY), "a", "c")
    traces = _figure_traces(app)
    # witness 1 (a → c) red with its cost, its routers named; the other witness's links grey
    assert traces["costs"]["text"] == ["5 ms"]
    assert traces["routers"]["text"] == ["a", "c"]
    assert "other links" in traces
    app.selectbox(key="why_witness_0").select(2).run()
    traces = _figure_traces(app)
    assert traces["costs"]["text"] == ["1 ms", "2 ms"]
    assert traces["routers"]["text"] == ["a", "b", "c"]


def test_without_topomap_the_witness_is_a_graph_with_costs(why_lake: Path, no_topomap) -> None:
    app = _ask(open_page(WHY), "a", "c")
    (chart,) = app.get("graphviz_chart")
    dot = chart.proto.spec
    assert '"a" -> "c" [color=red, penwidth=2.5, label="5 ms"]' in dot  # witness 1
    assert '"a" -> "b" [color=gray40, label="1 ms"]' in dot
    app.selectbox(key="why_witness_0").select(2).run()
    dot = app.get("graphviz_chart")[0].proto.spec
    assert '"a" -> "b" [color=red, penwidth=2.5, label="1 ms"]' in dot


def test_show_on_the_network_map_shares_the_route(why_lake: Path) -> None:
    app = _ask(open_page(WHY), "a", "c")
    app.selectbox(key="why_witness_0").select(2).run()
    app.button(key="why_share_0").click().run()
    assert app.session_state["map_overlay"] == {
        "kind": "path", "label": "Why a → c: witness 2", "nodes": ["a", "b", "c"]}


def test_show_on_the_network_map_without_topomap(why_lake: Path, no_topomap) -> None:
    app = _ask(open_page(WHY), "a", "b")
    app.button(key="why_share_0").click().run()
    assert app.session_state["map_overlay"]["nodes"] == ["a", "b"]


def test_why_not_names_the_dead_link_that_would_connect_the_pair(why_lake: Path) -> None:
    app = _ask(open_page(WHY), "a", "d")
    assert [h.value for h in app.subheader] == ["Why can't `a` reach `d`?"]
    text = _markdown(app)
    assert "`a` cannot reach `d` over live links." in text
    assert ("The route needing the fewest recently dead links is `a` → `b` → `c` → `d` (4.5 ms); "
            "it needs 1 dead link:") in text
    assert "- `c` → `d` (1.5 ms), deleted in batch 2" in text
    (route,) = [d.value for d in app.dataframe if "step" in d.value.columns]
    assert route["state"].tolist() == ["live", "live", "deleted in batch 2"]
    assert route["link"].tolist() == ["a → b", "b → c", "c → d"]
    assert route["cumulative cost (ms)"].tolist() == [1.0, 3.0, 4.5]
    traces = _figure_traces(app)
    assert traces["routers"]["text"] == ["a", "b", "c", "d"]
    assert traces["costs"]["hovertext"][2] == "c → d, 1.5 ms, deleted in batch 2"
    assert not app.warning and not app.error


def test_why_not_counts_only_recent_deaths(why_lake: Path, no_topomap) -> None:
    app = _ask(open_page(WHY), "a", "d")
    app.number_input(key="why_recent").set_value(0).run()
    assert "`d` is not a node of the network" in _markdown(app)
    app.number_input(key="why_recent").set_value(1).run()  # batch 2 only
    dot = app.get("graphviz_chart")[0].proto.spec
    assert '"c" -> "d" [style=dashed, color=red' in dot and 'label="1.5 ms, deleted b2"' in dot


def test_why_not_a_cut_pair_suggests_the_missing_links(why_lake: Path) -> None:
    app = _ask(open_page(WHY), "d", "a")
    text = _markdown(app)
    assert "`d` cannot reach `a`, not even through recently dead links." in text
    assert "Any one of these missing links would connect them: `d` → `a`." in text
    (missing,) = [d.value for d in app.dataframe if "missing link" in d.value.columns]
    assert missing["missing link"].tolist() == ["d → a"]


def test_why_not_a_node_with_itself_needs_a_cycle(why_lake: Path) -> None:
    app = _ask(open_page(WHY), "a", "a")
    assert [h.value for h in app.subheader] == ["Why can't `a` reach itself?"]
    text = _markdown(app)
    assert "A node reaches itself only around a cycle of at least one link." in text
    assert "would connect them: `b` → `a`," in text


def test_more_witnesses_on_request_keep_the_answer(why_lake: Path) -> None:
    app = _ask(open_page(WHY), "a", "z")
    assert len(_witnesses(app)) == 20
    assert "(more exist: the first ones are shown)" in _markdown(app)
    app.button(key="why_more").click().run()
    assert not app.exception, app.exception
    assert len(_witnesses(app)) == WIDE
    assert [h.value for h in app.subheader] == ["Why can `a` reach `z`?"]
    assert "more exist" not in _markdown(app)
    assert not [b for b in app.button if b.key == "why_more"]
    _ask(app, "a", "c")  # a new question starts from the first limit again
    _ask(app, "a", "z")
    assert len(_witnesses(app)) == 20


def test_the_answer_is_remembered_between_reruns(why_lake: Path) -> None:
    app = _ask(open_page(WHY), "a", "c")
    key, _ = app.session_state["why_answer"]
    assert key[-2:] == (("a", "c"), 20)
    app.selectbox(key="why_witness_0").select(2).run()  # another witness: nothing recomputed
    assert app.session_state["why_answer"][0] == key


def test_the_question_stays_after_a_visit_to_another_page(why_lake: Path) -> None:
    app = _ask(open_page(WHY), "a", "d")
    app.switch_page("pages/overview.py").run()
    app.switch_page(WHY).run()
    assert not app.exception, app.exception
    assert (app.selectbox(key="why_from").value, app.selectbox(key="why_to").value) == ("a", "d")
    assert [h.value for h in app.subheader] == ["Why can't `a` reach `d`?"]


def test_a_cheapest_path_in_words_and_why_there_is_none(why_lake: Path) -> None:
    app = open_page(WHY)
    app.selectbox(key="why_view").select("cheapest_path").run()
    _ask(app, "a", "c")
    assert [h.value for h in app.subheader] == [
        "Why is `a` → `b` → `c` the cheapest path from `a` to `c` (3 ms)?"]
    assert any("view `cheapest_path`" in c.value for c in app.caption)
    assert ("**Losing any of these links removes this path:** `a` → `b` (1 ms), `b` → `c` (2 ms)"
            in _markdown(app))
    _ask(app, "c", "a")
    assert [h.value for h in app.subheader] == ["Why is there no path from `c` to `a`?"]
    assert "`c` cannot reach `a`, not even through recently dead links." in _markdown(app)


# -- a far pair: a route across the network, hop by hop ------------------------------------------

#: A stub of t0.0 to a stub of t0.2 through three transit nodes: the long way inside the first
#: stub (two links of 2 ms) or its shortcut (5 ms); var, src, dst, cost.
FAR = [("f1", "s0.0.0.0", "s0.0.0.1", 2.0), ("f2", "s0.0.0.1", "s0.0.0.2", 2.0),
       ("f3", "s0.0.0.0", "s0.0.0.2", 5.0), ("f4", "s0.0.0.2", "t0.0", 10.0),
       ("f5", "t0.0", "t0.1", 50.0), ("f6", "t0.1", "t0.2", 50.0),
       ("f7", "t0.2", "s0.2.0.1", 10.0), ("f8", "s0.2.0.1", "s0.2.0.0", 2.0)]
FAR_SRC, FAR_DST = "s0.0.0.0", "s0.2.0.0"


@pytest.fixture
def far_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    lake = tmp_path / "far"
    settings = Settings(lake=str(lake))
    write_table(settings, "variables", pd.DataFrame({
        "var": [r[0] for r in FAR], "relation": ["link"] * len(FAR),
        "key": [json.dumps([r[1], r[2]]) for r in FAR],
        "values": [json.dumps([r[1], r[2], r[3]]) for r in FAR],
        "inserted_batch": [1] * len(FAR),
        "deleted_batch": pd.array([None] * len(FAR), dtype="Int64"),
        "expires_at": pd.Series([None] * len(FAR), dtype="datetime64[us, UTC]"),
        "death": pd.array([None] * len(FAR), dtype="string"),
    }))
    write_table(settings, "link", pd.DataFrame({
        "src": [r[1] for r in FAR], "dst": [r[2] for r in FAR], "cost": [r[3] for r in FAR],
        "var": [r[0] for r in FAR], "batch_id": [1] * len(FAR),
    }))
    write_table(settings, "ingest_files", pd.DataFrame({"source": ["f1"], "batch_id": [1]}))
    manager = ProvenanceManager()
    v = {r[0]: manager.var(r[0]) for r in FAR}
    start = manager.or_(manager.and_(v["f1"], v["f2"]), v["f3"])
    rest = manager.conj(v[f"f{i}"] for i in range(4, 9))
    write_table(settings, "reachable", view_frame(
        "reachable", {(FAR_SRC, FAR_DST): manager.and_(start, rest)}, manager, batch_id=1))
    commit_views(settings.lake)
    monkeypatch.setenv("ASPEN_LAKE", str(lake))
    return lake


def _hops(app: AppTest) -> pd.DataFrame:
    (frame,) = [d.value for d in app.dataframe if "cumulative cost (ms)" in d.value.columns]
    return frame


def test_a_far_pair_reads_hop_by_hop_with_costs(far_lake: Path) -> None:
    app = _ask(open_page(WHY), FAR_SRC, FAR_DST)
    assert [h.value for h in app.subheader] == [f"Why can `{FAR_SRC}` reach `{FAR_DST}`?"]
    assert _witnesses(app)["size"].tolist() == [6, 7]  # the shortcut first
    hops = _hops(app)
    assert hops.to_dict("list") == {
        "step": [1, 2, 3, 4, 5, 6],
        "link": ["s0.0.0.0 → s0.0.0.2", "s0.0.0.2 → t0.0", "t0.0 → t0.1", "t0.1 → t0.2",
                 "t0.2 → s0.2.0.1", "s0.2.0.1 → s0.2.0.0"],
        "cost (ms)": [5.0, 10.0, 50.0, 50.0, 10.0, 2.0],
        "cumulative cost (ms)": [5.0, 15.0, 65.0, 115.0, 125.0, 127.0],
    }
    app.selectbox(key="why_witness_0").select(2).run()
    hops = _hops(app)
    assert hops["step"].tolist() == list(range(1, 8))
    assert hops["link"].tolist()[:2] == ["s0.0.0.0 → s0.0.0.1", "s0.0.0.1 → s0.0.0.2"]
    assert hops["cumulative cost (ms)"].tolist()[-1] == 126.0


def test_a_far_pair_is_a_path_on_the_map_naming_only_its_routers(far_lake: Path) -> None:
    app = _ask(open_page(WHY), FAR_SRC, FAR_DST)
    app.selectbox(key="why_witness_0").select(2).run()
    traces = _figure_traces(app)
    route = ["s0.0.0.0", "s0.0.0.1", "s0.0.0.2", "t0.0", "t0.1", "t0.2", "s0.2.0.1", "s0.2.0.0"]
    assert traces["routers"]["text"] == route
    assert traces["costs"]["text"] == ["2 ms", "2 ms", "10 ms", "50 ms", "50 ms", "10 ms", "2 ms"]
    # the shortcut of the other witness is drawn grey, unnamed
    assert "other links" in traces and "other nodes" not in traces
    # every label sits at its own place
    spots = list(zip(traces["routers"]["x"] + traces["costs"]["x"],
                     traces["routers"]["y"] + traces["costs"]["y"], strict=True))
    assert len(set(spots)) == len(spots)
    app.button(key="why_share_0").click().run()
    assert app.session_state["map_overlay"]["nodes"] == route
