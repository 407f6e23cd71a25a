"""The ``networks`` suites over a small lake built without Spark: random readings ingested (some
late), a network over a selected input stream run per sensor in Reduced-Eager, Replay-Lazy and
no-provenance mode, and a network run as one group. The lake passes; each corruption fails the
expectation meant to catch it.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from aspen.lake import deltars
from aspen.lake.ingest import ingest_files
from aspen.lake.tables import READINGS
from aspen.quality import run_expectations
from aspen.quality.gx_validate import GxValidator
from aspen.quality.networks import NETWORK_SUITES
from aspen.quality.outcome import Outcome
from aspen.quality.run import check_table
from aspen.quality.spec import SuiteParams
from aspen.readings.network_tables import (
    NETWORK_DROPS,
    NETWORK_OUTPUTS,
    STREAM_NETWORKS,
    run_network_locally,
)
from aspen.settings import Settings
from aspen.streams.encoding import decode_per_stream, encode_per_stream
from aspen.streams.networks import parse_network

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
WARM = {"streams": {"warm": "value > 30"}, "lateness_s": 5,
        "query": {"aggregate": {"stream": "warm"}, "window": {"seconds": 20, "slide": 10},
                  "functions": ["avg(value)", "count(value)"], "name": "w"}}
PAIRED = {"lateness_s": 5, "query": {
    "join": [{"select": {"stream": "readings"}, "where": "value > 70", "name": "hot"},
             {"aggregate": {"stream": "readings"}, "window": {"seconds": 15},
              "functions": ["min(value) AS value"], "name": "low"}],
    "within_s": 20, "key": None}}
# (network, definition, mode): one network per name, as a lake records them
RUNS = (("warm_eager", WARM, "eager"), ("warm_lazy", WARM, "lazy"),
        ("warm_none", WARM, "none"), ("paired_eager", PAIRED, "eager"))
SUITES = {s.table: s for s in NETWORK_SUITES}
IDS_CHECK = "aspen_output_ids_in_readings(provenance, cover, ids_lo, ids_hi, grp)"
DROPS_CHECK = "aspen_drop_ids_in_readings(id, sensor, ts, value)"
RECORDED = "aspen_network_recorded(network)"
MODE_RECORDED = "aspen_network_mode_recorded(network, mode)"


def _readings(seed: int) -> list[dict]:
    """Three sensors, about one reading a second for two minutes, some out of order and a few
    beyond the networks' lateness."""
    rng = random.Random(seed)
    rows = []
    for step in range(120):
        seconds = step + rng.uniform(-8, 1)
        ts = (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")
        rows.append({"op": "insert", "relation": "reading", "sensor": rng.choice(["s1", "s2",
                                                                                  "s3"]),
                     "ts": ts, "value": round(rng.uniform(0, 100), 1)})
    return rows


def _ingest(lake: Settings, root: Path, seed: int) -> None:
    path = root / f"readings-{seed}.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in _readings(seed)))
    ingest_files(lake, [path])


@pytest.fixture(scope="module")
def good_lake(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The lake (read-only: tests change copies of it or of its frames)."""
    root = tmp_path_factory.mktemp("networks")
    lake = Settings(lake=str(root / "lake"))
    _ingest(lake, root, 1)
    for name, definition, mode in RUNS:
        run_network_locally(lake, parse_network({**definition, "name": name}), mode)
    return lake


@pytest.fixture(scope="module")
def frames(good_lake: Settings) -> dict[str, pd.DataFrame]:
    return {table: deltars.read_table(good_lake, table)
            for table in (READINGS, STREAM_NETWORKS, NETWORK_OUTPUTS, NETWORK_DROPS)}


@pytest.fixture(scope="module")
def validator() -> GxValidator:
    return GxValidator()


def _copy(lake: Settings, target: Path) -> Settings:
    shutil.copytree(Path(lake.local_table_path("x")).parent, target)
    return Settings(lake=str(target))


def _failed(report) -> set[tuple[str, str]]:
    return {(o.table, o.expectation) for o in report.failures}


def test_the_lake_passes_and_covers_every_mode_and_both_partitions(good_lake, frames) -> None:
    report = run_expectations(good_lake, write=False)
    assert report.success, report.lines()
    checked = {o.table for o in report.outcomes if not o.skipped}
    assert {READINGS, STREAM_NETWORKS, NETWORK_OUTPUTS, NETWORK_DROPS} <= checked
    outputs, drops = frames[NETWORK_OUTPUTS], frames[NETWORK_DROPS]
    assert set(outputs["network"]) == {name for name, _d, _m in RUNS}
    assert set(outputs["mode"]) == {"eager", "lazy", "none"}
    assert set(outputs.loc[outputs["network"] == "paired_eager", "grp"]) == {""}
    assert set(outputs.loc[outputs["network"] == "warm_eager", "grp"]) == {"s1", "s2", "s3"}
    assert len(drops) > 0 and set(drops["network"]) == {name for name, _d, _m in RUNS}
    eager = (outputs["mode"] == "eager").sum()
    lazy = (outputs["mode"] == "lazy").sum()
    observed = {o.expectation: o.observed for o in report.outcomes}
    assert observed[IDS_CHECK] == (
        f"{eager} Reduced-Eager output(s) within retention, each with its readings' ids in "
        f"readings ({lazy} Replay-Lazy output(s) not replayed)")


def test_a_purged_prefix_of_readings_passes(good_lake, frames, tmp_path) -> None:
    lake = _copy(good_lake, tmp_path / "lake")
    first_drop = int(frames[NETWORK_DROPS]["id"].min())
    deltars.delete_where(lake, READINGS, f"id <= {first_drop}")  # and a dropped reading
    report = run_expectations(lake, write=False)
    assert report.success, report.lines()
    observed = {o.expectation: o.observed for o in report.outcomes}
    assert "past it" in observed[IDS_CHECK] and "past it" in observed[DROPS_CHECK]


def test_without_the_network_tables_they_are_skipped(tmp_path) -> None:
    lake = Settings(lake=str(tmp_path / "lake"))
    _ingest(lake, tmp_path, 2)
    report = run_expectations(lake, write=False)
    assert report.success, report.lines()
    assert {STREAM_NETWORKS, NETWORK_OUTPUTS, NETWORK_DROPS} <= {o.table for o in report.skipped}


def _eager(frame: pd.DataFrame) -> pd.Series:
    """Reduced-Eager outputs of more than two readings (any ids_lo ± 1 is then in range)."""
    lo, hi = (pd.to_numeric(frame[c]).fillna(0) for c in ("ids_lo", "ids_hi"))
    return (frame["network"] == "warm_eager") & (hi > lo + 1)


def test_a_rewritten_ids_lo_fails_the_lake(good_lake, frames, tmp_path) -> None:
    lake = _copy(good_lake, tmp_path / "lake")
    outputs = frames[NETWORK_OUTPUTS].copy()
    outputs.loc[_row(outputs, _eager), "ids_lo"] += 1
    deltars.write_table(lake, NETWORK_OUTPUTS, outputs)
    report = run_expectations(lake, write=False)  # with readings, which the lineage reads
    assert _failed(report) == {
        (NETWORK_OUTPUTS, "expect_column_pair_values_to_be_equal(ids_lo, cover_lo)"),
        (NETWORK_OUTPUTS, IDS_CHECK)}, report.lines()
    observed = {o.expectation: o.observed for o in report.outcomes}[IDS_CHECK]
    assert "1 not covered by [ids_lo, ids_hi]" in observed


def test_a_reading_deleted_from_the_middle_fails_eager_outputs(good_lake, frames,
                                                               tmp_path) -> None:
    lake = _copy(good_lake, tmp_path / "lake")
    outputs, dropped = frames[NETWORK_OUTPUTS], set(frames[NETWORK_DROPS]["id"])
    row = outputs.loc[_row(outputs, lambda f: _eager(f) & ~f["ids_lo"].isin(dropped))]
    deltars.delete_where(lake, READINGS, f"id = {int(row['ids_lo'])}")
    report = run_expectations(lake, write=False)
    assert _failed(report) == {(READINGS, "expect_column_values_to_be_between(id_step)"),
                               (NETWORK_OUTPUTS, IDS_CHECK)}, report.lines()
    observed = {o.expectation: o.observed for o in report.outcomes}[IDS_CHECK]
    assert "not in readings" in observed


# ------------------------------------------------------------------ corrupted frames


def _row(frame: pd.DataFrame, where: Callable[[pd.DataFrame], pd.Series] | None = None) -> int:
    """The index of the first row matching ``where`` (of the first row by default)."""
    return frame.index[where(frame)][0] if where is not None else frame.index[0]


def _set(column: str, value: Any, where=None):
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        frame[column] = frame[column].astype(object)
        frame.at[_row(frame, where), column] = value
        return frame

    return change


def _duplicate(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([frame, frame.iloc[[-1]]], ignore_index=True)


def _network(name: str, group: str | None = None) -> Callable[[pd.DataFrame], pd.Series]:
    def where(frame: pd.DataFrame) -> pd.Series:
        found = frame["network"] == name
        return found if group is None else found & (frame["grp"] == group)

    return where


def _lazy(frame: pd.DataFrame) -> pd.Series:
    return frame["mode"] == "lazy"


def _no_provenance(frame: pd.DataFrame) -> pd.Series:
    return frame["mode"] == "none"


def _swap_interval(frame: pd.DataFrame) -> pd.DataFrame:
    row = _row(frame, _eager)
    lo, hi = frame.at[row, "ids_lo"], frame.at[row, "ids_hi"]
    frame.at[row, "ids_lo"], frame.at[row, "ids_hi"] = hi, lo
    return frame


def _provenance_of_another_output(frame: pd.DataFrame) -> pd.DataFrame:
    other = frame.at[_row(frame, _network("warm_eager", "s2")), "provenance"]
    return _set("provenance", other, _network("warm_eager", "s1"))(frame)


def _provenance_on_a_lazy_row(frame: pd.DataFrame) -> pd.DataFrame:
    row = _row(frame, _lazy)
    ids = range(int(frame.at[row, "ids_lo"]), int(frame.at[row, "ids_hi"]) + 1)
    return _set("provenance", encode_per_stream({"warm": ids}), _lazy)(frame)


def _interval_without_provenance(frame: pd.DataFrame) -> pd.DataFrame:
    return _set("ids_lo", 1, _no_provenance)(frame)


def _a_reading_of_another_stream(readings: pd.DataFrame) -> Callable[[pd.DataFrame],
                                                                     pd.DataFrame]:
    """Adds to an eager output's ids a reading of its sensor within its interval that its
    input stream (``value > 30``) does not select."""
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        full = frame["prov_base"].isna()  # an output whose ids are a full set, not a delta
        for row in frame[(frame["network"] == "warm_eager") & full].index:
            ids = set(decode_per_stream(frame.at[row, "provenance"])["warm"])
            cold = readings[(readings["sensor"] == frame.at[row, "grp"])
                            & readings["id"].between(min(ids), max(ids))
                            & (readings["value"] <= 30)]
            if len(cold):
                ids.add(int(cold["id"].iloc[0]))
                return _set("provenance", encode_per_stream({"warm": ids}),
                            lambda f, row=row: f.index == row)(frame)
        raise AssertionError("no eager output with a cold reading inside its interval")

    return change


def _between(column: str) -> str:
    return f"expect_column_values_to_be_between({column})"


EAGER_ROWS = ' where mode == "eager"'
NOT_EAGER_ROWS = ' where mode in ["lazy", "none"]'
COVERED_ROWS = ' where mode in ["eager", "lazy"]'

# (name, table changed, change (given the readings), the (table, expectation) pairs that must
# fail, exactly)
CORRUPTIONS: list[tuple[str, str, Callable[[pd.DataFrame], Callable], set]] = [
    ("two rows for one network", STREAM_NETWORKS, lambda r: _duplicate,
     {(STREAM_NETWORKS, "expect_column_values_to_be_unique(name)")}),
    ("unknown network mode", STREAM_NETWORKS, lambda r: _set("mode", "hybrid",
                                                             _network_name("warm_none")),
     {(STREAM_NETWORKS, "expect_column_values_to_be_in_set(mode)"),
      (NETWORK_OUTPUTS, MODE_RECORDED)}),
    ("definition of another name", STREAM_NETWORKS,
     lambda r: _set("definition", json.dumps({**WARM, "name": "other"}),
                    _network_name("warm_lazy")),
     {(STREAM_NETWORKS, "aspen_network_definition_valid(name, definition)"),
      (NETWORK_OUTPUTS, RECORDED), (NETWORK_DROPS, RECORDED)}),
    ("definition not a network", STREAM_NETWORKS,
     lambda r: _set("definition", "{", _network_name("warm_eager")),
     {(STREAM_NETWORKS, "aspen_network_definition_valid(name, definition)"),
      (NETWORK_OUTPUTS, RECORDED), (NETWORK_DROPS, RECORDED)}),
    ("two rows for one output", NETWORK_OUTPUTS, lambda r: _duplicate,
     {(NETWORK_OUTPUTS, "expect_compound_columns_to_be_unique(network, output)")}),
    ("null group", NETWORK_OUTPUTS, lambda r: _set("grp", None, _lazy),
     {(NETWORK_OUTPUTS, "expect_column_values_to_not_be_null(grp)")}),
    ("ids_lo changed", NETWORK_OUTPUTS, lambda r: lambda f: _set(
        "ids_lo", int(f.at[_row(f, _eager), "ids_lo"]) + 1, _eager)(f),
     {(NETWORK_OUTPUTS, "expect_column_pair_values_to_be_equal(ids_lo, cover_lo)"),
      (NETWORK_OUTPUTS, IDS_CHECK)}),
    ("ids_hi changed on a lazy row: not replayed", NETWORK_OUTPUTS, lambda r: lambda f: _set(
        "ids_hi", int(f.at[_row(f, _lazy), "ids_hi"]) + 1, _lazy)(f),
     {(NETWORK_OUTPUTS, "expect_column_pair_values_to_be_equal(ids_hi, cover_hi)")}),
    ("ids_lo above ids_hi", NETWORK_OUTPUTS, lambda r: _swap_interval,
     {(NETWORK_OUTPUTS, "expect_column_pair_values_a_to_be_greater_than_b(ids_hi, ids_lo)"),
      (NETWORK_OUTPUTS, "expect_column_pair_values_to_be_equal(ids_lo, cover_lo)"),
      (NETWORK_OUTPUTS, "expect_column_pair_values_to_be_equal(ids_hi, cover_hi)"),
      (NETWORK_OUTPUTS, IDS_CHECK)}),
    ("a cover that is not one", NETWORK_OUTPUTS, lambda r: _set("cover", "[]", _lazy),
     {(NETWORK_OUTPUTS, "expect_column_values_to_not_be_null(cover_lo)" + COVERED_ROWS),
      (NETWORK_OUTPUTS, "expect_column_values_to_not_be_null(cover_hi)" + COVERED_ROWS)}),
    ("an interval without provenance", NETWORK_OUTPUTS, lambda r: _interval_without_provenance,
     {(NETWORK_OUTPUTS, "expect_column_values_to_be_null(ids_lo) where mode == \"none\"")}),
    ("the provenance of another output", NETWORK_OUTPUTS,
     lambda r: _provenance_of_another_output, {(NETWORK_OUTPUTS, IDS_CHECK)}),
    ("a reading its input stream does not select", NETWORK_OUTPUTS,
     _a_reading_of_another_stream, {(NETWORK_OUTPUTS, IDS_CHECK)}),
    ("undecodable provenance", NETWORK_OUTPUTS,
     lambda r: _set("provenance", b"\xff\xff", _eager), {(NETWORK_OUTPUTS, IDS_CHECK)}),
    ("an eager row without provenance", NETWORK_OUTPUTS,
     lambda r: _set("provenance", None, _eager),
     {(NETWORK_OUTPUTS, "expect_column_values_to_not_be_null(provenance)" + EAGER_ROWS),
      (NETWORK_OUTPUTS, IDS_CHECK)}),
    ("a lazy row with provenance", NETWORK_OUTPUTS, lambda r: _provenance_on_a_lazy_row,
     {(NETWORK_OUTPUTS, "expect_column_values_to_be_null(provenance)" + NOT_EAGER_ROWS)}),
    ("an eager row with empty provenance", NETWORK_OUTPUTS,
     lambda r: _set("provenance", b"", _eager),
     {(NETWORK_OUTPUTS, _between("provenance_length")), (NETWORK_OUTPUTS, IDS_CHECK)}),
    ("unknown output mode", NETWORK_OUTPUTS, lambda r: _set("mode", "hybrid", _lazy),
     {(NETWORK_OUTPUTS, "expect_column_values_to_be_in_set(mode)"),
      (NETWORK_OUTPUTS, MODE_RECORDED)}),
    ("an output of another mode than its network's", NETWORK_OUTPUTS,
     lambda r: _set("mode", "none", _lazy),
     {(NETWORK_OUTPUTS, "expect_column_values_to_be_null(ids_lo) where mode == \"none\""),
      (NETWORK_OUTPUTS, "expect_column_values_to_be_null(ids_hi) where mode == \"none\""),
      (NETWORK_OUTPUTS, MODE_RECORDED)}),
    ("an output of an unrecorded network", NETWORK_OUTPUTS,
     lambda r: _set("network", "ghost", _eager), {(NETWORK_OUTPUTS, RECORDED)}),
    ("unknown drop reason", NETWORK_DROPS, lambda r: _set("reason", "bored"),
     {(NETWORK_DROPS, "expect_column_values_to_be_in_set(reason)")}),
    ("a reading dropped twice by one network", NETWORK_DROPS, lambda r: _duplicate,
     {(NETWORK_DROPS, "expect_compound_columns_to_be_unique(network, id)")}),
    ("a dropped id not in readings", NETWORK_DROPS, lambda r: _set("id", 10_000),
     {(NETWORK_DROPS, DROPS_CHECK)}),
    ("a dropped reading of another value", NETWORK_DROPS, lambda r: _set("value", -1.0),
     {(NETWORK_DROPS, DROPS_CHECK)}),
    ("a drop of an unrecorded network", NETWORK_DROPS, lambda r: _set("network", "ghost"),
     {(NETWORK_DROPS, RECORDED)}),
]


def _network_name(name: str) -> Callable[[pd.DataFrame], pd.Series]:
    return lambda frame: frame["name"] == name


@pytest.mark.parametrize(("table", "change", "expected"),
                         [pytest.param(t, c, e, id=name) for name, t, c, e in CORRUPTIONS])
def test_each_corruption_fails_the_right_expectation(frames, validator, table, change,
                                                     expected) -> None:
    tables = dict(frames)
    tables[table] = change(frames[READINGS])(frames[table].copy())
    failed = set()
    for suite in NETWORK_SUITES:  # the other tables are those of the lake, which pass
        if suite.table == table:
            outcomes = check_table(suite, tables[table], tables, validator, SuiteParams())
        else:
            outcomes = [Outcome(suite.name, suite.table, c.expectation, *(c.check(
                tables[suite.table], tables) or (True, ""))) for c in suite.cross_checks]
        failed |= {(o.table, o.expectation) for o in outcomes if not o.success}
    assert failed == expected


def test_the_other_problems_of_an_output_say_which(frames, validator) -> None:
    tables = {**frames, NETWORK_OUTPUTS: _provenance_of_another_output(
        frames[NETWORK_OUTPUTS].copy())}
    outcomes = check_table(SUITES[NETWORK_OUTPUTS], tables[NETWORK_OUTPUTS], tables, validator,
                           SuiteParams())
    observed = {o.expectation: o.observed for o in outcomes}[IDS_CHECK]
    assert observed.startswith("1 of ") and "of another group" in observed
    assert "not covered by its cover" in observed
