"""The quality gate over a real maintained lake: it passes, and each corruption fails the right
expectation (and only in the corrupted table or the tables checked against it)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from aspen.cli.main import main as aspen_main
from aspen.lake.committed import GOVERNED_TABLES
from aspen.lake.deltars import read_table, table_version, write_table
from aspen.quality import RESULTS_TABLE, run_expectations
from aspen.settings import Settings

pytestmark = pytest.mark.spark

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULT_COLUMNS = ["batch_id", "suite", "table", "expectation", "success", "observed", "checked_at"]


def test_the_maintained_lake_passes_and_the_results_are_recorded(lake_copy) -> None:
    lake = lake_copy()
    report = run_expectations(lake)
    assert report.success, report.lines()
    assert report.batch_id == 1  # a lake without readings: their suites are skipped
    assert {o.table for o in report.skipped} == {
        "readings", "reading_rules", "reading_windows", "reading_drops",
        "stream_networks", "network_outputs", "network_drops"}
    assert {o.table for o in report.outcomes if not o.skipped} == {
        "updates", "link", "sensor", "triggered", "region_seed", "variables",
        "reachable", "min_cost", "min_hops", "cheapest_path", "fewest_hops",
        "shortest_cheapest_path", "active_region", "region_sizes", "largest_regions",
    }
    results = read_table(lake, RESULTS_TABLE)
    assert list(results.columns) == RESULT_COLUMNS
    assert str(results["checked_at"].dtype) == "datetime64[us, UTC]"
    assert results["batch_id"].dtype == "int64" and results["success"].dtype == bool
    assert set(results["batch_id"]) == {1} and len(results) == len(report.outcomes)
    assert "expect_compound_columns_to_be_unique(src, dst)" in set(
        results.loc[results["table"] == "min_cost", "expectation"]
    )
    first_check = results["checked_at"].iloc[0]

    # a rerun for the same batch replaces that batch's rows
    run_expectations(lake)
    again = read_table(lake, RESULTS_TABLE)
    assert len(again) == len(results) and set(again["checked_at"]) != {first_check}


def _update(table: str, change: Callable[[pd.DataFrame], pd.DataFrame]):
    def corrupt(lake: Settings) -> None:
        write_table(lake, table, change(read_table(lake, table).copy()))
        if table in GOVERNED_TABLES:  # a batch that committed bad rows: readers see them
            _commit_latest(lake, table)

    return corrupt


def _commit_latest(lake: Settings, table: str) -> None:
    """Record ``table``'s latest version in the last ledger row, as if its batch wrote it."""
    ledger = read_table(lake, "ledger").sort_values("batch_id").reset_index(drop=True)
    versions = json.loads(ledger.loc[len(ledger) - 1, "table_versions"])
    versions[table] = table_version(lake, table)
    ledger.loc[len(ledger) - 1, "table_versions"] = json.dumps(versions, sort_keys=True)
    write_table(lake, "ledger", ledger)


def _set(column: str, value, where: Callable[[pd.DataFrame], pd.Series] | None = None):
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        rows = where(frame) if where is not None else frame.index == frame.index[0]
        frame[column] = frame[column].astype(object)
        frame.loc[rows, column] = pd.Series([value] * int(rows.sum()), index=frame.index[rows])
        return frame

    return change


def _duplicate_first(cost_delta: float = 0.0):
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        extra = frame.iloc[[0]].copy()
        if cost_delta:
            extra["cost"] += cost_delta
        return pd.concat([frame, extra], ignore_index=True)

    return change


def _reverse_paths(frame: pd.DataFrame) -> pd.DataFrame:
    frame["path"] = [list(p)[::-1] for p in frame["path"]]
    return frame


PAIR_VIEWS = {"min_cost", "min_hops", "cheapest_path", "fewest_hops", "shortest_cheapest_path"}

# (corruption, how, expected failing (table, expectation) pairs, tables allowed to fail)
CORRUPTIONS = [
    ("negative cost", _update("min_cost", _set("cost", -1.0)),
     {("min_cost", "expect_column_values_to_be_between(cost)")}, {"min_cost"}),
    ("infinite cost", _update("cheapest_path", _set("cost", float("inf"))),
     {("cheapest_path", "expect_column_values_to_be_between(cost)")}, {"cheapest_path"}),
    ("NaN cost", _update("shortest_cheapest_path", _set("cost", float("nan"))),
     {("shortest_cheapest_path", "expect_column_values_to_not_be_null(cost)")},
     {"shortest_cheapest_path"}),
    ("empty provenance", _update("reachable", _set("provenance", b"")),
     {("reachable", "expect_column_values_to_be_between(provenance_length)"),
      ("reachable", "expect_column_pair_values_to_be_equal(prov_bytes, provenance_length)")},
     {"reachable"}),
    ("no provenance",
     _update("min_hops", lambda f: _set("prov_bytes", 0)(_set("provenance", None)(f))),
     {("min_hops", "expect_column_values_to_not_be_null(provenance)"),
      ("min_hops", "expect_column_values_to_be_between(prov_bytes)")}, {"min_hops"}),
    ("empty provenance on an aggregate", _update("region_sizes", _set("provenance", b"")),
     {("region_sizes", "expect_column_values_to_be_between(provenance_length)")},
     {"region_sizes"}),
    ("duplicate reachable key", _update("reachable", _duplicate_first()),
     {("reachable", "expect_compound_columns_to_be_unique(src, dst)")}, {"reachable"}),
    ("two costs for one min_cost key", _update("min_cost", _duplicate_first(cost_delta=1.0)),
     {("min_cost", "expect_compound_columns_to_be_unique(src, dst)")}, {"min_cost"}),
    ("null key", _update("min_cost", _set("src", None)),
     {("min_cost", "expect_column_values_to_not_be_null(src)"),
      ("min_cost", "aspen_pairs_in_reachable(src, dst)")}, {"min_cost"}),
    ("path from dst to src", _update("fewest_hops", _reverse_paths),
     {("fewest_hops", "expect_column_pair_values_to_be_equal(path_first_node, src)"),
      ("fewest_hops", "expect_column_pair_values_to_be_equal(path_last_node, dst)")},
     {"fewest_hops"}),
    ("path longer than its hops", _update("fewest_hops", _set("hops", 7)),
     {("fewest_hops", "expect_column_pair_values_to_be_equal(path_edges, hops)")},
     {"fewest_hops"}),
    ("zero hops", _update("min_hops", _set("hops", 0)),
     {("min_hops", "expect_column_values_to_be_between(hops)")}, {"min_hops"}),
    ("region of size 0", _update("region_sizes", _set("size", 0, lambda f: f["region"] == "r2")),
     {("region_sizes", "expect_column_values_to_be_between(size)"),
      ("region_sizes", "aspen_sizes_count_active_region(region, size)")}, {"region_sizes"}),
    ("a largest region that is not", _update("largest_regions", _set("region", "r2")),
     {("largest_regions", "aspen_largest_of_region_sizes(region, size)")}, {"largest_regions"}),
    ("unexpected column", _update("reachable", lambda f: f.assign(junk=1)),
     {("reachable", "expect_table_columns_to_match_set")}, {"reachable"}),
    ("rows from an uncommitted batch", _update("min_cost", _set("batch_id", 2)),
     {("min_cost", "expect_column_values_to_be_between(batch_id)")}, {"min_cost"}),
    ("unreachable pairs", _update("reachable", lambda f: f[f["src"] != "a"]),
     {(v, "aspen_pairs_in_reachable(src, dst)") for v in PAIR_VIEWS}, PAIR_VIEWS),
    ("negative link cost", _update("link", _set("cost", -2.0)),
     {("link", "expect_column_values_to_be_between(cost)")}, {"link"}),
    ("dead variable in a base table", _update("link", _set("var", "v2")),
     {("link", "aspen_vars_alive_in_registry(var)")}, {"link"}),
]


@pytest.mark.parametrize(
    ("corrupt", "expected", "allowed"),
    [pytest.param(c, e, a, id=name) for name, c, e, a in CORRUPTIONS],
)
def test_each_corruption_fails_the_right_expectation(lake_copy, corrupt, expected, allowed) -> None:
    lake = lake_copy()
    corrupt(lake)
    report = run_expectations(lake, write=False)
    failed = {(o.table, o.expectation) for o in report.failures}
    assert not report.success
    assert expected <= failed, report.lines()
    assert {table for table, _ in failed} <= allowed, report.lines()


def test_a_missing_view_after_a_committed_batch_fails(lake_copy) -> None:
    import shutil

    lake = lake_copy()
    shutil.rmtree(lake.local_table_path("cheapest_path"))
    report = run_expectations(lake, write=False)
    assert [(o.table, o.expectation) for o in report.failures] == [
        ("cheapest_path", "aspen_table_exists")
    ]
    assert "batch 1 is committed" in report.failures[0].observed


def test_aspen_check_and_the_job_exit_1_and_print_the_failures(lake_copy, capsys) -> None:
    lake = lake_copy()
    assert aspen_main(["--lake", lake.lake, "check"]) == 0
    assert "0 failed" in capsys.readouterr().out

    _update("min_cost", _set("cost", -1.0))(lake)
    assert aspen_main(["check", "--lake", lake.lake, "--no-write"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  views.min_cost  expect_column_values_to_be_between(cost): 1 of" in out

    job = subprocess.run(
        [sys.executable, str(REPO_ROOT / "jobs" / "expectations.py"), "--lake", lake.lake],
        capture_output=True, text=True, timeout=120,
    )
    assert job.returncode == 1, job.stderr[-2000:]
    assert "expect_column_values_to_be_between(cost)" in job.stdout
    results = read_table(lake, RESULTS_TABLE)
    assert not results.loc[results["table"] == "min_cost", "success"].all()
