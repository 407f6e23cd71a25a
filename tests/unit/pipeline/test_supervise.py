"""The follower supervisor's decisions (aspen.pipeline.supervise) on a real lease table, with a
fake launcher: what it reports, starts, kills and refuses. The real follower under the pipeline
DAG is tests/dags/test_supervised_follower.py."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from aspen.lake import lease as lease_module
from aspen.lake.lease import LeaseHolder, current_holder
from aspen.pipeline import supervise
from aspen.pipeline.supervise import (
    FollowerError,
    decide,
    ensure_follower,
    stop_follower,
    watched_inbox,
    watching_follower,
)
from aspen.spark.host_process import process_alive

HOST = socket.gethostname()
T = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _row(seconds: float = 60.0, *, now: datetime = T, **changes) -> LeaseHolder:
    row = LeaseHolder("someone", HOST, 4242, "aspen maintain --runtime local --follow", now,
                      now + timedelta(seconds=seconds), follower=True)
    return replace(row, **changes)


@pytest.mark.parametrize(("row", "running", "action", "reason"), [
    (None, True, "start", "no maintainer has held the lease"),
    (_row(released=True), True, "start", "released the lease"),
    (_row(), True, "healthy", ""),
    (_row(host="elsewhere"), False, "healthy", ""),  # another host's pid: not looked at
    (_row(), False, "start", "the holder pid 4242 on .* is gone"),
    (_row(-30), True, "restart", "still runs but its lease expired 30 s ago"),
    (_row(-30, host="elsewhere"), True, "start", "expired 30 s ago"),
    (_row(-30, follower=False), True, "start", "expired 30 s ago"),  # not ours to kill
    (_row(follower=False), True, "wait", "a one-batch maintainer"),
    (_row(stop_requested=True), True, "wait", "was asked to stop"),
])
def test_decisions(row, running, action, reason) -> None:
    decision = decide(row, T, host=HOST, running=lambda pid: running)
    assert decision.action == action
    assert re.search(reason, decision.reason) if reason else decision.reason == ""


def test_watched_inbox_is_the_end_of_the_command(tmp_path: Path) -> None:
    assert watched_inbox(None) is None
    assert watched_inbox(_row()) is None
    inbox = tmp_path / "in box"
    assert watched_inbox(_row(command=f"aspen maintain --follow --inbox {inbox}")) == inbox


def _put(lake, row: LeaseHolder) -> None:
    """Write ``row`` as the lease whatever it holds (see tests/unit/lake/test_lease.py)."""
    for _ in range(50):
        table, _ = lease_module._read(lake)
        if lease_module._swap(lake, table, row):
            return
    pytest.fail("could not write the lease row")


def _sleeper() -> subprocess.Popen[bytes]:
    """A harmless process to stand for a follower (its pid goes into lease rows)."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                            start_new_session=True)


class FakeLauncher:
    """Starts a stand-in process and, unless told to fail, writes its follower lease row."""

    def __init__(self, lake, *, fail_with: str | None = None) -> None:
        self.lake = lake
        self.fail_with = fail_with
        self.commands: list[list[str]] = []
        self.processes: list[subprocess.Popen[bytes]] = []

    def __call__(self, command: list[str], log_path: Path) -> subprocess.Popen[bytes]:
        self.commands.append(command)
        if self.fail_with is not None:
            log_path.write_text(f"starting\n{self.fail_with}\n")
            process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(2)"])
        else:
            process = _sleeper()
            now = datetime.now(UTC)
            inbox = command[command.index("--inbox") + 1]
            _put(self.lake, LeaseHolder(f"fake-{process.pid}", HOST, process.pid,
                                        f"aspen maintain --runtime local --follow --inbox {inbox}",
                                        now, now + timedelta(seconds=120), follower=True))
        self.processes.append(process)
        return process

    def close(self) -> None:
        for process in self.processes:
            process.kill()
            process.wait()


@pytest.fixture
def fakes(lake):
    made: list[FakeLauncher] = []
    sleepers: list[subprocess.Popen[bytes]] = []

    def launcher(**options) -> FakeLauncher:
        made.append(FakeLauncher(lake, **options))
        return made[-1]

    def sleeper() -> subprocess.Popen[bytes]:
        sleepers.append(_sleeper())
        return sleepers[-1]

    yield launcher, sleeper
    for fake in made:
        fake.close()
    for process in sleepers:
        process.kill()
        process.wait()


def test_no_lease_starts_a_follower_and_a_live_one_is_healthy(lake, tmp_path: Path,
                                                               fakes) -> None:
    launcher = fakes[0]()
    inbox, log = tmp_path / "inbox", tmp_path / ".aspen-follower.log"
    status = ensure_follower(lake, inbox, "local", 2, "eager", log, launcher=launcher)
    assert status.state == "started" and status.reason == "no maintainer has held the lease"
    assert status.pid == launcher.processes[0].pid and status.host == HOST
    assert status.inbox == inbox.resolve()
    [command] = launcher.commands
    assert command[:3] == [sys.executable, "-m", "aspen.pipeline.maintainer_main"]
    assert command[3:] == ["--lake", lake.lake_uri, "--runtime", "local",
                           "--partitions", "2", "--mode", "eager", "--follow", "--inbox",
                           str(inbox.resolve())]
    assert watching_follower(lake, inbox) is not None
    assert watching_follower(lake, tmp_path / "other") is None

    again = ensure_follower(lake, inbox, "local", 2, "eager", log, launcher=launcher)
    assert again.state == "healthy" and again.pid == status.pid
    assert 0 <= again.renewed_ago < 30
    assert len(launcher.commands) == 1  # not started again
    assert "follower healthy: pid" in again.describe() and str(log) in again.describe()


def test_a_dead_holder_of_this_host_is_replaced(lake, tmp_path: Path, fakes) -> None:
    launcher, sleeper = fakes[0](), fakes[1]
    gone = sleeper()
    gone.kill()
    gone.wait()
    now = datetime.now(UTC)
    _put(lake, _row(now=now, pid=gone.pid))
    status = ensure_follower(lake, tmp_path / "inbox", "local", 1, "lazy", tmp_path / "f.log",
                             launcher=launcher)
    assert status.state == "started"
    assert status.reason == f"the holder pid {gone.pid} on {HOST} is gone"


def test_a_running_follower_whose_lease_expired_is_killed_and_replaced(
    lake, tmp_path: Path, fakes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(supervise, "TERM_GRACE", 2.0)
    launcher, stuck = fakes[0](), fakes[1]()
    _put(lake, _row(-5, now=datetime.now(UTC), pid=stuck.pid))
    status = ensure_follower(lake, tmp_path / "inbox", "local", 1, "lazy", tmp_path / "f.log",
                             launcher=launcher)
    assert not process_alive(stuck.pid)  # SIGTERM ended it (and the zombie was reaped)
    assert status.state == "started" and "still runs but its lease expired" in status.reason
    assert current_holder(lake).pid == launcher.processes[0].pid


def test_a_follower_that_exits_before_its_lease_fails_with_its_log(lake, tmp_path: Path,
                                                                  fakes) -> None:
    launcher = fakes[0](fail_with="aspen maintain: the lake is being maintained by somebody")
    log = tmp_path / "f.log"
    with pytest.raises(FollowerError, match=r"exited with code 2 before it held the lake's "
                                            r"lease: 'aspen maintain: the lake is being "
                                            r"maintained by somebody'; see .*f\.log") as caught:
        ensure_follower(lake, tmp_path / "inbox", "local", 1, "lazy", log, launcher=launcher)
    assert caught.value.tail == ["starting",
                                 "aspen maintain: the lake is being maintained by somebody"]


def test_a_one_batch_maintainer_is_waited_for_then_refused(lake, tmp_path: Path, fakes) -> None:
    launcher, busy = fakes[0](), fakes[1]()
    _put(lake, _row(now=datetime.now(UTC), pid=busy.pid, follower=False,
                    command="aspen maintain --runtime local"))
    with pytest.raises(FollowerError, match="no follower started: a one-batch maintainer "
                                            r"'aspen maintain --runtime local' .* still, after"):
        ensure_follower(lake, tmp_path / "inbox", "local", 1, "lazy", tmp_path / "f.log",
                        launcher=launcher, start_timeout=0.5)
    assert launcher.commands == []


def test_stop_follower_kills_a_follower_that_does_not_stop(
    lake, fakes, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert stop_follower(lake) is None  # nothing holds the lease
    monkeypatch.setattr(supervise, "TERM_GRACE", 2.0)
    deaf = fakes[1]()  # never reads its lease's stop request
    _put(lake, _row(now=datetime.now(UTC), pid=deaf.pid))
    holder = stop_follower(lake, timeout=0.5)
    assert holder is not None and holder.pid == deaf.pid
    assert current_holder(lake).stop_requested
    assert deaf.wait(timeout=10) == -15  # SIGTERM
