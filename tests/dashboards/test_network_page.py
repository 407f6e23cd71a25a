"""AppTest of the Network page: the map on a small literal lake (written with delta-rs, no
Spark), the search and focus narrowing the counts, the recently dead window, the overlay
another page shares, the details of a clicked node or link, and plain messages.

Topology (transit-stub ids, plus ``gw``): live links, both ways, t0.0–t0.1 (50 ms),
t0.0–s0.0.0.0 and t0.1–s0.1.0.0 (10 ms), s0.0.0.0–s0.0.0.1 and s0.1.0.0–s0.1.0.1 (2 ms), and
gw→t0.0 (5 ms, one way): 11 links. Deaths: s0.0.0.1→s0.0.0.2 deleted in batch 1,
s0.1.0.1→s0.1.0.2 deleted in batch 2 (one dashed red line with its other direction),
s0.1.0.2→s0.1.0.1 and gw→t0.1 expired in batch 3. Ingest batches 1–3.
AppTest cannot click a plotly point: a click is put in the page's state as the chart would.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import pandas as pd
import pytest
from dashboard_apptest import open_page
from streamlit.testing.v1 import AppTest

from aspen.lake.deltars import write_table
from aspen.settings import Settings

DASHBOARDS = Path(__file__).resolve().parents[2] / "dashboards"
sys.path.insert(0, str(DASHBOARDS))
import topomap  # noqa: E402

PAGE = "pages/network.py"
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
BOTH_WAYS = [("t0.0", "t0.1", 50.0), ("t0.0", "s0.0.0.0", 10.0), ("t0.1", "s0.1.0.0", 10.0),
             ("s0.0.0.0", "s0.0.0.1", 2.0), ("s0.1.0.0", "s0.1.0.1", 2.0)]
LIVE = [link for a, b, c in BOTH_WAYS for link in ((a, b, c), (b, a, c))] + [("gw", "t0.0", 5.0)]
#: src, dst, cost, batch it died in, death
DEAD = [("s0.0.0.1", "s0.0.0.2", 2.0, 1, "deleted"), ("s0.1.0.1", "s0.1.0.2", 2.0, 2, "deleted"),
        ("s0.1.0.2", "s0.1.0.1", 2.0, 3, "expired"), ("gw", "t0.1", 5.0, 3, "expired")]


def _registry() -> pd.DataFrame:
    rows = [(f"v{i}", [a, b, c], None, None) for i, (a, b, c) in enumerate(LIVE)]
    rows += [(f"d{i}", [a, b, c], batch, death) for i, (a, b, c, batch, death) in enumerate(DEAD)]
    return pd.DataFrame({
        "var": [r[0] for r in rows],
        "relation": ["link"] * len(rows),
        "key": [json.dumps(r[1][:2]) for r in rows],
        "values": [json.dumps(r[1]) for r in rows],
        "inserted_batch": [1] * len(rows),
        "deleted_batch": pd.array([r[2] for r in rows], dtype="Int64"),
        "expires_at": pd.Series([None] * len(rows), dtype="datetime64[us, UTC]"),
        "death": pd.array([r[3] for r in rows], dtype="string"),
    })


def _links(rows: list[tuple[str, str, float]]) -> pd.DataFrame:
    return pd.DataFrame({
        "src": pd.Series([r[0] for r in rows], dtype=str),
        "dst": pd.Series([r[1] for r in rows], dtype=str),
        "cost": pd.Series([r[2] for r in rows], dtype=float),
        "var": pd.Series([f"v{i}" for i in range(len(rows))], dtype=str),
        "inserted_at": NOW,
        "expires_at": pd.Series([None] * len(rows), dtype="datetime64[us, UTC]"),
        "batch_id": 1,
        "seq": range(len(rows)),
    })


@pytest.fixture
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "lake"
    settings = Settings(lake=str(root))
    write_table(settings, "link", _links(LIVE))
    write_table(settings, "variables", _registry())
    write_table(settings, "ingest_files", pd.DataFrame({"source": ["f1", "f2", "expire@"],
                                                        "batch_id": [1, 2, 3]}))
    monkeypatch.setenv("ASPEN_LAKE", str(root))
    return root


def _metrics(app: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in app.metric}


def _spec(app: AppTest) -> dict:
    (chart,) = app.get("plotly_chart")
    return json.loads(chart.proto.spec)


def _names(app: AppTest) -> list[str]:
    return [t.get("name") for t in _spec(app)["data"]]


def _hover_lines(app: AppTest) -> set[str]:
    (links,) = [t for t in _spec(app)["data"] if t.get("name") == "links"]
    return {line for text in links["hovertext"] for line in text.split("<br>")}


def _captions(app: AppTest) -> str:
    return "\n".join(c.value for c in app.caption)


#: First columns of the live and the recently dead links tables under the map.
LIVE_TABLE, DEAD_TABLE = ["from", "to", "cost (ms)", "live copies"], ["from", "to", "cost (ms)",
                                                                    "how it died"]


def _table(app: AppTest, title: str) -> pd.DataFrame:
    """The live or dead links table under the map, after checking its heading ``title``."""
    assert title in [s.value for s in app.subheader]
    columns = LIVE_TABLE if title.startswith("Live") else DEAD_TABLE
    return next(e.value for e in app.dataframe if list(e.value.columns)[:4] == columns)


# -- the map and the counts --------------------------------------------------------------------


def test_the_map_shows_every_node_live_and_dead_link(lake: Path) -> None:
    app = open_page(PAGE)
    assert _metrics(app) == {"Nodes in all": "9", "Live links in all": "11",
                             "Recently dead links in all": "4"}
    names = _names(app)
    for name in ("transit node", "stub node", "other node", "live links, 2 ms (inside a stub)",
                 "live links, 10 ms (transit–stub)", "live links, 50 ms (transit–transit)",
                 "live links, 5 ms", "deleted recently (dashed red)",
                 "expired recently (dashed grey)"):
        assert name in names
    assert {"t0.0 → t0.1, 50 ms", "gw → t0.0, 5 ms", "s0.0.0.1 → s0.0.0.2, deleted in batch 1",
            "s0.1.0.2 → s0.1.0.1, expired in batch 3", "gw → t0.1, expired in batch 3"
            } <= _hover_lines(app)
    assert "Links that died in the last 3 batches are drawn: batches 1–3." in _captions(app)
    assert "9 nodes, 11 live links and 4 recently dead links in all" in _captions(app)
    live = _table(app, "Live links in all")
    assert list(live.columns) == ["from", "to", "cost (ms)", "live copies", "kind"]
    assert len(live) == 11
    assert live.set_index(["from", "to"]).loc[("t0.0", "s0.0.0.0"), "kind"] == "transit–stub"
    dead = _table(app, "Recently dead links in all")
    assert list(dead.columns) == ["from", "to", "cost (ms)", "how it died", "in batch",
                                  "dead copies"]
    assert len(dead) == 4


def test_search_narrows_the_counts_and_the_focus_choice(lake: Path) -> None:
    app = open_page(PAGE)
    app.text_input(key="network_search").input("S0.1").run()
    assert not app.exception, app.exception
    assert _metrics(app) == {"Nodes in view": "3", "Live links in view": "4",
                             "Recently dead links in view": "2"}
    assert app.selectbox(key="network_focus").options == [
        "(all nodes)", "s0.1.0.0", "s0.1.0.1", "s0.1.0.2"]
    assert "search matches (3)" in _names(app)
    assert "In view: the 3 node(s) matching `S0.1` and their links." in _captions(app)
    assert len(_table(app, "Live links in view")) == 4

    app.text_input(key="network_search").input("zz").run()
    assert _metrics(app)["Nodes in view"] == "0"
    assert "No node id contains `zz`." in _captions(app)


def test_the_focus_zooms_to_a_node_and_counts_its_links(lake: Path) -> None:
    app = open_page(PAGE)
    app.selectbox(key="network_focus").select("t0.1").run()
    assert not app.exception, app.exception
    assert _metrics(app) == {"Nodes in view": "4", "Live links in view": "4",
                             "Recently dead links in view": "1"}
    spec = _spec(app)
    assert {"focus node", "links of the focus node", "neighbours of the focus"} <= {
        t.get("name") for t in spec["data"]}
    assert "range" in spec["layout"]["xaxis"]
    assert "node `t0.1`, its links and its 3 neighbour(s)" in _captions(app)
    assert set(_table(app, "Live links in view")["from"]) == {"t0.0", "t0.1", "s0.1.0.0"}


def test_the_search_then_the_focus(lake: Path) -> None:
    app = open_page(PAGE)
    app.text_input(key="network_search").input("s0.1.0.2").run()
    app.selectbox(key="network_focus").select("s0.1.0.2").run()
    assert not app.exception, app.exception
    # a node with only dead links: nothing live in view, its two deaths are
    assert _metrics(app) == {"Nodes in view": "2", "Live links in view": "0",
                             "Recently dead links in view": "2"}


@pytest.mark.parametrize(
    ("count", "caption", "deaths"),
    [
        (0, "Recently dead links are hidden.", 0),
        (1, "Links that died in the last batch are drawn: batch 3.", 2),
        (2, "Links that died in the last 2 batches are drawn: batches 2–3.", 3),
        (5, "Links that died in the last 5 batches are drawn: the lake has only 3 so far, "
            "batches 1–3.", 4),
    ],
)
def test_the_recent_window_says_which_batches_it_covers(
    lake: Path, count: int, caption: str, deaths: int
) -> None:
    app = open_page(PAGE)
    recent = app.selectbox(key="network_recent")
    assert recent.value == 3
    recent.set_value(count).run()
    assert not app.exception, app.exception
    assert caption in _captions(app)
    assert _metrics(app)["Recently dead links in all"] == str(deaths)
    dead_traces = {"deleted recently (dashed red)", "expired recently (dashed grey)"}
    assert bool(dead_traces & set(_names(app))) == (deaths > 0)


# -- messages ----------------------------------------------------------------------------------


def test_an_empty_link_table_says_so(lake: Path) -> None:
    settings = Settings(lake=str(lake))
    write_table(settings, "link", _links([]), mode="overwrite")
    app = open_page(PAGE)
    app.selectbox(key="network_recent").set_value(0).run()
    assert [i.value for i in app.info] == ["The `link` table (version 1) has no live links."]
    assert not app.get("plotly_chart") and not app.warning and not app.error


def test_no_link_table_yet(lake: Path) -> None:
    import shutil

    shutil.rmtree(lake / "link")
    app = open_page(PAGE)
    assert len(app.info) == 1 and "No `link` table yet" in app.info[0].value
    assert not app.get("plotly_chart")


def test_an_unreadable_link_table_is_a_warning_not_a_traceback(lake: Path) -> None:
    log = lake / "link" / "_delta_log"
    (log / "00000000000000000001.json").write_text("not a delta log\n")
    app = open_page(PAGE)
    assert not app.exception
    assert len(app.warning) == 1 and "cannot read `link`" in app.warning[0].value
    assert str(lake.parent) not in app.warning[0].value  # the lake's path stays private


# -- the overlay another page shares ----------------------------------------------------------


def test_a_shared_path_is_drawn_and_cleared(lake: Path) -> None:
    app = open_page(PAGE)
    app.session_state["map_overlay"] = {"kind": "path", "label": "Why",
                                        "nodes": ["s0.0.0.1", "s0.0.0.0", "t0.0", "t0.1"]}
    app.run()
    assert not app.exception, app.exception
    assert ("**Path shared by another page** (4 nodes, drawn thick magenta): `Why` — "
            "`s0.0.0.1 → s0.0.0.0 → t0.0 → t0.1`") in _captions(app)
    assert {"shared path", "shared path: nodes"} <= set(_names(app))
    app.button(key="network_clear_overlay").click().run()
    assert "map_overlay" not in app.session_state
    assert "shared path" not in _names(app)
    assert "Path shared" not in _captions(app)


def test_a_route_label_is_not_repeated_and_missing_nodes_are_named(lake: Path) -> None:
    app = open_page(PAGE)
    app.session_state["map_overlay"] = {"kind": "path", "label": "cheapest (60 ms): t0.1 → x",
                                        "nodes": ["t0.1", "x"]}
    app.run()
    assert ("(2 nodes, drawn thick magenta): `cheapest (60 ms): t0.1 → x`; not on the map: "
            "`x`") in _captions(app)


def test_shared_lost_links_are_drawn(lake: Path) -> None:
    app = open_page(PAGE)
    app.session_state["map_overlay"] = {"kind": "losses", "label": "What if",
                                        "links": [("t0.0", "t0.1"), ("t0.1", "t0.0")]}
    app.run()
    assert ("**Links lost, shared by another page** (2 links, drawn thick orange): `What if` — "
            "`t0.0→t0.1`, `t0.1→t0.0`") in _captions(app)
    assert "lost links (what if)" in _names(app)


# -- what a click shows -------------------------------------------------------------------------


def _click(app: AppTest, *customdata: str) -> AppTest:
    """What the chart's selection puts in the page's state when a marker is clicked."""
    app.session_state["network_clicked"] = {"points": [{"customdata": list(customdata)}]}
    return app.run()


def test_a_clicked_node_shows_its_details_and_can_become_the_focus(lake: Path) -> None:
    app = _click(open_page(PAGE), "node", "t0.1")
    assert not app.exception, app.exception
    assert "Node `t0.1`" in [s.value for s in app.subheader]
    facts = [m.value for m in app.markdown if "**role**" in m.value]
    assert facts == ["**role**: transit node · **live links out**: 2 · **live links in**: 2 · "
                     "**live neighbours**: 2 · **recently dead links**: 1"]
    details = next(e.value for e in app.dataframe
                   if list(e.value.columns) == topomap.DETAIL_COLUMNS)
    assert details["state"].tolist() == ["live"] * 4 + ["expired"]
    app.button(key="network_focus_clicked").click().run()
    assert app.selectbox(key="network_focus").value == "t0.1"
    assert _metrics(app)["Nodes in view"] == "4"
    app.button(key="network_clear_clicked").click().run()
    assert not any(s.value.startswith("Node") for s in app.subheader)


def test_a_clicked_link_shows_both_directions(lake: Path) -> None:
    app = _click(open_page(PAGE), "link", "s0.1.0.1", "s0.1.0.2")
    assert "Link `s0.1.0.1` ↔ `s0.1.0.2`" in [s.value for s in app.subheader]
    details = next(e.value for e in app.dataframe
                   if list(e.value.columns) == topomap.DETAIL_COLUMNS)
    assert details[["from", "to", "state", "died in batch"]].values.tolist() == [
        ["s0.1.0.1", "s0.1.0.2", "deleted", 2], ["s0.1.0.2", "s0.1.0.1", "expired", 3]]
    # the window shrinks to the last batch: the details follow what the map shows
    app.selectbox(key="network_recent").set_value(1).run()
    details = next(e.value for e in app.dataframe
                   if list(e.value.columns) == topomap.DETAIL_COLUMNS)
    assert details["state"].tolist() == ["expired", "no link"]


def test_the_details_function_takes_the_chart_selection() -> None:
    edges = pd.DataFrame({"src": ["a"], "dst": ["b"], "cost": [10.0], "instances": [3]})
    dead = pd.DataFrame(columns=["src", "dst", "cost", "death", "deleted_batch", "instances"])
    selection = {"points": [{"curve_number": 4, "point_index": 0, "x": 0.5, "y": 0.0,
                             "customdata": ["link", "a", "b"]}], "point_indices": [0],
                 "box": [], "lasso": []}
    details = topomap.selection_details(selection, edges, dead)
    assert details is not None and details.subject == ("a", "b")
    assert dict(details.facts)["live copies"] == "3"
    assert topomap.selection_details({"points": [], "box": [], "lasso": []}, edges, dead) is None
