"""The readings stream on Spark Structured Streaming, end to end: readings ingested in two
files, the rule's streaming query run after each (a restart from its checkpoint in the middle of
the stream), in Reduced-Eager and Replay-Lazy mode; windows, drops, decisions and every window's
readings checked against the rule evaluated in process over the same readings; a micro-batch
crashed in its sink reruns to the same tables; the decisions maintain the region views."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from aspen.errors import InjectedCrash, ProvenanceExpiredError
from aspen.lake import deltars, tables
from aspen.lake.housekeeping import purge_readings
from aspen.lake.ingest import ingest_files
from aspen.readings.rule_provenance import explain_triggered, window_ids
from aspen.readings.rule_stream import run_reading_stream
from aspen.readings.rule_tables import READING_DROPS, READING_WINDOWS, load_rule
from aspen.settings import Settings
from aspen.streams.rules import SensorState, TriggerRule
from aspen.streams.windows import Reading

pytestmark = [pytest.mark.spark, pytest.mark.slow]

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
RULE = TriggerRule(name="eager_avg", lateness_s=20.0)
LAZY = TriggerRule(name="lazy_avg", lateness_s=20.0)


def _reading(sensor: str, seconds: float, value: float) -> dict:
    ts = (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")
    return {"op": "insert", "relation": "reading", "sensor": sensor, "ts": ts, "value": value}


def _stream() -> tuple[list[dict], list[dict]]:
    """Two files of readings of four sensors over about six minutes, sensor s2 hot in its
    second and fourth minute; the second file also holds a reading late within the allowed
    lateness and one late beyond it, and a duplicate."""
    rng = random.Random(7)
    rows = []
    for step in range(180):
        for sensor in ("s1", "s2", "s3", "s4"):
            hot = sensor == "s2" and (60 <= step * 2 < 120 or 180 <= step * 2 < 240)
            value = round((96.0 if hot else 85.0) + rng.uniform(-3, 3), 2)
            rows.append(_reading(sensor, step * 2 + rng.random(), value))
    first, second = rows[:300], rows[300:]
    late_in_time = _reading("s1", 2 * 75 - 10.5, 500.0)   # 10 s behind s1's newest: counted
    late_beyond = _reading("s1", 2 * 75 - 60.5, 500.0)    # 60 s behind: dropped as late
    duplicate = dict(second[0])
    return first, [*second[:8], late_in_time, late_beyond, duplicate, *second[8:]]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _oracle(lake: Settings, rule: TriggerRule) -> tuple[list, list, list]:
    """The rule over every reading of the lake at once, per sensor, in process."""
    readings = deltars.read_table(lake, tables.READINGS).sort_values("id")
    windows, drops, decisions = [], [], []
    for sensor, rows in readings.groupby("sensor"):
        stream = [Reading(int(i), int(ts.value // 1000), float(v)) for i, ts, v in
                  zip(rows["id"], rows["ts"], rows["value"], strict=True)]
        step = SensorState().add_all(rule, stream)
        windows += [(sensor, w.start_us, w.ids) for w in step.closed]
        drops += [(int(r.id), why) for r, why in step.dropped]
        decisions += [(sensor, d.op, d.window.end_us) for d in step.decisions]
    return sorted(windows), sorted(drops), sorted(decisions)


def _streamed(lake: Settings, rule: TriggerRule) -> tuple[list, list, list]:
    windows = deltars.read_table(lake, READING_WINDOWS)
    windows = windows[windows["rule"] == rule.name]
    got = sorted((row["sensor"], int(row["window_start"].value // 1000),
                  tuple(window_ids(lake, row, rule))) for row in windows.to_dict("records"))
    drops = deltars.read_table(lake, READING_DROPS)
    drops = sorted((int(i), why) for i, why in
                   zip(drops[drops["rule"] == rule.name]["id"],
                       drops[drops["rule"] == rule.name]["reason"], strict=True))
    updates = deltars.read_table(lake, tables.UPDATES)
    logged = updates[updates["source"].str.startswith(f"stream-{rule.name}-")]
    decisions = sorted((row["id"], row["op"], int(row["event_time"].value // 1000))
                       for row in logged.to_dict("records"))
    return got, drops, decisions


def test_the_stream_equals_the_rule_in_process_across_a_restart_in_both_modes(
        spark, lake: Settings, tmp_path: Path) -> None:
    first, second = _stream()
    ingest_files(lake, [_write(tmp_path / "readings-1.jsonl", first)])
    for rule, mode in ((RULE, "eager"), (LAZY, "lazy")):
        report = run_reading_stream(spark, lake, rule, mode)
        assert report.windows > 0
    ingest_files(lake, [_write(tmp_path / "readings-2.jsonl", second)])
    for rule, mode in ((RULE, "eager"), (LAZY, "lazy")):  # restarted from the checkpoint
        run_reading_stream(spark, lake, rule, mode)
        assert load_rule(lake, rule.name) == (rule, mode)

    expected = _oracle(lake, RULE)
    eager, lazy = _streamed(lake, RULE), _streamed(lake, LAZY)
    assert eager == expected
    assert lazy == expected  # Replay-Lazy rebuilds exactly the ids Reduced-Eager kept
    windows, drops, decisions = expected
    assert len(windows) == len(set(windows))  # nothing doubled by the restart
    assert ("s2", "insert") in {(s, op) for s, op, _ in decisions}
    assert ("s2", "delete") in {(s, op) for s, op, _ in decisions}

    readings = deltars.read_table(lake, tables.READINGS)
    by_value = readings[readings["value"] == 500.0].sort_values("id")
    in_time, beyond = (int(i) for i in by_value["id"])
    assert (beyond, "late") in drops
    assert any(in_time in ids for _, _, ids in windows)  # the late reading changed a window
    assert any(why == "duplicate" for _, why in drops)

    again = run_reading_stream(spark, lake, RULE, "eager")  # nothing new: nothing written
    assert again.windows == 0 and again.decisions == 0
    assert _streamed(lake, RULE) == expected

    explained = explain_triggered(lake, "s2", RULE)
    assert explained.windows and explained.windows[0].decision == "delete"
    assert not explained.triggered
    at_hot = T0 + timedelta(seconds=150)
    hot = explain_triggered(lake, "s2", LAZY, at=at_hot)
    assert hot.triggered and hot.windows[0].decision == "insert"
    assert all(w.avg > 90 for w in hot.windows)
    assert all(reading[2] == pytest.approx(
        readings.set_index("id").loc[reading[0], "value"]) for w in hot.windows
        for reading in w.readings)

    # housekeeping purges the readings past their retention: old windows' provenance is said
    # to be gone, and the stream goes on past the deleting commit
    assert purge_readings(lake, 0.0) == len(readings)
    with pytest.raises(ProvenanceExpiredError, match="retention"):
        explain_triggered(lake, "s2", LAZY, at=at_hot)
    ingest_files(lake, [_write(tmp_path / "readings-3.jsonl",
                               [_reading("s9", 400 + t, 50.0) for t in (0, 100)])])
    assert run_reading_stream(spark, lake, RULE, "eager").windows == 1


def test_a_micro_batch_crashed_in_its_sink_reruns_to_the_same_tables(
        spark, lake: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = _stream()
    ingest_files(lake, [_write(tmp_path / "readings.jsonl", first + second)])
    monkeypatch.setenv("ASPEN_CRASH_AT", "stream:after-drops")
    with pytest.raises(Exception) as crash:  # noqa: PT011 -- Spark wraps the injected crash
        run_reading_stream(spark, lake, RULE, "eager")
    assert "InjectedCrash" in str(crash.value) or isinstance(crash.value, InjectedCrash)
    assert deltars.table_exists(lake, READING_WINDOWS)  # the crash came after a write
    monkeypatch.delenv("ASPEN_CRASH_AT")
    run_reading_stream(spark, lake, RULE, "eager")
    assert _streamed(lake, RULE) == _oracle(lake, RULE)


def test_the_zone_rule_on_spark_equals_the_zone_state_in_process(
        spark, lake: Settings, tmp_path: Path) -> None:
    """Ariadne's running example: sensors of two 50 m zones; three sensors of zone z0_0 run
    hot within 10 s and trigger; zone z1_0 has only two hot sensors; readings of a sensor
    without a position are dropped as unknown_sensor."""
    from aspen.lake.apply_local import apply_in_process
    from aspen.streams.zones import ZoneReading, ZoneRule, ZoneState

    field = [{"op": "insert", "relation": "sensor", "id": s, "x": x, "y": 0.0}
             for s, x in (("a", 0.0), ("b", 10.0), ("c", 20.0), ("d", 60.0), ("e", 70.0))]
    rng = random.Random(3)
    rows = []
    for step in range(40):
        for sensor in "abcdeq":  # q has no position
            hot = sensor in "abde" or (sensor == "c" and step >= 20)
            rows.append(_reading(sensor, step + rng.random() / 2,
                                 round((95.0 if hot else 80.0) + rng.uniform(-2, 2), 2)))
    ingest_files(lake, [_write(tmp_path / "field.jsonl", field + rows)])
    apply_in_process(lake)  # zones come from the sensor table's positions
    rule = ZoneRule(count=5)
    report = run_reading_stream(spark, lake, rule, "eager")
    assert report.decisions > 0

    readings = deltars.read_table(lake, tables.READINGS).sort_values("id")
    zone = {"a": "z0_0", "b": "z0_0", "c": "z0_0", "d": "z1_0", "e": "z1_0"}
    expected = []
    for name in ("z0_0", "z1_0"):
        mine = readings[readings["sensor"].map(zone) == name]
        step = ZoneState().add_all(rule, [
            ZoneReading(int(i), s, int(ts.value // 1000), float(v)) for i, s, ts, v in
            zip(mine["id"], mine["sensor"], mine["ts"], mine["value"], strict=True)])
        expected += [(d.sensor, d.op, d.ids) for d in step.decisions]
    windows = deltars.read_table(lake, READING_WINDOWS)
    got = [(row["sensor"], row["decision"], tuple(window_ids(lake, row, rule)))
           for row in windows[windows["rule"] == rule.name].to_dict("records")]
    assert sorted(got) == sorted(expected)
    assert {s for s, op, _ in got if op == "insert"} == {"a", "b", "c"}  # z1_0: two only
    drops = deltars.read_table(lake, READING_DROPS)
    assert set(drops["reason"]) == {"unknown_sensor"} and set(drops["sensor"]) == {"q"}
    assert len(drops) == 40
    explained = explain_triggered(lake, "c", rule)
    assert explained.triggered

    # Replay-Lazy: the decisions keep their covering intervals only; replays give the same ids
    lazy = ZoneRule(name="zone_lazy", count=5)
    run_reading_stream(spark, lake, lazy, "lazy")
    windows = deltars.read_table(lake, READING_WINDOWS)
    replayed = [(row["sensor"], row["decision"], tuple(window_ids(lake, row, lazy)))
                for row in windows[windows["rule"] == lazy.name].to_dict("records")]
    assert sorted(replayed) == sorted(expected)
    assert {s for w in explained.windows for s in
            readings.set_index("id").loc[[i for i, _, _ in w.readings], "sensor"]} == \
        {"a", "b", "c"}
