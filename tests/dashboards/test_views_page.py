"""AppTest of the Views page (reachable pairs, shortest paths, sensor regions), and of every page
on a lake whose tables exist but are still empty (a first batch in progress).

The populated lake extends ``provenance_lake`` of the Why/What-if tests (links a→b 1, b→c 2,
a→c 5) with the path views and a four-sensor grid; written with delta-rs, no Spark.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from dashboard_apptest import commit_views, open_page
from streamlit.testing.v1 import AppTest
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
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
#: id, x, y, triggered; regions: r1 = {s1, s2}, r2 = {s3}; s4 is in none and not triggered.
SENSORS = [("s1", 0.0, 0.0, True), ("s2", 10.0, 0.0, True), ("s3", 50.0, 50.0, True),
           ("s4", 60.0, 50.0, False)]
REGIONS = [("r1", "s1"), ("r1", "s2"), ("r2", "s3")]


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
    region_formulas = {(region, sensor): manager.var(f"v{20 + i}")
                       for i, (region, sensor) in enumerate(REGIONS)}
    write_table(settings, "active_region",
                view_frame("active_region", region_formulas, manager, batch_id=1))
    commit_views(settings.lake)
    return provenance_lake


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


def _frame(app: AppTest, columns: list[str]) -> pd.DataFrame:
    """The first dataframe on the page with exactly these columns."""
    for element in app.dataframe:
        if list(element.value.columns) == columns:
            return element.value
    raise AssertionError(f"no dataframe with columns {columns}")


def test_reachable_pairs_filter_by_source_and_destination(views_lake: Path) -> None:
    app = open_page(VIEWS)
    assert app.title[0].value == "Views"
    assert app.selectbox(key="reach_src").options == ["(any)", "a", "b", "c"]
    assert app.metric[0].label == "Reachable pairs shown" and app.metric[0].value == "3"

    app.selectbox(key="reach_src").select("a").run()
    pairs = _frame(app, ["src", "dst"])
    assert pairs.values.tolist() == [["a", "b"], ["a", "c"]]
    app.selectbox(key="reach_dst").select("c").run()
    assert _frame(app, ["src", "dst"]).values.tolist() == [["a", "c"]]
    app.selectbox(key="reach_src").select("b").run()
    assert _frame(app, ["src", "dst"]).values.tolist() == [["b", "c"]]
    assert app.metric[0].value == "1"


def test_shortest_paths_show_cost_hops_and_route(views_lake: Path) -> None:
    app = open_page(VIEWS)
    assert app.selectbox(key="path_src").options == ["a", "b"]  # sources with a cheapest path
    app.selectbox(key="path_src").select("a").run()
    assert app.selectbox(key="path_dst").options == ["(all)", "b", "c"]
    cheapest = _frame(app, ["src", "dst", "cost", "route"])
    assert cheapest.values.tolist() == [["a", "b", 1.0, "a → b"], ["a", "c", 3.0, "a → b → c"]]

    app.selectbox(key="path_dst").select("c").run()
    assert not app.exception, app.exception
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Minimum cost"] == "3" and metrics["Minimum hops"] == "1"
    cheapest = _frame(app, ["src", "dst", "cost", "route"])
    assert cheapest.values.tolist() == [["a", "c", 3.0, "a → b → c"]]
    fewest = _frame(app, ["src", "dst", "hops", "route"])
    assert fewest.values.tolist() == [["a", "c", 1, "a → c"]]  # the direct, dearer link


def test_sensor_regions_join_positions_and_triggered(views_lake: Path) -> None:
    app = open_page(VIEWS)
    metrics = {m.label: m.value for m in app.metric}
    assert (metrics["Sensors"], metrics["Triggered"], metrics["Active regions"]) == ("4", "3", "2")
    placed = _frame(app, ["sensor", "x", "y", "region", "triggered"]).set_index("sensor")
    assert placed.loc["s1", "region"] == "r1" and placed.loc["s3", "region"] == "r2"
    assert placed.loc["s4", "region"] == "(none)" and not placed.loc["s4", "triggered"]
    assert (placed.loc["s2", "x"], placed.loc["s2", "y"]) == (10.0, 0.0)
    sizes = _frame(app, ["region", "sensors", "triggered"]).set_index("region")
    assert sizes["sensors"].to_dict() == {"r1": 2, "r2": 1}

    (chart,) = app.get("vega_lite_chart")
    spec = json.loads(chart.proto.spec)
    encoding = spec["encoding"]
    assert encoding["color"]["field"] == "region" and encoding["shape"]["field"] == "state"
    assert (encoding["x"]["field"], encoding["y"]["field"]) == ("x", "y")


def test_views_on_an_empty_lake_say_so_in_every_tab(empty_lake: Path) -> None:
    app = open_page(VIEWS)
    assert not app.error and not app.warning
    messages = [i.value for i in app.info]
    assert len(messages) == 3
    assert all("yet" in m for m in messages)
    assert any("`reachable`" in m for m in messages) and any("`sensor`" in m for m in messages)


def test_views_with_regions_missing_show_sensors_without_region(views_lake: Path) -> None:
    import shutil

    shutil.rmtree(views_lake / "active_region")
    app = open_page(VIEWS)
    assert any("No `active_region` view yet" in c.value for c in app.caption)
    placed = _frame(app, ["sensor", "x", "y", "region", "triggered"])
    assert set(placed["region"]) == {"(none)"}


@pytest.mark.parametrize("page", ALL_PAGES)
def test_every_page_on_tables_that_exist_but_are_empty(lake_in_progress: Path, page: str) -> None:
    app = open_page(page)
    assert not app.error
    assert app.info or app.caption, "the page should say that there is nothing yet"


def test_a_table_without_the_expected_columns_is_a_warning(views_lake: Path) -> None:
    write_table(Settings(lake=str(views_lake)), "sensor", pd.DataFrame({"id": ["s1"]}))
    app = open_page(VIEWS)
    assert any("cannot read `sensor`" in w.value for w in app.warning)
    assert app.metric[0].value == "3"  # the other tabs still work
