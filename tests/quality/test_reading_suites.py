"""The ``readings`` suites over a small lake built without Spark: readings ingested in two files,
two rules (Reduced-Eager over sliding windows, Replay-Lazy over tumbling ones) run in process as
two micro-batches each. The lake passes; each corruption fails the expectation meant to catch it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from aspen.lake import deltars
from aspen.lake.ingest import ingest_files
from aspen.lake.tables import READINGS
from aspen.quality import run_expectations
from aspen.quality.gx_validate import GxValidator
from aspen.quality.outcome import Outcome
from aspen.quality.readings import READING_SUITES
from aspen.quality.run import check_table
from aspen.quality.spec import SuiteParams
from aspen.readings.rule_provenance import window_ids
from aspen.readings.rule_rows import StreamState, step_frame
from aspen.readings.rule_tables import (
    READING_DROPS,
    READING_RULES,
    READING_WINDOWS,
    drops_arrow,
    load_rule,
    record_rule,
    windows_arrow,
)
from aspen.settings import Settings
from aspen.streams.encoding import encode, read_header
from aspen.streams.rules import TriggerRule
from aspen.streams.windows import Reading

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
EAGER = TriggerRule(name="eager_avg", size_s=60.0, slide_s=30.0, lateness_s=10.0,
                    outlier_above=300.0)
LAZY = TriggerRule(name="lazy_avg", lateness_s=10.0)
RULES = ((EAGER, "eager"), (LAZY, "lazy"))
SUITES = {s.table: s for s in READING_SUITES}
IDS_CHECK = "aspen_window_ids_in_readings(provenance, ids_lo, ids_hi, count)"
DROPS_CHECK = "aspen_drop_ids_in_readings(id, sensor, ts, value)"


def _reading(sensor: str, seconds: float, value: float) -> dict:
    ts = (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")
    return {"op": "insert", "relation": "reading", "sensor": sensor, "ts": ts, "value": value}


def _files() -> tuple[list[dict], list[dict]]:
    """Three sensors, a reading every 7 s for five minutes, s2 hot in its second minute; the
    second file starts with a duplicate, and holds a reading late beyond the allowed lateness
    and an outlier."""
    rows = [_reading(sensor, step * 7 + n, (96.0 if sensor == "s2" and 60 <= step * 7 < 120
                                            else 80.0) + (step % 5) * 0.1)
            for step in range(43) for n, sensor in enumerate(("s1", "s2", "s3"))]
    first, second = rows[:70], rows[70:]
    late = _reading("s1", 23 * 7 - 60, 85.0)
    outlier = _reading("s3", 180.5, 500.0)
    return first, [dict(first[-1]), *second[:10], late, outlier, *second[10:]]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _micro_batch(lake: Settings, states: dict, stream_batch: int, after: int) -> None:
    """Each rule over the readings with ids above ``after``, from the sensors' states, written
    as micro-batch ``stream_batch`` (as the stream's sink writes it)."""
    readings = deltars.read_table(lake, READINGS)
    readings = readings[readings["id"] > after].sort_values("id")
    version = deltars.table_version(lake, READINGS)
    for rule, mode in RULES:
        record_rule(lake, rule, mode)
        frames = []
        for sensor, rows in readings.groupby("sensor"):
            state = states.setdefault((rule.name, sensor), StreamState.fresh(mode))
            stream = [Reading(int(i), int(ts.value // 1000), float(v)) for i, ts, v in
                      zip(rows["id"], rows["ts"], rows["value"], strict=True)]
            frames.append(step_frame(str(sensor), state.sensor.add_all(rule, stream), state))
        frame = pd.concat(frames, ignore_index=True)
        deltars.append_table(lake, READING_WINDOWS,
                             windows_arrow(rule, mode, frame, stream_batch, version))
        deltars.append_table(lake, READING_DROPS,
                             drops_arrow("rule", rule.name, frame, stream_batch))


@pytest.fixture(scope="module")
def good_lake(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The lake (read-only: tests change copies of it or of its frames)."""
    root = tmp_path_factory.mktemp("readings")
    lake = Settings(lake=str(root / "lake"))
    first, second = _files()
    states: dict = {}
    ingest_files(lake, [_write(root / "readings-1.jsonl", first)])
    _micro_batch(lake, states, 0, after=0)
    ingest_files(lake, [_write(root / "readings-2.jsonl", second)])
    _micro_batch(lake, states, 1, after=len(first))
    return lake


@pytest.fixture(scope="module")
def frames(good_lake: Settings) -> dict[str, pd.DataFrame]:
    return {s.table: deltars.read_table(good_lake, s.table) for s in READING_SUITES}


@pytest.fixture(scope="module")
def validator() -> GxValidator:
    return GxValidator()


def _copy(lake: Settings, target: Path) -> Settings:
    shutil.copytree(Path(lake.local_table_path("x")).parent, target)
    return Settings(lake=str(target))


def test_the_lake_passes_and_covers_both_modes_and_every_drop_reason(good_lake, frames) -> None:
    report = run_expectations(good_lake, write=False)
    assert report.success, report.lines()
    checked = {o.table for o in report.outcomes if not o.skipped}
    assert {READINGS, READING_RULES, READING_WINDOWS, READING_DROPS} <= checked
    windows, drops = frames[READING_WINDOWS], frames[READING_DROPS]
    assert set(windows["mode"]) == {"eager", "lazy"} and set(windows["decision"].dropna()) == {
        "insert", "delete"}
    eager = windows[windows["mode"] == "eager"]
    assert any(read_header(p).delta for p in eager["provenance"])  # deltas on a base window
    assert set(drops["reason"]) == {"late", "duplicate", "outlier"}
    observed = {o.expectation: o.observed for o in report.outcomes}
    assert observed[IDS_CHECK].startswith(f"{len(windows)} window(s) within retention")


def test_the_ids_checked_are_those_window_ids_rebuilds(good_lake, frames) -> None:
    from aspen.quality.lineage import RetainedReadings, micros
    from aspen.quality.reading_lineage import WindowIds

    windows = frames[READING_WINDOWS]
    rebuilt = WindowIds(windows, RetainedReadings.of(frames[READINGS]), frames)
    starts = micros(windows["window_start"])
    for row, start in zip(windows.to_dict("records"), starts, strict=True):
        rule = load_rule(good_lake, row["rule"])[0]
        assert rebuilt.ids(row, int(start)) == tuple(window_ids(good_lake, row, rule))


def test_a_purged_prefix_of_readings_passes(good_lake, tmp_path) -> None:
    lake = _copy(good_lake, tmp_path / "lake")
    deltars.delete_where(lake, READINGS, "id < 75")  # and a dropped one
    report = run_expectations(lake, suites=READING_SUITES, write=False)
    assert report.success, report.lines()
    observed = {o.expectation: o.observed for o in report.outcomes}
    assert "past it" in observed[IDS_CHECK] and "past it" in observed[DROPS_CHECK]


def test_a_reading_deleted_from_the_middle_fails_readings_and_windows(good_lake, tmp_path) -> None:
    lake = _copy(good_lake, tmp_path / "lake")
    deltars.delete_where(lake, READINGS, "id = 100")
    report = run_expectations(lake, suites=READING_SUITES, write=False)
    failed = {(o.table, o.expectation) for o in report.failures}
    assert failed == {(READINGS, "expect_column_values_to_be_between(id_step)"),
                      (READING_WINDOWS, IDS_CHECK)}, report.lines()


def test_without_the_stream_tables_only_readings_is_checked(tmp_path) -> None:
    lake = Settings(lake=str(tmp_path / "lake"))
    ingest_files(lake, [_write(tmp_path / "r.jsonl", _files()[0])])
    report = run_expectations(lake, suites=READING_SUITES, write=False)
    assert report.success, report.lines()
    assert {o.table for o in report.skipped} == {READING_RULES, READING_WINDOWS, READING_DROPS}


# ------------------------------------------------------------------ corrupted frames


def _row(frame: pd.DataFrame, where: Callable[[pd.DataFrame], pd.Series] | None = None) -> int:
    """The index of the first row matching ``where`` (of the first row by default)."""
    return frame.index[where(frame)][0] if where is not None else frame.index[0]


def _set(column: str, value, where=None):
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        frame[column] = frame[column].astype(object)
        frame.at[_row(frame, where), column] = value
        return frame

    return change


def _both(*changes):
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        for one in changes:
            frame = one(frame)
        return frame

    return change


def _duplicate(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([frame, frame.iloc[[-1]]], ignore_index=True)


def _last(frame: pd.DataFrame) -> pd.Series:
    """The last reading: in windows still open, so in no window written and never dropped."""
    return frame["id"] == frame["id"].max()


def _without_a_counted_reading(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["id"] != 20]


def _lazy(frame: pd.DataFrame) -> pd.Series:
    return frame["mode"] == "lazy"


def _eager(frame: pd.DataFrame) -> pd.Series:
    return frame["mode"] == "eager"


def _provenance_on_a_lazy_row(frame: pd.DataFrame) -> pd.DataFrame:
    row = _row(frame, _lazy)
    data = encode(tuple(range(int(frame.at[row, "ids_lo"]), int(frame.at[row, "ids_hi"]) + 1)))
    return _both(_set("provenance", data, _lazy), _set("prov_bytes", len(data), _lazy))(frame)


def _avg_above_max(frame: pd.DataFrame) -> pd.DataFrame:
    return _set("avg", float(frame.at[_row(frame), "max"]) + 1.0)(frame)


def _swap_interval(frame: pd.DataFrame) -> pd.DataFrame:
    row = _row(frame)
    lo, hi = frame.at[row, "ids_lo"], frame.at[row, "ids_hi"]
    return _both(_set("ids_lo", hi), _set("ids_hi", lo))(frame)


def _between(column: str, where: str = "") -> str:
    return f"expect_column_values_to_be_between({column}){where}"


LAZY_ROWS = ' where mode == "lazy"'
EAGER_ROWS = ' where mode == "eager"'

# (name, table changed, change, the (table, expectation) pairs that must fail, exactly)
CORRUPTIONS = [
    ("duplicated reading id", READINGS, _duplicate,
     {(READINGS, "expect_column_values_to_be_unique(id)"), (READINGS, _between("id_step"))}),
    ("a gap in the reading ids", READINGS, _without_a_counted_reading,
     {(READINGS, _between("id_step")), (READING_WINDOWS, IDS_CHECK)}),
    ("null reading id", READINGS, _set("id", None, _last),
     {(READINGS, "expect_column_values_to_not_be_null(id)")}),
    ("infinite value", READINGS, _set("value", float("inf"), _last),
     {(READINGS, _between("value"))}),
    ("value beyond 1e15", READINGS, _set("value", -2e15, _last),
     {(READINGS, _between("value"))}),
    ("NaN value", READINGS, _set("value", float("nan"), _last),
     {(READINGS, "expect_column_values_to_not_be_null(value)")}),
    ("blank sensor", READINGS, _set("sensor", " ", _last),
     {(READINGS, "expect_column_values_to_match_regex(sensor)")}),
    ("ts from 2200 on", READINGS, _set("ts", pd.Timestamp("2200-01-01", tz="UTC"), _last),
     {(READINGS, _between("ts"))}),
    ("avg above max", READING_WINDOWS, _avg_above_max,
     {(READING_WINDOWS, _between("avg_above_max")), (READING_WINDOWS, _between("sum_error"))}),
    ("sum not avg·count", READING_WINDOWS, _set("sum", 1.0), {(READING_WINDOWS, _between(
        "sum_error"))}),
    ("min above max", READING_WINDOWS, _set("min", 1e6),
     {(READING_WINDOWS, "expect_column_pair_values_a_to_be_greater_than_b(max, min)"),
      (READING_WINDOWS, _between("avg_below_min"))}),
    ("count 0", READING_WINDOWS, _set("count", 0),
     {(READING_WINDOWS, _between("count")), (READING_WINDOWS, _between("sum_error")),
      (READING_WINDOWS, IDS_CHECK)}),
    ("empty window", READING_WINDOWS, lambda f: _set("window_end", f.at[_row(f),
                                                                        "window_start"])(f),
     {(READING_WINDOWS, "expect_column_pair_values_a_to_be_greater_than_b(window_end, "
                        "window_start)"), (READING_WINDOWS, IDS_CHECK)}),
    ("ids_lo above ids_hi", READING_WINDOWS, _swap_interval,
     {(READING_WINDOWS, "expect_column_pair_values_a_to_be_greater_than_b(ids_hi, ids_lo)"),
      (READING_WINDOWS, IDS_CHECK)}),
    ("unknown decision", READING_WINDOWS, _set("decision", "maybe"),
     {(READING_WINDOWS, "expect_column_values_to_be_in_set(decision)")}),
    ("unknown mode", READING_WINDOWS, _set("mode", "hybrid", _lazy),
     {(READING_WINDOWS, "expect_column_values_to_be_in_set(mode)"),
      (READING_WINDOWS, IDS_CHECK)}),
    ("a lazy row with provenance", READING_WINDOWS, _provenance_on_a_lazy_row,
     {(READING_WINDOWS, "expect_column_values_to_be_null(provenance)" + LAZY_ROWS),
      (READING_WINDOWS, _between("prov_bytes", LAZY_ROWS))}),
    ("an eager row without provenance", READING_WINDOWS,
     _both(_set("provenance", None, _eager), _set("prov_bytes", 0, _eager)),
     {(READING_WINDOWS, "expect_column_values_to_not_be_null(provenance)" + EAGER_ROWS),
      (READING_WINDOWS, IDS_CHECK)}),
    ("prov_bytes not the length", READING_WINDOWS, _set("prov_bytes", 999, _eager),
     {(READING_WINDOWS, "expect_column_pair_values_to_be_equal(prov_bytes, provenance_length)")}),
    ("two rows for one window", READING_WINDOWS, _duplicate,
     {(READING_WINDOWS, "expect_compound_columns_to_be_unique(rule, sensor, window_start)")}),
    ("a window of an unrecorded rule", READING_WINDOWS, _set("rule", "ghost", _lazy),
     {(READING_WINDOWS, "aspen_rule_recorded(rule)"), (READING_WINDOWS, IDS_CHECK)}),
    ("unknown drop reason", READING_DROPS, _set("reason", "bored"),
     {(READING_DROPS, "expect_column_values_to_be_in_set(reason)")}),
    ("a reading dropped twice by one rule", READING_DROPS, _duplicate,
     {(READING_DROPS, "expect_compound_columns_to_be_unique(rule, id)")}),
    ("a dropped id not in readings", READING_DROPS, _set("id", 10_000),
     {(READING_DROPS, DROPS_CHECK)}),
    ("a dropped reading of another value", READING_DROPS, _set("value", -1.0),
     {(READING_DROPS, DROPS_CHECK)}),
    ("unknown rule mode", READING_RULES, _set("mode", "hybrid"),
     {(READING_RULES, "expect_column_values_to_be_in_set(mode)")}),
    ("broken rule definition", READING_RULES, _set("definition", '{"name": "other"}'),
     {(READING_RULES, "aspen_rule_definition_valid(name, definition)")}),
]


@pytest.mark.parametrize(("table", "change", "expected"),
                         [pytest.param(t, c, e, id=name) for name, t, c, e in CORRUPTIONS])
def test_each_corruption_fails_the_right_expectation(frames, validator, table, change,
                                                     expected) -> None:
    tables = dict(frames)
    tables[table] = change(frames[table].copy())
    failed = set()
    for suite in READING_SUITES:  # the other tables are those of the lake, which pass
        if suite.table == table:
            outcomes = check_table(suite, tables[table], tables, validator, SuiteParams())
        else:
            outcomes = [Outcome(suite.name, suite.table, c.expectation, *(c.check(
                tables[suite.table], tables) or (True, ""))) for c in suite.cross_checks]
        failed |= {(o.table, o.expectation) for o in outcomes if not o.success}
    assert failed == expected


def test_a_window_of_a_missing_reading_says_which(frames, validator) -> None:
    tables = {**frames, READINGS: _without_a_counted_reading(frames[READINGS])}
    outcomes = check_table(SUITES[READING_WINDOWS], frames[READING_WINDOWS], tables, validator,
                           SuiteParams())
    observed = {o.expectation: o.observed for o in outcomes}[IDS_CHECK]
    assert "not in readings" in observed and "count differs" in observed  # eager, lazy


def test_rounding_in_the_aggregates_is_not_an_error(frames, validator) -> None:
    windows = frames[READING_WINDOWS].iloc[[0]].copy()
    total = 0.1 + 0.1 + 0.1  # 0.30000000000000004: avg = total / 3 is above 0.1
    windows = windows.assign(count=3, sum=total, min=0.1, max=0.1, avg=total / 3)
    assert total / 3 > 0.1
    outcomes = validator.validate(SUITES[READING_WINDOWS], windows)
    assert [o.line() for o in outcomes if not o.success] == []


def test_a_zone_alarm_s_windows_pass(frames, validator) -> None:
    """A zone alarm's ids span its zone's sensors and their count windows: only their number,
    covering interval and presence in readings are checked."""
    from aspen.readings.rule_rows import zone_step_frame
    from aspen.readings.rule_tables import rule_json
    from aspen.streams.zones import ZoneReading, ZoneRule, ZoneState

    rule = ZoneRule(name="zone_alarm", count=3, sensors=1, within_s=30.0)
    readings = frames[READINGS].sort_values("id")
    stream = [ZoneReading(int(i), str(s), int(ts.value // 1000), float(v)) for i, s, ts, v in
              zip(readings["id"], readings["sensor"], readings["ts"], readings["value"],
                  strict=True)]
    rows = zone_step_frame(rule, "z0_0", stream, ZoneState())
    zone = windows_arrow(rule, "eager", rows, 0, 1).to_pandas()
    assert set(zone["decision"]) == {"insert", "delete"}
    recorded = frames[READING_RULES].iloc[[0]].assign(name=rule.name, definition=rule_json(rule),
                                                      mode="eager")
    tables = {**frames,
              READING_WINDOWS: pd.concat([frames[READING_WINDOWS], zone], ignore_index=True),
              READING_RULES: pd.concat([frames[READING_RULES], recorded], ignore_index=True)}
    outcomes = check_table(SUITES[READING_WINDOWS], tables[READING_WINDOWS], tables, validator,
                           SuiteParams())
    assert [o.line() for o in outcomes if not o.success] == []
