"""The lake's status at a glance (``dashboards/status/``, ``dashboards/lakewatch.py``): exact
results on tiny literal frames, and the fingerprint of a real small lake written with delta-rs."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from aspen.lake.deltars import write_table
from aspen.pipeline.batch import registry_through_rows
from aspen.settings import Settings

DASHBOARDS = Path(__file__).resolve().parents[2] / "dashboards"
sys.path.insert(0, str(DASHBOARDS))
import lakewatch  # noqa: E402
import paging  # noqa: E402
import status  # noqa: E402
from status import (  # noqa: E402
    Backlog,
    ExpectationSummary,
    Freshness,
    Latency,
)

T0 = pd.Timestamp("2026-03-01 12:00", tz="UTC")


def at(minutes: float) -> pd.Timestamp:
    return T0 + pd.Timedelta(minutes=minutes)


# -- words ----------------------------------------------------------------------------------------


def test_durations_and_ages_read_as_an_operator_says_them() -> None:
    assert [status.duration_text(s) for s in (0.04, 2.5, 42, 119, 180, 3 * 3600, 3 * 86400)] == [
        "0.04 s", "2.5 s", "42 s", "119 s", "3 min", "3 h", "3 d"]
    assert [status.age_text(s) for s in (0.2, 3.4, 42, 150, 7200, 90000, None)] == [
        "just now", "3 s ago", "42 s ago", "2 min ago", "2 h ago", "25 h ago", "–"]
    assert status.duration_text(float("nan")) == "–"
    assert status.clock_text(at(1.5)) == "12:01:30"


# -- freshness ------------------------------------------------------------------------------------


def test_freshness_is_the_last_committed_batch_and_its_age() -> None:
    ledger = pd.DataFrame({"batch_id": [2, 1], "through_ingest_batch": [5, 3],
                           "committed_at": [at(0), at(-10)]})
    fresh = status.freshness(ledger, at(0) + pd.Timedelta(seconds=42))
    assert fresh == Freshness(2, 5, at(0), 42.0)
    assert fresh.text() == ("views current as of maintained batch 2 (through ingest batch 5), "
                            "committed 42 s ago")
    assert status.freshness(ledger.iloc[:0], T0) == Freshness(None, -1, None, None)
    assert status.freshness(None, T0).text() == "no batch has been maintained yet"


# -- backlog --------------------------------------------------------------------------------------


def _ingest_files() -> pd.DataFrame:
    """Ingest batches 1–4 (the second file of batch 2 has readings only), a minute apart."""
    return pd.DataFrame({"batch_id": [1, 2, 2, 3, 4], "valid": [100, 6, 0, 2, 9],
                         "ingested_at": [at(0), at(1), at(1), at(2), at(3)]})


def test_backlog_counts_unapplied_batches_and_applied_ones_no_batch_covers() -> None:
    # 4 is not applied; 3 is applied and changed the registry after batch 2, the last covered
    waiting = status.backlog(_ingest_files(), applied_through=3, maintained_through=2,
                             registry_through=3, now=at(12))
    assert waiting == Backlog((3, 4), 11, at(2), 600.0)
    assert waiting.text() == "11 updates in 2 ingest batches waiting, the oldest for 10 min"


def test_an_applied_batch_that_changed_nothing_is_not_waiting() -> None:
    # batch 4 deleted tuples that were dead already: applied, the registry's last change is 3
    waiting = status.backlog(_ingest_files(), applied_through=4, maintained_through=3,
                             registry_through=3, now=at(12))
    assert waiting == Backlog((), 0, None, None)
    assert waiting.text() == "nothing waiting"


def test_a_fresh_lake_waits_for_every_ingest_batch() -> None:
    waiting = status.backlog(_ingest_files(), applied_through=0, maintained_through=-1,
                             registry_through=-1, now=at(3))
    assert waiting.batches == (1, 2, 3, 4) and waiting.updates == 117 and waiting.age_s == 180
    assert status.backlog(None, 0, -1, -1, T0) == Backlog((), 0, None, None)


def test_last_applied_and_registry_through() -> None:
    assert status.last_applied(pd.DataFrame({"batch_id": [2, 7, 5]})) == 7
    assert status.last_applied(pd.DataFrame({"batch_id": []})) == 0
    registry = pd.DataFrame({"inserted_batch": [1, 3],
                             "deleted_batch": pd.array([None, 6], dtype="Int64")})
    assert registry_through_rows(registry) == 6
    assert registry_through_rows(registry.iloc[:0]) == -1
    assert registry_through_rows(None) == -1


# -- latency --------------------------------------------------------------------------------------


def test_the_slow_batch_rule() -> None:
    wall = pd.Series({1: 2.0, 2: 1.0, 3: 94.0, 4: 3.0, 5: 8.0, 6: 12.0, 7: 61.0, 8: None})
    flags = status.slow_batches(wall).set_index("batch_id")
    # 3: 94 s > 3 × median 1.5 s and > 10 s; 5: 8 s > 3 × 2.5 s but under the 10 s floor;
    # 6: 12 s > 3 × the median 3 s and > 10 s; 7: over the 60 s limit whatever the median
    assert flags["slow"].to_dict() == {1: False, 2: False, 3: True, 4: False, 5: False,
                                       6: True, 7: True, 8: False}
    assert flags.loc[3, "median_before"] == 1.5
    assert flags.loc[6, "median_before"] == 3.0


def test_a_first_batch_is_slow_only_over_the_absolute_limit() -> None:
    assert status.slow_batches(pd.Series({1: 59.0}))["slow"].tolist() == [False]
    assert status.slow_batches(pd.Series({1: 181.0}))["slow"].tolist() == [True]


def test_the_median_looks_back_a_window_of_batches() -> None:
    # 20 batches of 10 s, then 20 of 1 s: batch 41's median is of the last 20 (1 s)
    wall = pd.Series([10.0] * 20 + [1.0] * 20 + [12.0], index=range(1, 42))
    flags = status.slow_batches(wall).set_index("batch_id")
    assert flags.loc[41, "median_before"] == 1.0 and bool(flags.loc[41, "slow"])


def test_latency_summarises_the_last_batch_and_the_trend() -> None:
    wall = pd.Series([1.0] * 10 + [2.0] * 9 + [94.0], index=range(1, 21))
    late = status.latency(wall)
    # the median before batch 20 is of batches 1–19: ten of 1 s, nine of 2 s
    assert late == Latency(20, 94.0, True, 1.0, 2.0, 10, 1.0, (20,))
    assert late.trend_text() == "median 2.0 s over the last 10 batches, up from 1.0 s"
    assert late.slow_text() == ("the last maintained batch (20) took 94 s, over 3× the median "
                                "1.0 s of the batches before it")
    steady = status.latency(pd.Series([1.0, 1.05, 0.98], index=[1, 2, 3]))
    assert not steady.slow and steady.previous_median is None
    assert steady.trend_text() == "median 1.0 s over the last 3 batches"
    assert status.latency(pd.Series([None, None], index=[1, 2], dtype="float64")) == Latency(
        None, None, False, None, None, 0, None, ())


def test_stuck_batches_are_uncommitted_metrics_older_than_the_grace() -> None:
    metrics = pd.DataFrame({"batch_id": [1, 2, 3, 3, 4]})
    written = at(0)
    assert status.stuck_batches(metrics, 2, written, at(6)) == [3, 4]
    assert status.stuck_batches(metrics, 2, written, at(4)) == []  # may be committing now
    assert status.stuck_batches(metrics, 4, written, at(60)) == []
    assert status.stuck_batches(None, 0, written, at(60)) == []


def test_cumulative_counters_are_not_a_batch_count() -> None:
    numbers = pd.DataFrame({"runtime": ["local", "local", "spark"],
                            "messages": [900.0, 960.0, 40.0]})
    assert status.per_batch_counter(numbers, "messages").isna().tolist() == [True, True, False]
    assert status.per_batch_counter(numbers.drop(columns="runtime"), "messages").tolist() == [
        900.0, 960.0, 40.0]


def test_only_series_that_vary_are_worth_a_chart() -> None:
    assert not status.worth_charting(pd.Series([0.0, 0.0, 0.0]))
    assert not status.worth_charting(pd.Series([5.0, 5.0]))
    assert not status.worth_charting(pd.Series([7.0]))
    assert not status.worth_charting(pd.Series([None, 3.0]))
    assert status.worth_charting(pd.Series([1.0, 2.0]))


# -- expectations ---------------------------------------------------------------------------------


def test_observed_json_reads_as_key_value_text() -> None:
    assert status.observed_text('{"unexpected_count": 2, "element_count": 811}') == \
        "unexpected_count: 2, element_count: 811"
    assert status.observed_text('{"partial": {"a": 1}, "values": [1, 2]}') == \
        "partial: a: 1, values: 1, 2"
    assert status.observed_text("{not json") == "{not json"
    assert status.observed_text("0 of 811 unexpected") == "0 of 811 unexpected"
    assert status.observed_text(float("nan")) == ""


def _results() -> pd.DataFrame:
    return pd.DataFrame({
        "batch_id": [1, 2, 2, 2],
        "suite": ["s", "s", "s", "v"],
        "table": ["link", "link", "link", "reachable"],
        "expectation": ["retired", "not_null", "between", "rows"],
        "success": [False, True, False, True],
        "observed": ["x", '{"nulls": 0}', "min -1", "3 rows"],
        "checked_at": [at(0), at(1), at(1), at(1)],
    })


def test_the_latest_batch_checked_with_stale_results_marked() -> None:
    latest = status.latest_expectations(_results(), committed_batch=3)
    # batch 1's failure is of an expectation no longer checked: it stays out
    assert latest[["expectation", "batch_id", "success", "observed", "stale"]].values.tolist() == [
        ["between", 2, False, "min -1", True],
        ["not_null", 2, True, "nulls: 0", True],
        ["rows", 2, True, "3 rows", True],
    ]
    assert list(latest.columns) == status.EXPECTATION_COLUMNS
    summary = status.expectation_summary(latest)
    assert summary == ExpectationSummary(checked=3, failed=1, stale=3, batch=2)
    assert summary.text() == "1 of 3 expectations failed (maintained batch 2)"
    assert not status.latest_expectations(_results(), committed_batch=2)["stale"].any()
    assert not status.latest_expectations(_results(), committed_batch=None)["stale"].any()
    assert status.latest_expectations(None, 3).empty
    assert status.expectation_summary(status.latest_expectations(None, 3)).text() == \
        "no expectation checked yet"


# -- quarantine -----------------------------------------------------------------------------------


def _quarantine() -> pd.DataFrame:
    return pd.DataFrame({
        "batch_id": [1, 1, 2, 2, 3],
        "source": ["a.jsonl", "a.jsonl", "b.csv", "b.csv", "c.jsonl"],
        "line": [3, 9, 2, 5, 1],
        "reason": ["line 3: cost -1", "line 9: ts ?", "line 2: cost nan", "line 5: odd thing",
                   "line 1: odd thing"],
        "code": ["bad_cost", "bad_ts", "bad_cost", None, ""],
        "ingested_at": [at(-2000), at(-2000), at(-30), at(-30), at(-1)],
    })


def test_reasons_are_codes_else_the_message_without_its_line() -> None:
    assert status.reason_of("duplicate", "line 4: seen before") == "duplicate"
    assert status.reason_of(None, "line 12: odd thing") == "odd thing"
    assert status.reason_of("  ", "no line prefix") == "no line prefix"
    assert status.reason_of(None, None) == "(no reason)"


def test_quarantine_grouped_by_reason_code_newest_first() -> None:
    table = status.quarantine_by_reason(_quarantine())
    assert list(table.columns) == ["reason", "records", "latest batch", "example",
                                   "second example"]
    assert table.values.tolist() == [
        ["odd thing", 2, 3, "c.jsonl line 1: odd thing", "b.csv line 5: odd thing"],
        ["bad_cost", 2, 2, "b.csv line 2: cost nan", "a.jsonl line 3: cost -1"],
        ["bad_ts", 1, 1, "a.jsonl line 9: ts ?", ""],
    ]
    assert status.quarantine_by_reason(_quarantine().iloc[:0]).empty


def test_new_quarantine_by_reason_code() -> None:
    recent = status.recent_rows(_quarantine(), "ingested_at", T0)  # the last 24 h
    assert recent["line"].tolist() == [2, 5, 1]
    assert status.reason_counts(recent) == {"odd thing": 2, "bad_cost": 1}
    # without an ingest time, the last three batches
    assert len(status.recent_rows(_quarantine().drop(columns="ingested_at"), "ingested_at",
                                  T0)) == 5
    assert status.reason_counts(_quarantine().iloc[:0]) == {}


def test_newest_first_orders_by_ingest_then_batch_then_file_and_line() -> None:
    rows = status.newest_first(_quarantine())
    assert rows["line"].tolist() == [1, 2, 5, 3, 9]


# -- deaths ---------------------------------------------------------------------------------------


def _registry() -> pd.DataFrame:
    return pd.DataFrame({
        "relation": ["link", "link", "link", "sensor", "sensor", "link", "triggered"],
        "key": ['["a","b"]', '["b","c"]', '["b","c"]', '["s1"]', '["s2"]', '["c","d"]',
                '["s1"]'],
        "values": ['["a","b",1.0]', '["b","c",2.0]', '["b","c",5.0]', '["s1",0,0]',
                   '["s2",1,1]', '["c","d",1.0]', '["s1"]'],
        "deleted_batch": pd.array([4, 4, None, 3, 2, 4, 4], dtype="Int64"),
        "death": ["expired", "deleted", None, "deleted", "deleted", "replaced", "deleted"],
    })


def test_recent_deaths_are_links_and_sensors_still_dead() -> None:
    deaths = status.recent_deaths(_registry(), [4, 3])
    # b → c died but lives on; c → d was replaced (a new cost); s2 died in an older batch
    assert deaths.values.tolist() == [["link", "a → b", "expired", 4],
                                      ["sensor", "s1", "deleted", 3]]
    assert len(status.recent_deaths(_registry(), [4, 3], still_dead=False)) == 3
    assert status.recent_deaths(_registry(), []).empty
    assert status.recent_deaths(None, [4]).empty


def test_recent_ingest_batches_go_by_ingest_time() -> None:
    assert status.recent_ingest_batches(_ingest_files(), at(2) + pd.Timedelta(hours=24)) == [
        4, 3]
    assert status.recent_ingest_batches(_ingest_files().drop(columns="ingested_at"), T0) == [
        4, 3, 2]
    assert status.recent_ingest_batches(None, T0) == []


# -- the light ------------------------------------------------------------------------------------

FRESH = Freshness(3, 5, at(0), 42.0)
NOTHING = Backlog((), 0, None, None)
QUICK = Latency(3, 1.0, False, 1.0, 1.0, 3, None, ())
PASSED = ExpectationSummary(5, 0, 0, 3)


def test_green_says_why_in_one_line() -> None:
    light = status.traffic_light(fresh=FRESH, waiting=NOTHING, late=QUICK, expectations=PASSED)
    assert light == status.Light("green", (
        "views current as of maintained batch 3 (through ingest batch 5), committed 42 s ago; "
        "nothing waiting; "
        "all 5 expectations passed (maintained batch 3)",))
    young = Backlog((6,), 4, at(0), 30.0)  # ingested a moment ago: the maintainer is on it
    assert status.traffic_light(fresh=FRESH, waiting=young, late=QUICK,
                                expectations=PASSED).colour == "green"
    unchecked = ExpectationSummary(0, 0, 0, None)
    assert status.traffic_light(fresh=FRESH, waiting=NOTHING, late=QUICK,
                                expectations=unchecked).colour == "green"


@pytest.mark.parametrize(("change", "reason"), [
    ({"waiting": Backlog((6, 7), 4, at(0), 900.0)},
     "4 updates in 2 ingest batches waiting, the oldest for 15 min"),
    ({"late": Latency(3, 94.0, True, 1.5, 2.0, 3, None, (3,))},
     "the last maintained batch (3) took 94 s, over 3× the median 1.5 s of the batches before it"),
    ({"expectations": ExpectationSummary(5, 0, 5, 2)},
     "the expectations were last checked on maintained batch 2; the views are at "
     "maintained batch 3"),
    ({"new_quarantine": 1}, "1 record quarantined in the last 24 h"),
    ({"unreadable": 2}, "2 tables cannot be read (see Internals)"),
    ({"fresh": Freshness(None, -1, None, None)}, "no batch has been maintained yet"),
])
def test_amber_and_its_reason(change: dict[str, object], reason: str) -> None:
    arguments: dict[str, object] = {"fresh": FRESH, "waiting": NOTHING, "late": QUICK,
                                    "expectations": PASSED, **change}
    assert status.traffic_light(**arguments) == status.Light("amber", (reason,))  # type: ignore


@pytest.mark.parametrize(("change", "reason"), [
    ({"expectations": ExpectationSummary(5, 2, 0, 3)},
     "2 of 5 expectations failed (maintained batch 3)"),
    ({"stuck": [4]}, "maintained batch 4 wrote its metrics but never committed: it failed "
                     "before its commit (run the maintainer again)"),
    ({"waiting": Backlog((6,), 1, at(0), 7200.0)},
     "1 update in 1 ingest batch waiting, the oldest for 2 h: is the maintainer running?"),
])
def test_red_and_its_reason(change: dict[str, object], reason: str) -> None:
    arguments: dict[str, object] = {"fresh": FRESH, "waiting": NOTHING, "late": QUICK,
                                    "expectations": PASSED, **change}
    assert status.traffic_light(**arguments) == status.Light("red", (reason,))  # type: ignore


def test_red_reasons_come_before_amber_ones() -> None:
    light = status.traffic_light(fresh=FRESH, waiting=NOTHING, late=QUICK,
                                 expectations=ExpectationSummary(5, 1, 5, 2), new_quarantine=3)
    assert light.colour == "red"
    assert light.reasons == ("1 of 5 expectations failed (maintained batch 2)",
                             "the expectations were last checked on maintained batch 2; the "
                             "views are at maintained batch 3",
                             "3 records quarantined in the last 24 h")


# -- the fingerprint ------------------------------------------------------------------------------


def _append(settings: Settings, name: str, value: int) -> None:
    write_table(settings, name, pd.DataFrame({"batch_id": [value]}), mode="append")


def test_the_fingerprint_changes_with_a_new_version_and_only_then(tmp_path: Path) -> None:
    settings = Settings(lake=str(tmp_path / "lake"))
    assert lakewatch.lake_fingerprint(settings) == ()
    _append(settings, "quarantine", 1)
    _append(settings, "ledger", 1)
    first = lakewatch.lake_fingerprint(settings)
    assert first == (("ledger", 0), ("quarantine", 0))
    assert lakewatch.lake_fingerprint(settings) == first
    assert not lakewatch.lake_moved(first, settings)

    _append(settings, "quarantine", 2)
    second = lakewatch.lake_fingerprint(settings)
    assert second == (("ledger", 0), ("quarantine", 1))
    assert lakewatch.lake_moved(first, settings)
    assert not lakewatch.lake_moved(second, settings)
    assert not lakewatch.lake_moved(None, settings)


def test_leases_and_uncommitted_view_writes_do_not_move_the_lake(tmp_path: Path) -> None:
    settings = Settings(lake=str(tmp_path / "lake"))
    _append(settings, "ledger", 1)
    before = lakewatch.lake_fingerprint(settings)
    _append(settings, "maintainer_lease", 1)  # a renewal
    _append(settings, "reachable", 1)  # a view a running batch wrote: shown once committed
    assert lakewatch.lake_fingerprint(settings) == before
    assert not lakewatch.lake_moved(before, settings)


def test_a_table_that_cannot_be_read_has_a_steady_mark(tmp_path: Path) -> None:
    settings = Settings(lake=str(tmp_path / "lake"))
    _append(settings, "ledger", 1)
    broken = tmp_path / "lake" / "broken" / "_delta_log"
    broken.mkdir(parents=True)
    (broken / "00000000000000000000.json").write_text("not a delta log\n")
    first = lakewatch.lake_fingerprint(settings)
    assert first == (("broken", -1), ("ledger", 0))
    assert not lakewatch.lake_moved(first, settings)


def test_the_refresh_interval_comes_from_the_environment() -> None:
    assert lakewatch.refresh_interval({}) == lakewatch.REFRESH_S == 5.0
    assert lakewatch.refresh_interval({"ASPEN_DASHBOARD_REFRESH_S": "2"}) == 2.0
    assert lakewatch.refresh_interval({"ASPEN_DASHBOARD_REFRESH_S": "0"}) is None
    assert lakewatch.refresh_interval({"ASPEN_DASHBOARD_REFRESH_S": "-1"}) is None
    assert lakewatch.refresh_interval({"ASPEN_DASHBOARD_REFRESH_S": "often"}) == 5.0
    assert lakewatch.refresh_interval({"ASPEN_DASHBOARD_REFRESH_S": "inf"}) == 5.0


# -- paging ---------------------------------------------------------------------------------------


def test_pages_hold_every_row_once() -> None:
    frame = pd.DataFrame({"n": range(7)})
    pages = [paging.page_of(frame, page, 3) for page in (1, 2, 3)]
    assert [list(rows["n"]) for rows, *_ in pages] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [p[1:] for p in pages] == [(1, 3, 3), (4, 6, 3), (7, 7, 3)]
    assert paging.page_of(frame, 9, 3)[1:] == (7, 7, 3)  # clamped to the last page
    assert paging.page_of(frame, 0, 3)[1:] == (1, 3, 3)
    assert paging.page_of(frame.iloc[:0], 1, 3)[1:] == (0, 0, 1)
