"""AppTest of the Sensor readings page on a small lake built without Spark.

Readings are ingested with ``ingest_files``; the rules run in process
(:func:`aspen.readings.rule_local.run_rule_locally`, the stream's own rule and sink
code), one Reduced-Eager (``avg_above``, outliers above 500 dropped) and one Replay-Lazy
(``lazy_avg``). Three sensors report every second for seven minutes: ``s2`` is hot in its
minutes 2, 4 and 5 (triggered since 10:05 by minute 4's window, kept by minute 5's), the sensor
named :data:`HOSTILE` from minute 3 on, ``s1`` never; ``s1`` also has a late, a duplicate and an
outlier reading.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from dashboard_apptest import open_page
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from aspen.cli.dashboard import app_path
from aspen.lake import deltars, tables
from aspen.lake.ingest import ingest_files
from aspen.readings.rule_local import run_rule_locally
from aspen.settings import Settings
from aspen.streams.rules import TriggerRule

sys.path.insert(0, str(app_path().parent))
import readingview  # noqa: E402

PAGE = "pages/sensors.py"
T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
HOSTILE = "[click](http://evil.example/)"
EAGER = TriggerRule(name="avg_above", lateness_s=20.0, outlier_above=500.0)
LAZY = TriggerRule(name="lazy_avg", lateness_s=20.0)
#: The minutes in which each sensor reads hot (96 ± 2; else 85 ± 2).
HOT = {"s1": (), "s2": (2, 4, 5), HOSTILE: (3, 4, 5, 6)}
MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": True}).enable("linkify")
_CODE = re.compile(r"<code>.*?</code>", re.S)


def _record(sensor: str, seconds: float, value: float) -> dict[str, object]:
    ts = (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")
    return {"op": "insert", "relation": "reading", "sensor": sensor, "ts": ts, "value": value}


def _readings(folder: Path) -> Path:
    rows = []
    for second in range(420):
        for sensor, hot in HOT.items():
            base = 96.0 if second // 60 in hot else 85.0
            rows.append(_record(sensor, second + 0.5, base + second % 5 - 2))
    rows += [_record("s1", 100.5, 85.0),      # 5 minutes behind s1's newest: late
             _record("s1", 419.5, 85.0),      # the time of one already counted: duplicate
             _record("s1", 419.7, 1000.0)]    # above the eager rule's 500: outlier
    path = folder / "readings.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture(scope="module")
def sensor_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sensors")
    lake = Settings(lake=str(folder / "sensor-lake"))
    ingest_files(lake, [_readings(folder)])
    run_rule_locally(lake, EAGER, "eager")
    run_rule_locally(lake, LAZY, "lazy")
    return folder / "sensor-lake"


@pytest.fixture
def lake_env(sensor_lake: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ASPEN_LAKE", str(sensor_lake))
    return sensor_lake


def _open(**params: str) -> AppTest:
    """The page opened by a link with query ``params`` (``sensors?sensor=s2``)."""
    app = AppTest.from_file(str(app_path()), default_timeout=60)
    app.query_params.update(params)
    app.run()
    app.switch_page(PAGE).run()
    assert not app.exception, app.exception
    return app


def _ids(sensor: str, lake: Path, minutes: range) -> list[int]:
    """Ids of the readings of ``sensor`` timed in ``minutes`` (counted ones only)."""
    readings = deltars.read_table(Settings(lake=str(lake)), tables.READINGS)
    start, end = (T0 + timedelta(minutes=m) for m in (minutes.start, minutes.stop))
    mine = readings[(readings["sensor"] == sensor) & (readings["ts"] >= pd.Timestamp(start))
                    & (readings["ts"] < pd.Timestamp(end))]
    return sorted(int(i) for i in mine["id"])


def _markdown(app: AppTest) -> list[str]:
    return [str(e.value) for kind in ("markdown", "caption", "info", "warning", "title",
                                      "header", "subheader") for e in getattr(app, kind)]


def _numbers(data: object) -> list[int]:
    """A plotly spec's array (a list, or a typed array ``{"dtype", "bdata"}``) as ints."""
    if isinstance(data, dict):
        import base64

        import numpy as np

        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=data["dtype"]).tolist()
    return [int(v) for v in data]  # type: ignore[union-attr]


def _chart(app: AppTest) -> dict:
    return json.loads(app.get("plotly_chart")[0].proto.spec)


# -- empty states -----------------------------------------------------------------------------


def test_an_empty_lake_says_to_ingest_readings_and_run_aspen_stream(empty_lake: Path) -> None:
    app = open_page(PAGE)
    assert app.title[0].value == "Sensor readings"
    (info,) = [i.value for i in app.info]
    assert "No sensor readings yet" in info and "`aspen stream`" in info
    assert not app.warning and not app.selectbox


def test_readings_without_a_rule_run_say_run_aspen_stream(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lake = Settings(lake=str(tmp_path / "lake"))
    path = tmp_path / "few.jsonl"
    path.write_text(json.dumps(_record("s1", 1.0, 80.0)) + "\n")
    ingest_files(lake, [path])
    monkeypatch.setenv("ASPEN_LAKE", lake.lake)
    app = open_page(PAGE)
    assert [i.value for i in app.info] == [
        "No triggering rule has run on these readings yet: run `aspen stream`."]

    run_rule_locally(lake, TriggerRule(name="short"), "eager")  # one reading: no window closes
    app = open_page(PAGE)
    assert [s.options for s in app.selectbox] == [["short"]]
    assert "has closed no window yet" in app.info[0].value


# -- a triggered sensor -------------------------------------------------------------------------


def test_a_triggered_sensor_shows_its_state_windows_readings_and_chart(lake_env: Path) -> None:
    app = _open(sensor="s2")
    rule, sensor = app.selectbox
    assert rule.options == ["avg_above", "lazy_avg"] and rule.value == "avg_above"
    assert sensor.options == [f"{HOSTILE} (triggered)", "s2 (triggered)", "s1"]
    assert sensor.value == "s2"
    texts = "\n".join(_markdown(app))
    assert ("`s2` is **triggered** since 2026-12-01 10:05:00 UTC: its window "
            "[2026-12-01 10:04:00, 10:05:00) had avg 96 over 60 reading(s), above 90, and "
            "triggered it; 1 later window kept it above.") in texts
    assert "avg over tumbling 60 s windows > 90 triggers" in texts

    windows, readings = (d.value for d in app.dataframe)  # s2 dropped nothing: no third
    assert windows["window start"].tolist() == ["2026-12-01 10:04:00", "2026-12-01 10:05:00"]
    assert windows["decision"].tolist() == ["insert", ""]
    assert windows["effect"].tolist() == ["triggered it", "kept its state"]
    assert "Readings 1–100 of 120 (page 1 of 2)." in texts  # paged, and says so
    expected = _ids("s2", lake_env, range(4, 6))
    assert readings["id"].tolist() == expected[:100]
    app.pagination[0].set_value(2).run()
    assert app.dataframe[1].value["id"].tolist() == expected[100:]

    spec = _chart(app)
    names = [trace.get("name") for trace in spec["data"]]
    assert "readings behind the state" in names and "triggered here" in names
    assert "un-triggered here" in names  # minute 3's window, inside the default period
    behind = next(t for t in spec["data"] if t.get("name") == "readings behind the state")
    assert sorted(_numbers(behind["customdata"])) == expected  # the 120 ringed readings
    threshold = [s for s in spec["layout"]["shapes"] if s.get("y0") == 90]
    assert threshold, spec["layout"]["shapes"]


def test_a_quiet_sensor_lists_its_dropped_readings_with_their_reason(lake_env: Path) -> None:
    app = _open(sensor="s1")
    texts = "\n".join(_markdown(app))
    assert "`s1` has **never been triggered** under this rule" in texts
    (drops,) = (d.value for d in app.dataframe)
    assert sorted(drops["reason"]) == ["duplicate", "late", "outlier"]
    assert drops["value"].max() == 1000.0
    assert "By reason: `duplicate` 1, `late` 1, `outlier` 1" in texts
    spec = _chart(app)
    (crosses,) = [t for t in spec["data"] if t.get("name") == "dropped readings"]
    assert sorted(row[1] for row in crosses["customdata"]) == ["duplicate", "late", "outlier"]
    (points,) = [t for t in spec["data"] if t.get("name") == "readings"]
    assert {row[0] for row in crosses["customdata"]}.isdisjoint(_numbers(points["customdata"]))
    assert spec["layout"]["yaxis"]["range"][1] < 1000  # the outlier does not flatten the rest
    assert "1 dropped reading(s) off the chart (value 1000)" in json.dumps(spec["layout"])


# -- hostile ids, links, lazy provenance ---------------------------------------------------------


def test_a_hostile_sensor_id_is_text_everywhere(lake_env: Path) -> None:
    app = _open()  # no query parameter: the first triggered sensor
    assert app.selectbox[1].value == HOSTILE
    rendered = []
    for value in _markdown(app):
        page_html = MARKDOWN.render(value)
        assert "evil.example" not in _CODE.sub("", page_html), value
        rendered.append(page_html)
    assert f"<code>{HOSTILE}</code>" in "\n".join(rendered)  # header and state, as code
    assert "evil.example" not in app.get("plotly_chart")[0].proto.spec  # no lake text on it

    app = _open(sensor="nope")  # a link to a sensor without windows: said, then the default
    assert app.selectbox[1].value == HOSTILE
    assert "Sensor `nope` has no window under rule `avg_above`" in app.warning[0].value


def test_a_lazy_rule_replays_the_same_readings(lake_env: Path) -> None:
    app = _open(rule="lazy_avg", sensor=HOSTILE)
    assert [s.value for s in app.selectbox] == ["lazy_avg", HOSTILE]
    texts = "\n".join(_markdown(app))
    assert "Replay-Lazy provenance" in texts
    assert "rebuilt by replaying the sensor's readings" in texts
    assert f"`{HOSTILE}` is **triggered** since 2026-12-01 10:04:00 UTC" in texts
    readings = app.dataframe[1].value
    assert "Readings 1–100 of 180 (page 1 of 2)." in texts
    assert readings["id"].tolist() == _ids(HOSTILE, lake_env, range(3, 6))[:100]


def test_readings_past_retention_leave_the_state_and_its_windows(
        sensor_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lake = tmp_path / "trimmed"
    shutil.copytree(sensor_lake, lake)
    first = _ids(HOSTILE, lake, range(3, 4))[0]
    deltars.delete_where(Settings(lake=str(lake)), tables.READINGS, f"id <= {first}")
    monkeypatch.setenv("ASPEN_LAKE", str(lake))
    app = _open(sensor=HOSTILE)
    assert "past the readings' retention" in app.warning[0].value
    assert f"`{HOSTILE}` is **triggered** since 2026-12-01 10:04:00 UTC" in "\n".join(
        _markdown(app))
    (windows,) = (d.value for d in app.dataframe)  # no readings table: they are gone
    assert windows["decision"].tolist() == ["insert", "", ""]
    assert "Their readings cannot be shown" in app.info[0].value


def test_the_doctests_of_readingview_pass() -> None:
    import doctest

    failed, tried = doctest.testmod(readingview, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failed == 0
