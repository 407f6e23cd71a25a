"""The fault campaign, reduced (:mod:`aspen.bench.faults`; the full one is
``benchmarks/fault_campaign.py``): ingest and maintain crashed at named points and rerun lose
nothing, double nothing and leave the views equal to from-scratch evaluation and the ledger
consistent; truncated and garbage update files end in quarantine with a reason code while their
valid records are ingested; a torn Delta log entry on the update log or on a view fails the CLI in
one line naming the table, and once the entry is restored the rerun loses nothing. In process, on
the session's Spark: the crash points raise instead of killing the process."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from aspen.bench.faults import (
    CRASH_POINTS,
    Campaign,
    PlannedTrial,
    check_lake,
    lake_crash_points,
)
from aspen.lake import ingest as ingest_module
from aspen.lake.deltars import read_table, write_table
from aspen.settings import Settings

pytestmark = pytest.mark.spark

#: Crash points of ingest with its log rows written and no commit marker, and of a maintained
#: batch with its views and state written and no ledger row: fixed, no seed. (Ingest after its
#: commit marker, apply and the TTL sweep are crashed by the full campaign,
#: benchmarks/fault_campaign.py: their Spark MERGEs cost more than this test may.)
TRIALS = [
    PlannedTrial("ingest", "crash", "ingest:after-updates"),
    PlannedTrial("maintain-local", "crash", "maintain:after-state"),
]


@pytest.fixture(scope="module")
def campaign(spark, tmp_path_factory: pytest.TempPathFactory) -> Campaign:
    """A campaign lake with one file ingested (the first trial that maintains maintains it),
    shared by this module."""
    campaign = Campaign(tmp_path_factory.mktemp("faults"), spark, seed=5)
    campaign.setup(maintain=False)
    return campaign


def test_every_planned_point_is_a_point_of_its_phase() -> None:
    for trial in TRIALS:
        assert trial.point in CRASH_POINTS[trial.phase]


def test_the_lake_crash_points_are_installed_and_removed() -> None:
    original = ingest_module._append
    with lake_crash_points():
        assert ingest_module._append is not original
    assert ingest_module._append is original


@pytest.mark.slow
def test_crashed_writers_rerun_losing_and_doubling_nothing(campaign: Campaign) -> None:
    for number, planned in enumerate(TRIALS, start=1):
        row = campaign.trial(number, planned, in_process=True)
        assert row.fired, row  # the command died at its point, not after it
        assert row.exit_code == 2, row
        assert row.rerun_ok, row.notes
        assert (row.lost, row.doubled, row.mismatches) == (0, 0, 0), row.notes
        assert row.ledger_ok, row.notes
    assert [r.phase for r in campaign.results] == [t.phase for t in TRIALS]


@pytest.mark.slow
def test_corrupted_inputs_are_quarantined_or_one_line_and_lose_nothing(
        campaign: Campaign) -> None:
    cases = campaign.corrupted_inputs(as_processes=False, torn=("updates", "reachable"))
    assert len(cases) == 6
    failed = [case for case in cases if not case.ok]
    assert not failed, failed
    torn = [case for case in cases if "torn mid-line" in case.case]
    assert [c.case.split("`")[1] for c in torn] == ["updates", "reachable"]
    for case in torn:
        table = case.case.split("`")[1]
        assert f"table '{table}': its Delta log entry" in case.outcome
        assert "not valid JSON at line 2 (a torn or truncated write)" in case.outcome


def test_the_checks_see_a_lost_and_a_doubled_record(campaign: Campaign, tmp_path: Path) -> None:
    """The checker itself: on a copy of the campaign's lake, a log row doubled, a variable
    dropped and a view tuple removed are each counted."""
    copy = Settings(lake=str(tmp_path / "lake"))
    shutil.copytree(Path(campaign.settings.lake), copy.lake)
    assert check_lake(copy, campaign.files).ok

    updates = read_table(copy, "updates")
    write_table(copy, "updates", updates.iloc[[0]], mode="append")  # a record logged twice
    variables = read_table(copy, "variables")
    write_table(copy, "variables", variables.iloc[1:])  # the first variable gone
    check = check_lake(copy, campaign.files, verify=False)
    assert check.doubled >= 2  # the record's second copy and its repeated seq number
    assert check.lost >= 1
    assert any("variables of applied inserts" in note for note in check.notes)

    write_table(copy, "variables", variables)
    write_table(copy, "updates", updates)
    reachable = read_table(copy, "reachable")
    write_table(copy, "reachable", pd.DataFrame(reachable.iloc[1:]))  # not the committed version
    assert check_lake(copy, campaign.files).problems  # the ledger check sees the later version
