"""The follower's loop (:func:`aspen.pipeline.follow.follow`) over real Delta logs (delta-rs),
with a batch function that records its calls: when it runs a batch, what it reports, when it
stops."""

from __future__ import annotations

import threading

import pandas as pd
import pytest

from aspen.errors import ConfigError
from aspen.lake.deltars import write_table
from aspen.pipeline.batch import MaintainReport
from aspen.pipeline.follow import Chore, follow, lake_chores, log_versions


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


class _FakeClock:
    """A clock that moves only when told: each look of the loop (``stop_requested``) is
    ``step`` seconds."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        return self.now

    def tick(self) -> bool:
        self.now += self.step
        return False


def test_chores_run_at_their_cadence_between_batches(lake) -> None:
    clock = _FakeClock(step=60.0)
    swept: list[float] = []
    kept: list[float] = []
    chores = [Chore("expire", 300, lambda: swept.append(clock.now) or []),
              Chore("housekeeping", 1000, lambda: kept.append(clock.now) or [], at_start=False)]
    batches: list[float] = []
    lines: list[str] = []
    report = follow(lake, lambda: batches.append(clock.now) or MaintainReport(
        0, -1, nothing_to_do=True), poll=0.001, duration=2000, stop_requested=clock.tick,
        clock=clock, chores=chores, emit=lines.append)
    # the sweep first at the start, then at the first look 300 s after its last start
    assert swept == [60.0, 360.0, 660.0, 960.0, 1260.0, 1560.0, 1860.0]
    assert kept == [1020.0]  # not at the start: one period after it (0)
    assert batches == [120.0]  # chores never moved a watched table: one first look only
    assert report.batches == 0 and lines == [
        f"following {lake.lake_uri}: a look every 0.001 s, expire every 300 s, housekeeping "
        "every 1000 s; stops between batches when asked (SIGTERM, aspen maintain --stop)"]
    idle = report.polls - len(batches)
    assert idle >= 20  # idle looks without a chore: no Spark job in those


def test_a_sweep_that_killed_something_is_maintained_next(lake) -> None:
    _land(lake)
    clock = _FakeClock(step=100.0)
    order: list[str] = []

    def sweep() -> list[str]:
        order.append("sweep")
        if len(order) > 1:  # the second sweep kills: deaths land in ``variables``
            _land(lake, "variables")
            return ["expire: batch 2: 1 instance(s) expired"]
        return []

    def run() -> MaintainReport:
        order.append(f"batch over variables v{log_versions(lake)[1]}")
        return MaintainReport(len(order), 1, deleted_vars=1)

    lines: list[str] = []
    report = follow(lake, run, poll=0.001, duration=650, stop_requested=clock.tick, clock=clock,
                    chores=[Chore("expire", 300, sweep)], emit=lines.append)
    # a sweep at the start (nothing due), the first look's batch, then idle looks until the
    # sweep at 400 kills: the next look sees ``variables`` moved and maintains a batch
    assert order == ["sweep", "batch over variables v-1", "sweep", "batch over variables v0"]
    assert report.batches == 2
    assert lines.index("expire: batch 2: 1 instance(s) expired") < len(lines) - 1


def test_a_chore_error_ends_the_follower(lake) -> None:
    def broken() -> list[str]:
        raise RuntimeError("sweep failed")

    with pytest.raises(RuntimeError, match="sweep failed"):
        follow(lake, lambda: MaintainReport(0, -1, nothing_to_do=True), poll=0.001,
               duration=5, chores=[Chore("expire", 300, broken)])


def test_lake_chores_follow_the_options(lake) -> None:
    assert [(c.name, c.every, c.at_start) for c in lake_chores(lake)] == [
        ("expire", 300.0, True), ("housekeeping", 86400.0, False)]
    assert lake_chores(lake, expire_every=0, housekeep_every=0) == []
    with pytest.raises(ConfigError, match="--expire-every must not be negative"):
        lake_chores(lake, expire_every=-1)
    with pytest.raises(ConfigError, match="the expire chore runs every positive time"):
        follow(lake, lambda: MaintainReport(0, -1, nothing_to_do=True),
               chores=[Chore("expire", 0, list)])


def test_a_busy_log_writer_skips_a_chore_and_the_follower_goes_on(lake) -> None:
    from aspen.errors import LeaseBusyError

    clock = _FakeClock(step=100.0)
    tries: list[float] = []

    def busy() -> list[str]:
        tries.append(clock.now)
        raise LeaseBusyError("waited 5 s: the lake's update log is being written by 'ingest'")

    lines: list[str] = []
    follow(lake, lambda: MaintainReport(0, -1, nothing_to_do=True), poll=0.001, duration=650,
           stop_requested=clock.tick, clock=clock, chores=[Chore("expire", 300, busy)],
           emit=lines.append)
    assert tries == [100.0, 400.0]  # at the start, then a period later: the follower went on
    assert lines[1] == ("expire: skipped (waited 5 s: the lake's update log is being written "
                        "by 'ingest'); next try in 300 s")
