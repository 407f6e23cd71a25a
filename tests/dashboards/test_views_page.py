"""AppTest of the Views page (reachable pairs, shortest paths, sensor regions), and of every page
on a lake whose tables exist but are still empty (a first batch in progress).

The populated lake extends ``provenance_lake`` of the Why/What-if tests (links a→b 1, b→c 2,
a→c 5) with the path views and a four-sensor grid whose regions r1 and r2 have the same members;
written with delta-rs, no Spark. Only the open tab of the page runs, so a test opens the tab it
looks at (:func:`_open`).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
import types
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from dashboard_apptest import commit_views, open_page
from streamlit.testing.v1 import AppTest
from test_dashboard_hostile_ids import (  # noqa: F401  (hostile_lake: a fixture)
    BOLD,
    LINK,
    MATH,
    TICK,
    _in_code,
    _inert,
    hostile_lake,
)
from test_dashboard_provenance_pages import provenance_lake  # noqa: F401  (fixture)

from aspen import catalog
from aspen.lake.deltars import write_table
from aspen.pipeline.view_tables import view_frame
from aspen.provenance.bdd import ProvenanceManager
from aspen.settings import Settings

VIEWS = "pages/views.py"
ALL_PAGES = (
    "pages/overview.py",
    "pages/network.py",
    "pages/quarantine.py",
    "pages/why.py",
    "pages/what_if.py",
    VIEWS,
    "pages/health.py",
)
REACHABLE, PATHS, REGIONS = "Reachable pairs", "Shortest paths", "Sensor regions"
CHEAPEST, FEWEST, BOTH = "Cheapest paths", "Fewest-hop paths", "Cheapest and fewest-hop, per pair"
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
#: id, x, y, triggered; s4 is in no region and not triggered.
SENSORS = [("s1", 0.0, 0.0, True), ("s2", 10.0, 0.0, True), ("s3", 50.0, 50.0, True),
           ("s4", 60.0, 50.0, False)]
#: r1 and r2 have the same members (seeded at s1 and s2); r3 = {s3}.
REGIONS_ = [("r1", "s1"), ("r1", "s2"), ("r2", "s1"), ("r2", "s2"), ("r3", "s3")]
SEEDS = [("r1", "s1"), ("r2", "s2"), ("r3", "s3")]
#: Rows of the reachable view of the big lake: more than one page (500 rows).
BIG_NODES = 30


def _instances(frame: pd.DataFrame, first_var: int) -> pd.DataFrame:
    return frame.assign(
        var=[f"v{first_var + i}" for i in range(len(frame))],
        inserted_at=NOW,
        expires_at=pd.Series([None] * len(frame), dtype="datetime64[us, UTC]"),
        batch_id=1,
        seq=range(len(frame)),
    )


@pytest.fixture
def views_lake(provenance_lake: Path) -> Path:  # noqa: F811
    settings = Settings(lake=str(provenance_lake))
    manager = ProvenanceManager()
    v1, v2, v3 = (manager.var(v) for v in ("v1", "v2", "v3"))
    both = manager.and_(v1, v2)
    paths = {
        "cheapest_path": {
            ("a", "b", ("a", "b"), 1.0): v1,
            ("b", "c", ("b", "c"), 2.0): v2,
            ("a", "c", ("a", "b", "c"), 3.0): both,
        },
        "fewest_hops": {
            ("a", "b", ("a", "b"), 1): v1,
            ("b", "c", ("b", "c"), 1): v2,
            ("a", "c", ("a", "c"), 1): v3,
        },
        "shortest_cheapest_path": {
            ("a", "b", ("a", "b"), 1.0, ("a", "b"), 1): v1,
            ("b", "c", ("b", "c"), 2.0, ("b", "c"), 1): v2,
            ("a", "c", ("a", "b", "c"), 3.0, ("a", "c"), 1): manager.and_(both, v3),
        },
        "min_cost": {("a", "b", 1.0): v1, ("b", "c", 2.0): v2, ("a", "c", 3.0): both},
        "min_hops": {("a", "b", 1): v1, ("b", "c", 1): v2, ("a", "c", 1): v3},
    }
    for view, formulas in paths.items():
        write_table(settings, view, view_frame(view, formulas, manager, batch_id=1))
    sensors = pd.DataFrame(
        {"id": [s[0] for s in SENSORS], "x": [s[1] for s in SENSORS], "y": [s[2] for s in SENSORS]}
    )
    write_table(settings, "sensor", _instances(sensors, 10))
    on = pd.DataFrame({"id": [s[0] for s in SENSORS if s[3]]})
    write_table(settings, "triggered", _instances(on, 20))
    seeds = pd.DataFrame({"region": [r for r, _ in SEEDS], "id": [s for _, s in SEEDS]})
    write_table(settings, "region_seed", _instances(seeds, 30))
    region_formulas = {(region, sensor): manager.var(f"v{40 + i}")
                       for i, (region, sensor) in enumerate(REGIONS_)}
    write_table(settings, "active_region",
                view_frame("active_region", region_formulas, manager, batch_id=1))
    write_table(settings, "region_sizes",
                view_frame("region_sizes", [("r1", 2), ("r2", 2), ("r3", 1)], None, batch_id=1))
    write_table(settings, "largest_regions",
                view_frame("largest_regions", [("r1", 2), ("r2", 2)], None, batch_id=1))
    commit_views(settings.lake)
    return provenance_lake


@pytest.fixture
def big_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A reachable view of every pair of BIG_NODES nodes n00…n29: 900 rows, two pages."""
    lake = tmp_path / "big-lake"
    nodes = [f"n{i:02d}" for i in range(BIG_NODES)]
    pairs = [(src, dst) for src in nodes for dst in nodes]
    write_table(Settings(lake=str(lake)), "reachable",
                view_frame("reachable", pairs, None, batch_id=1))
    commit_views(str(lake))
    monkeypatch.setenv("ASPEN_LAKE", str(lake))
    return lake


@pytest.fixture
def lake_in_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every table the pages read exists, with its schema, and no rows."""
    lake = tmp_path / "lake"
    settings = Settings(lake=str(lake))
    manager = ProvenanceManager()
    for view in catalog.VIEWS:
        write_table(settings, view, view_frame(view, {}, manager, batch_id=1))
    commit_views(settings.lake)
    instance = [("var", pa.string()), ("inserted_at", pa.timestamp("us", "UTC")),
                ("expires_at", pa.timestamp("us", "UTC")), ("batch_id", pa.int64()),
                ("seq", pa.int64())]
    schemas = {
        "link": [("src", pa.string()), ("dst", pa.string()), ("cost", pa.float64()), *instance],
        "sensor": [("id", pa.string()), ("x", pa.float64()), ("y", pa.float64()), *instance],
        "triggered": [("id", pa.string()), *instance],
        "variables": [("var", pa.string()), ("relation", pa.string()), ("key", pa.string()),
                      ("values", pa.string()), ("inserted_batch", pa.int64()),
                      ("deleted_batch", pa.int64()), ("expires_at", pa.timestamp("us", "UTC"))],
        "quarantine": [("batch_id", pa.int64()), ("source", pa.string()), ("line", pa.int64()),
                       ("raw", pa.string()), ("reason", pa.string()),
                       ("ingested_at", pa.timestamp("us", "UTC"))],
        "ledger": [("batch_id", pa.int64()), ("through_ingest_batch", pa.int64()),
                   ("runtime", pa.string()), ("partitions", pa.int64()), ("mode", pa.string()),
                   ("updates_in", pa.int64()), ("view_changes_out", pa.int64()),
                   ("committed_at", pa.timestamp("us", "UTC"))],
        "metrics": [("batch_id", pa.int64()), ("node", pa.int64()), ("metric", pa.string()),
                    ("value", pa.float64())],
        "expectation_results": [("batch_id", pa.int64()), ("suite", pa.string()),
                                ("table", pa.string()), ("expectation", pa.string()),
                                ("success", pa.bool_()), ("observed", pa.string()),
                                ("checked_at", pa.timestamp("us", "UTC"))],
        "summary": [("name", pa.string()), ("version", pa.int64()), ("row_count", pa.int64()),
                    ("published_at", pa.timestamp("us", "UTC"))],
    }
    for name, fields in schemas.items():
        write_table(settings, name, pa.schema(fields).empty_table())
    monkeypatch.setenv("ASPEN_LAKE", str(lake))
    return lake


def _open(tab: str = REACHABLE, paths: str | None = None) -> AppTest:
    """The Views page with ``tab`` open, and the sub-tab ``paths`` of Shortest paths (only the
    open tabs run)."""
    app = open_page(VIEWS)
    if tab != REACHABLE or paths is not None:
        app.session_state["views_tab"] = tab
        if paths is not None:
            app.session_state["paths_view"] = paths
        app.run()
        assert not app.exception, app.exception
    assert app.title[0].value == "Views"
    return app


def _frame(app: AppTest, columns: list[str]) -> pd.DataFrame:
    """The first dataframe on the page with exactly these columns."""
    for element in app.dataframe:
        if list(element.value.columns) == columns:
            return element.value
    raise AssertionError(f"no dataframe with columns {columns}")


def _captions(app: AppTest) -> list[str]:
    return [c.value for c in app.caption]


# -- reachable pairs ------------------------------------------------------------------------


def test_reachable_pairs_filter_by_source_and_destination(views_lake: Path) -> None:
    app = _open()
    assert [t.label for t in app.tabs] == [REACHABLE, PATHS, REGIONS]
    assert app.selectbox(key="reach_src").options == ["(any)", "a", "b", "c"]
    assert app.metric[0].label == "Reachable pairs shown" and app.metric[0].value == "3"
    assert "3 rows." in _captions(app) and not app.number_input  # one page: no page input

    app.selectbox(key="reach_src").select("a").run()
    pairs = _frame(app, ["source", "destination"])
    assert pairs.values.tolist() == [["a", "b"], ["a", "c"]]
    app.selectbox(key="reach_dst").select("c").run()
    assert _frame(app, ["source", "destination"]).values.tolist() == [["a", "c"]]
    app.selectbox(key="reach_src").select("b").run()
    assert _frame(app, ["source", "destination"]).values.tolist() == [["b", "c"]]
    assert app.metric[0].value == "1"


def test_every_reachable_pair_is_on_a_page(big_lake: Path) -> None:
    app = _open()
    assert app.metric[0].value == "900"
    first = _frame(app, ["source", "destination"])
    assert len(first) == 500 and first.iloc[0].tolist() == ["n00", "n00"]
    assert "Rows 1–500 of 900 (page 1 of 2)." in _captions(app)

    app.number_input(key="reach_page").set_value(2).run()
    last = _frame(app, ["source", "destination"])
    assert "Rows 501–900 of 900 (page 2 of 2)." in _captions(app)
    assert last.iloc[-1].tolist() == ["n29", "n29"]  # the tail, not cut off
    everything = pd.concat([first, last], ignore_index=True)
    nodes = [f"n{i:02d}" for i in range(BIG_NODES)]
    assert everything.values.tolist() == [[s, d] for s in nodes for d in nodes]

    # a filter that leaves one page drops the page input; widening it again starts at page 1
    app.selectbox(key="reach_src").select("n29").run()
    assert len(_frame(app, ["source", "destination"])) == 30 and not app.number_input
    app.selectbox(key="reach_src").select("(any)").run()
    assert app.number_input(key="reach_page").value == 1


def test_a_page_past_the_end_of_a_narrowed_table_shows_its_last_page(big_lake: Path) -> None:
    app = _open()
    app.number_input(key="reach_page").set_value(2).run()
    app.selectbox(key="reach_dst").select("n00").run()  # 30 rows: one page
    assert _frame(app, ["source", "destination"])["destination"].tolist() == ["n00"] * 30


# -- shortest paths -------------------------------------------------------------------------


def test_shortest_paths_show_cost_in_ms_hops_and_route(views_lake: Path) -> None:
    app = _open(PATHS)
    assert {t.label for t in app.tabs} == {REACHABLE, PATHS, REGIONS, CHEAPEST, FEWEST, BOTH}
    assert app.selectbox(key="path_src").options == ["(any)", "a", "b"]  # sources with a path
    everything = _frame(app, ["source", "destination", "cost (ms)", "route"])
    assert everything["route"].tolist() == ["a → b", "a → b → c", "b → c"]  # all, paged
    assert app.selectbox(key="path_dst").options == ["(any)", "b", "c"]
    assert "Pick a source (From) to put one of its routes on the network map." in _captions(app)
    app.selectbox(key="path_src").select("a").run()
    assert app.selectbox(key="path_dst").options == ["(any)", "b", "c"]
    cheapest = _frame(app, ["source", "destination", "cost (ms)", "route"])
    assert cheapest.values.tolist() == [["a", "b", 1.0, "a → b"], ["a", "c", 3.0, "a → b → c"]]
    assert any("milliseconds" in c for c in _captions(app))

    app.selectbox(key="path_dst").select("c").run()
    assert not app.exception, app.exception
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Minimum cost (ms)"] == "3" and metrics["Minimum hops"] == "1"
    cheapest = _frame(app, ["source", "destination", "cost (ms)", "route"])
    assert cheapest.values.tolist() == [["a", "c", 3.0, "a → b → c"]]

    app.session_state["paths_view"] = FEWEST
    app.run()
    assert app.selectbox(key="path_dst").value == "c"  # the filters stay
    fewest = _frame(app, ["source", "destination", "hops", "route"])
    assert fewest.values.tolist() == [["a", "c", 1, "a → c"]]  # the direct, dearer link


def test_the_combined_view_shows_both_routes_of_a_pair(views_lake: Path) -> None:
    app = _open(PATHS, BOTH)
    app.selectbox(key="path_src").select("a").run()
    columns = ["source", "destination", "cost (ms)", "cheapest route", "hops",
               "fewest-hop route"]
    assert _frame(app, columns).values.tolist() == [
        ["a", "b", 1.0, "a → b", 1, "a → b"],
        ["a", "c", 3.0, "a → b → c", 1, "a → c"],
    ]
    app.selectbox(key="path_src").select("b").run()
    assert _frame(app, columns).values.tolist() == [["b", "c", 2.0, "b → c", 1, "b → c"]]


def test_a_route_goes_to_the_network_map(views_lake: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "topomap", None)  # the map's module not there: no import
    app = _open(PATHS, BOTH)
    app.selectbox(key="path_src").select("a").run()
    app.selectbox(key="path_dst").select("c").run()
    assert app.selectbox(key="map_route_combined").options == [
        "cheapest path (3 ms): a → b → c", "fewest-hop path (1 hop): a → c"]
    app.selectbox(key="map_route_combined").select_index(1).run()
    app.button(key="map_show_combined").click().run()
    assert not app.exception, app.exception
    assert app.session_state["map_overlay"] == {
        "kind": "path", "label": "fewest-hop path (1 hop): a → c", "nodes": ["a", "c"]}
    assert "`fewest-hop path (1 hop): a → c`" in app.success[0].value


def test_a_route_goes_through_the_map_modules_share_path(views_lake: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    shared: list[tuple[str, list[str]]] = []
    module = types.ModuleType("topomap")
    module.share_path = lambda label, nodes: shared.append((label, nodes))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "topomap", module)
    app = _open(PATHS)
    app.selectbox(key="path_src").select("a").run()
    app.selectbox(key="path_dst").select("c").run()
    assert app.selectbox(key="map_route_cheapest").options == [
        "cheapest path (3 ms): a → b → c"]
    app.button(key="map_show_cheapest").click().run()
    assert shared == [("cheapest path (3 ms): a → b → c", ["a", "b", "c"])]


def test_paths_without_the_combined_view_say_so_and_show_the_rest(views_lake: Path) -> None:
    shutil.rmtree(views_lake / "shortest_cheapest_path")
    app = _open(PATHS, BOTH)
    assert [i.value for i in app.info] == ["No cheapest and fewest-hop paths per pair yet."]
    app.session_state["paths_view"] = CHEAPEST
    app.run()
    assert len(_frame(app, ["source", "destination", "cost (ms)", "route"])) == 3


def test_paths_without_the_minimum_views_take_the_pairs_from_the_paths(views_lake: Path) -> None:
    for name in ("min_cost", "min_hops"):
        shutil.rmtree(views_lake / name)
    app = _open(PATHS)
    assert app.selectbox(key="path_src").options == ["(any)", "a", "b"]
    app.selectbox(key="path_src").select("a").run()
    app.selectbox(key="path_dst").select("c").run()
    assert {m.label: m.value for m in app.metric}["Minimum cost (ms)"] == "–"
    assert len(_frame(app, ["source", "destination", "cost (ms)", "route"])) == 1


# -- sensor regions -------------------------------------------------------------------------


def test_sensor_regions_map_shows_overlapping_regions_and_seeds(views_lake: Path) -> None:
    app = _open(REGIONS)
    metrics = {m.label: m.value for m in app.metric}
    assert (metrics["Sensors"], metrics["Triggered"], metrics["Active regions"]) == ("4", "3", "3")
    (chart,) = app.get("plotly_chart")
    spec = json.loads(chart.proto.spec)
    traces = {trace["name"]: trace for trace in spec["data"]}
    assert {"region r1 (2 sensors)", "region r2 (2 sensors)", "region r3 (1 sensor)", "seed",
            "triggered", "no region, not triggered"} == set(traces)
    # r1 and r2 have the same members: both drawn, as rings of different sizes
    assert traces["region r1 (2 sensors)"]["x"] == traces["region r2 (2 sensors)"]["x"]
    assert traces["region r1 (2 sensors)"]["marker"]["size"] != (
        traces["region r2 (2 sensors)"]["marker"]["size"])
    assert [a["text"] for a in spec["layout"]["annotations"]] == ["r1", "r2", "r3"]  # seeds
    assert spec["layout"]["yaxis"]["scaleanchor"] == "x"


def test_region_table_shows_sizes_and_the_largest_regions(views_lake: Path) -> None:
    app = _open(REGIONS)
    regions = _frame(app, ["region", "seed", "members", "triggered members", "size", "largest"])
    assert regions.values.tolist() == [
        ["r1", "s1", 2, 2, 2, True], ["r2", "s2", 2, 2, 2, True], ["r3", "s3", 1, 1, 1, False]]
    assert "Largest region(s), highlighted: `r1`, `r2` (2 sensors)." in _captions(app)
    sensors = _frame(app, ["sensor", "x (m)", "y (m)", "triggered", "regions", "seed of"])
    assert sensors.values.tolist() == [
        ["s1", 0.0, 0.0, True, "r1, r2", "r1"],
        ["s2", 10.0, 0.0, True, "r1, r2", "r2"],
        ["s3", 50.0, 50.0, True, "r3", "r3"],
        ["s4", 60.0, 50.0, False, "(none)", ""],
    ]


def test_views_with_regions_missing_show_sensors_without_region(views_lake: Path) -> None:
    for name in ("active_region", "region_sizes", "largest_regions", "region_seed"):
        shutil.rmtree(views_lake / name)
    app = _open(REGIONS)
    assert "No active regions yet: every sensor is shown without a region." in _captions(app)
    sensors = _frame(app, ["sensor", "x (m)", "y (m)", "triggered", "regions", "seed of"])
    assert set(sensors["regions"]) == {"(none)"}
    assert "No region has members yet." in _captions(app)
    (chart,) = app.get("plotly_chart")
    names = {trace["name"] for trace in json.loads(chart.proto.spec)["data"]}
    assert names == {"no region, triggered", "no region, not triggered"}


# -- empty, broken and hostile lakes --------------------------------------------------------


@pytest.mark.parametrize(("tab", "message"), [
    (REACHABLE, "No reachable pairs yet: run `aspen maintain` first."),
    (PATHS, "No shortest paths yet: run `aspen maintain` first."),
    (REGIONS, "No sensors yet: ingest a sensor grid first."),
])
def test_views_on_an_empty_lake_say_so_in_every_tab(empty_lake: Path, tab: str,
                                                    message: str) -> None:
    app = _open(tab)
    assert not app.error and not app.warning
    assert [i.value for i in app.info] == [message]


@pytest.mark.parametrize("page", ALL_PAGES)
def test_every_page_on_tables_that_exist_but_are_empty(lake_in_progress: Path, page: str) -> None:
    app = open_page(page)
    assert not app.error
    assert app.info or app.caption, "the page should say that there is nothing yet"


@pytest.mark.parametrize("tab", [PATHS, REGIONS])
def test_every_tab_on_tables_that_exist_but_are_empty(lake_in_progress: Path, tab: str) -> None:
    app = _open(tab)
    assert not app.error and not app.warning
    assert all("yet" in i.value for i in app.info) and app.info


def test_a_table_without_the_expected_columns_is_a_warning(views_lake: Path) -> None:
    write_table(Settings(lake=str(views_lake)), "sensor", pd.DataFrame({"id": ["s1"]}))
    app = _open(REGIONS)
    assert any("cannot read `sensor`" in w.value for w in app.warning)
    assert not app.get("plotly_chart")
    assert _open().metric[0].value == "3"  # the other tabs still work


@pytest.mark.parametrize("tab", [REACHABLE, PATHS, REGIONS])
def test_hostile_ids_are_text_in_every_tab(hostile_lake: Path, tab: str) -> None:  # noqa: F811
    app = _open(tab)
    _inert(app)
    if tab == REGIONS:
        spec = app.get("plotly_chart")[0].proto.spec
        assert MATH not in spec and "&#36;x&#36;" in spec  # the sensor, plain
        regions = _frame(app, ["region", "seed", "members", "triggered members", "size",
                               "largest"])
        assert regions["region"].tolist() == [LINK]  # a cell: plain text already


def test_a_hostile_route_goes_to_the_map_as_text(
    hostile_lake: Path, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    monkeypatch.setitem(sys.modules, "topomap", None)
    settings = Settings(lake=str(hostile_lake))
    write_table(settings, "cheapest_path", view_frame(
        "cheapest_path", [(LINK, BOLD, (LINK, BOLD), 1.0), (LINK, TICK, (LINK, TICK), 2.0)],
        None, batch_id=1))
    commit_views(settings.lake)
    app = _open(PATHS)
    app.selectbox(key="path_src").select(LINK).run()
    app.button(key="map_show_cheapest").click().run()
    assert not app.exception, app.exception
    assert app.session_state["map_overlay"]["nodes"] == [LINK, BOLD]
    assert _in_code(_inert(app), f"cheapest path (1 ms): {LINK} → {BOLD}")
