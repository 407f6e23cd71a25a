"""AppTest of the Stream networks page on a small lake built without Spark.

Random readings of three sensors (some out of order, a few late) are ingested with
``ingest_files``; two networks run in process (:func:`run_network_locally`): ``windows_eager``,
sliding time windows per sensor in Reduced-Eager mode, and ``pairs_lazy``, two input streams
(hot and cold readings) joined as one group in Replay-Lazy mode. The readings behind a chosen
output must be the ones :func:`explain_output` gives; once the readings are purged, the page
says they are past retention. ``networkview``'s chart and doctests are tested on their own.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dashboard_apptest import open_page
from streamlit.testing.v1 import AppTest

from aspen.cli.dashboard import app_path
from aspen.lake import deltars
from aspen.lake.housekeeping import purge_readings
from aspen.lake.ingest import ingest_files
from aspen.readings.network_provenance import OutputExplanation, explain_output
from aspen.readings.network_tables import NETWORK_DROPS, NETWORK_OUTPUTS, run_network_locally
from aspen.settings import Settings
from aspen.streams.networks import parse_network

sys.path.insert(0, str(app_path().parent))
import networkview  # noqa: E402

PAGE = "pages/networks.py"
T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
EAGER = {"name": "windows_eager", "lateness_s": 5, "query": {
    "aggregate": {"select": {"stream": "readings"}, "where": "value > 30"},
    "window": {"seconds": 20, "slide": 10}, "functions": ["avg(value)", "count(value)"]}}
LAZY = {"name": "pairs_lazy", "lateness_s": 5,
        "streams": {"hot": "value > 70", "cold": "value < 30"},
        "query": {"join": [{"stream": "hot"},
                           {"aggregate": {"stream": "cold"}, "window": {"seconds": 15},
                            "functions": ["min(value) AS value"], "name": "low"}],
                  "within_s": 20, "key": None}}


def _readings(folder: Path, seed: int = 1) -> Path:
    rng = random.Random(seed)
    rows = []
    for step in range(60):
        seconds = step * 3 + rng.uniform(-8, 2)  # some readings out of order, a few late
        ts = (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")
        rows.append({"op": "insert", "relation": "reading",
                     "sensor": rng.choice(["s1", "s2", "s3"]), "ts": ts,
                     "value": round(rng.uniform(0, 100), 1)})
    path = folder / "readings.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture(scope="module")
def network_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("networks")
    lake = Settings(lake=str(folder / "network-lake"))
    ingest_files(lake, [_readings(folder)])
    run_network_locally(lake, parse_network(EAGER), "eager")
    run_network_locally(lake, parse_network(LAZY), "lazy")
    return folder / "network-lake"


@pytest.fixture
def lake_env(network_lake: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ASPEN_LAKE", str(network_lake))
    return network_lake


def _open(**params: str) -> AppTest:
    """The page opened by a link with query ``params`` (``networks?network=…``)."""
    app = AppTest.from_file(str(app_path()), default_timeout=60)
    app.query_params.update(params)
    app.run()
    app.switch_page(PAGE).run()
    assert not app.exception, app.exception
    return app


def _outputs(lake: Path, network: str):
    rows = deltars.read_table(Settings(lake=str(lake)), NETWORK_OUTPUTS)
    return rows[rows["network"] == network]


def _texts(app: AppTest) -> str:
    return "\n".join(str(e.value) for kind in ("markdown", "caption", "info", "warning", "title",
                                                "header", "subheader") for e in getattr(app, kind))


def _picker(app: AppTest, label: str):
    (found,) = [s for s in app.selectbox if s.label.startswith(label)]
    return found


def _chart(app: AppTest) -> dict:
    return json.loads(app.get("plotly_chart")[0].proto.spec)


def _shown_ids(app: AppTest) -> list[int]:
    """The ids of the readings table (the one with a ``stream`` column)."""
    (table,) = [d.value for d in app.dataframe if "stream" in d.value.columns]
    return [int(i) for i in table["id"]]


def _expected_ids(lake: Path, network: str, output: str) -> list[int]:
    found = explain_output(Settings(lake=str(lake)), network, output)
    return [row[0] for stream in sorted(found.readings) for row in sorted(found.readings[stream])]


# -- empty states -----------------------------------------------------------------------------


def test_an_empty_lake_points_to_aspen_stream_network(empty_lake: Path) -> None:
    app = open_page(PAGE)
    assert app.title[0].value == "Stream networks"
    (info,) = [i.value for i in app.info]
    assert "No stream network has run on this lake yet" in info
    assert "`aspen stream --network FILE`" in info and "`aspen ingest`" in info
    assert not app.warning and not app.selectbox and not app.dataframe


def test_readings_without_a_network_say_run_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lake = Settings(lake=str(tmp_path / "lake"))
    ingest_files(lake, [_readings(tmp_path)])
    monkeypatch.setenv("ASPEN_LAKE", lake.lake)
    app = open_page(PAGE)
    (info,) = [i.value for i in app.info]
    assert info.startswith("No stream network has run on this lake yet: run one with "
                           "`aspen stream --network FILE`")


# -- an eager network per sensor -----------------------------------------------------------------


def test_an_eager_network_lists_its_outputs_and_an_outputs_readings(lake_env: Path) -> None:
    app = _open(network="windows_eager")
    network = _picker(app, "Network")
    assert network.options == ["pairs_lazy (lazy)", "windows_eager (eager)"]
    assert network.value == "windows_eager"
    texts = _texts(app)
    assert ("It computes `readings → where value > 30 → avg(value), count(value) over 20 s windows "
            "sliding every 10 s, per sensor`, each sensor's readings on their own") in texts
    assert "Reduced-Eager provenance" in texts
    assert json.loads(app.code[0].value)["name"] == "windows_eager"  # the definition, pretty

    expected = _outputs(lake_env, "windows_eager")
    assert 0 < len(expected) <= networkview.PAGE_ROWS  # one page holds them all
    table = app.dataframe[0].value
    assert len(table) == len(expected)
    assert list(table.columns[:2]) == ["time", "group"]
    assert {"start", "end", "avg_value", "count_value"} <= set(table.columns)
    assert table["time"].tolist() == sorted(table["time"], reverse=True)  # newest first

    output = _picker(app, "Output")
    newest_first = expected.sort_values(["ts", "output"], ascending=[False, True])["output"]
    assert _picker(app, "Output").value == newest_first.iloc[0]  # the newest, at first
    assert len(output.options) == len(expected) >= 3
    output.select_index(2).run()  # the table's third row
    assert not app.exception, app.exception
    picked = _picker(app, "Output").value
    assert picked == newest_first.iloc[2]
    assert _shown_ids(app) == _expected_ids(lake_env, "windows_eager", picked)
    # outputs are named in words, never by their stored keys
    key = json.loads(picked)
    clock = datetime.fromtimestamp(key[2], UTC).strftime("%H:%M:%S")
    words = f"{key[0].replace('_', ' ')} · sensor {key[1]} · {clock}"
    assert _picker(app, "Output").format_func(picked) == f"{words} on 2026-12-01"
    assert f"Output `{words}` of group" in _texts(app)
    assert picked not in _texts(app)
    spec = _chart(app)
    assert [t["name"] for t in spec["data"]] == ["stream readings"]
    assert [s["type"] for s in spec["layout"]["shapes"]] == ["rect"]  # its window, shaded


def test_the_group_filter_lists_one_sensors_outputs(lake_env: Path) -> None:
    app = _open(network="windows_eager", group="s2")
    group = _picker(app, "Group")
    assert group.options == ["(all groups)", "s1", "s2", "s3"] and group.value == "s2"
    expected = _outputs(lake_env, "windows_eager")
    table = app.dataframe[0].value
    assert len(table) == int((expected["grp"] == "s2").sum())
    assert set(table["group"]) == {"s2"}
    picked = _picker(app, "Output").value
    assert _shown_ids(app) == _expected_ids(lake_env, "windows_eager", picked)

    _picker(app, "Group").select("(all groups)").run()
    assert not app.exception
    assert len(app.dataframe[0].value) == len(expected)


def test_the_dropped_readings_are_counted_by_reason(lake_env: Path) -> None:
    app = _open(network="windows_eager")
    drops = deltars.read_table(Settings(lake=str(lake_env)), NETWORK_DROPS)
    drops = drops[drops["network"] == "windows_eager"]
    assert len(drops) > 0, "the case should drop late readings"
    (table,) = [d.value for d in app.dataframe if "reason" in d.value.columns]
    assert sorted(table["id"]) == sorted(drops["id"])
    assert f"{len(drops):,} reading(s) dropped. By reason: `late` {len(drops)}" in _texts(app)


# -- a lazy network over two streams, as one group ------------------------------------------------


def test_a_lazy_network_replays_each_outputs_readings_per_stream(lake_env: Path) -> None:
    app = _open()
    assert _picker(app, "Network").value == "pairs_lazy"  # the first, by name
    texts = _texts(app)
    assert "Replay-Lazy provenance" in texts
    assert ("reads the readings where `value < 30` as stream `cold`, the readings where "
            "`value > 70` as stream `hot`. It computes `join of (hot) with (cold → min(value) AS "
            "value over tumbling 15 s windows, per sensor) within 20 s, over every pair`") in texts
    assert "runs as one group" in texts
    assert not [s for s in app.selectbox if s.label.startswith("Group")]
    expected = _outputs(lake_env, "pairs_lazy")
    assert len(app.dataframe[0].value) == min(len(expected), networkview.PAGE_ROWS)
    assert set(app.dataframe[0].value["group"]) == {networkview.ONE_GROUP}

    for index in (0, len(_picker(app, "Output").options) - 1):
        _picker(app, "Output").select_index(index).run()
        assert not app.exception, app.exception
        picked = _picker(app, "Output").value
        assert _shown_ids(app) == _expected_ids(lake_env, "pairs_lazy", picked)
        assert sorted(t["name"] for t in _chart(app)["data"]) == ["stream cold", "stream hot"]


def test_an_output_past_retention_says_so(
        network_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lake = tmp_path / "purged"
    shutil.copytree(network_lake, lake)
    purge_readings(Settings(lake=str(lake)), 0.0, now=datetime.now(UTC) + timedelta(hours=1))
    monkeypatch.setenv("ASPEN_LAKE", str(lake))
    app = _open(network="windows_eager")
    (warning,) = [w.value for w in app.warning]
    assert "past the readings' retention" in warning and "housekeeping deleted them" in warning
    assert len(app.dataframe[0].value) == len(_outputs(lake, "windows_eager"))  # still listed
    assert not app.get("plotly_chart")


# -- networkview on its own -----------------------------------------------------------------------


def test_the_figure_has_a_trace_per_stream_and_shades_the_window() -> None:
    start = T0.timestamp()
    found = OutputExplanation(
        "n", '["w", "s1", 0.0]', "eager",
        {"start": start, "end": start + 60, "ts": start, "avg_value": 50.0},
        {"hot": [(3, "s1", start + 5, 95.0), (1, "<b>s2</b>", start + 1, 91.0)],
         "<i>cold</i>": [(2, "s1", start + 2, 5.0)], "empty": []})
    figure = networkview.output_figure(found)
    names = [trace.name for trace in figure.data]
    assert names == ["stream hot", "stream &lt;i&gt;cold&lt;/i&gt;", "stream empty"]
    assert [trace.mode for trace in figure.data] == ["markers"] * 3
    hot = figure.data[0]
    assert [row[0] for row in hot.customdata] == [1, 3]  # by id
    assert hot.customdata[0][1] == "&lt;b&gt;s2&lt;/b&gt;"  # lake text escaped
    assert list(hot.y) == [91.0, 95.0] and len(figure.data[2].x) == 0
    (shade,) = figure.layout.shapes
    assert shade.type == "rect"
    assert (shade.x0, shade.x1) == (T0.replace(tzinfo=None),
                                    T0.replace(tzinfo=None) + timedelta(minutes=1))

    point = OutputExplanation("n", "o", "lazy", {"ts": start, "value": 1.0},
                              {"readings": [(1, "s1", start, 1.0)]})
    figure = networkview.output_figure(point)
    assert [trace.name for trace in figure.data] == ["stream readings"]
    assert [shape.type for shape in figure.layout.shapes] == ["line"]  # no window: its time


def test_the_doctests_of_networkview_pass() -> None:
    import doctest

    failed, tried = doctest.testmod(networkview, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failed == 0
