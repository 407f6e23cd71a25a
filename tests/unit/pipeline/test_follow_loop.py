"""The follower's loop (:func:`aspen.pipeline.follow.follow`) over real Delta logs (delta-rs),
with a batch function that records its calls: when it runs a batch, what it reports, when it
stops."""

from __future__ import annotations

import threading

import pandas as pd
import pytest

from aspen.errors import ConfigError
from aspen.lake.deltars import write_table
from aspen.pipeline.follow import follow, log_versions
from aspen.pipeline.maintain_local import MaintainReport


def _land(lake, table: str = "ingest_files") -> None:
    """A new version of a watched table: what an ingest (or an expiry) commits."""
    write_table(lake, table, pd.DataFrame({"batch_id": [1]}), mode="append")


def test_nothing_logged_means_no_batch_and_the_duration_ends_it(lake) -> None:
    calls = []
    report = follow(lake, lambda: calls.append(1) or MaintainReport(0, -1, nothing_to_do=True),
                    poll=0.05, duration=0.3)
    assert calls == [1]  # the first look always asks; the logs never changed after
    assert report.batches == 0 and report.polls >= 3


def test_each_new_version_is_maintained_and_reported(lake) -> None:
    _land(lake)
    lines: list[str] = []
    report = follow(lake, _counting_batches(lake), poll=0.05, max_batches=1, emit=lines.append)
    assert report.batches == 1
    assert lines[0].startswith(f"following {lake.lake_uri}: a look every 0.05 s")
    assert lines[1].startswith("batch 1:")


def _counting_batches(lake):
    """Maintain when ``ingest_files`` moved past what the last batch covered."""
    state = {"covered": -1, "batch": 0}

    def run() -> MaintainReport:
        logged = log_versions(lake)[0]
        if logged <= state["covered"]:
            return MaintainReport(state["batch"], 0, nothing_to_do=True)
        state["covered"], state["batch"] = logged, state["batch"] + 1
        _land(lake, "variables")
        return MaintainReport(state["batch"], logged, inserted_vars=1)

    return run


def test_updates_landing_during_a_batch_get_a_batch_of_their_own(lake) -> None:
    _land(lake)
    inner = _counting_batches(lake)
    landed = {"n": 0}

    def run() -> MaintainReport:
        logged = log_versions(lake)[0]
        report = inner()
        if landed["n"] < 2 and not report.nothing_to_do:  # lands after the batch read the log
            landed["n"] += 1
            _land(lake)
        assert report.nothing_to_do or report.through_ingest_batch == logged
        return report

    report = follow(lake, run, poll=0.05, max_batches=3, duration=10)
    assert report.batches == 3  # the two landings were not lost in the batches they raced


def test_stop_is_honoured_between_batches(lake) -> None:
    stop = threading.Event()
    _land(lake)
    inner = _counting_batches(lake)

    def run() -> MaintainReport:
        report = inner()
        stop.set()  # SIGTERM during the batch: the batch finishes, no other starts
        _land(lake)
        return report

    report = follow(lake, run, poll=0.05, stop=stop)
    assert report.batches == 1


@pytest.mark.parametrize(("option", "value", "message"), [
    ("poll", 0, "--poll must be positive"),
    ("max_batches", 0, "--max-batches must be at least 1"),
    ("duration", -1, "--for must be positive"),
])
def test_bad_limits_are_config_errors(lake, option, value, message) -> None:
    with pytest.raises(ConfigError, match=message):
        follow(lake, lambda: MaintainReport(0, -1, nothing_to_do=True), **{option: value})
