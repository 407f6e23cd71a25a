"""The maintainer lease on a real Delta table (delta-rs): one holder at a time, compare-and-swap
on the table's version, expiry, a dead holder of this host, loss detected before the ledger."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from aspen.errors import LakeError
from aspen.lake import lease as lease_module
from aspen.lake.lease import (
    LeaseHolder,
    LostLeaseError,
    MaintainerLease,
    check_held,
    current_holder,
)


def _put(lake, row: LeaseHolder) -> None:
    """Write ``row`` as the lease whatever it holds (another maintainer's claim), retrying
    when a renewal committed in between."""
    for _ in range(50):
        table, _ = lease_module._read(lake)
        if lease_module._swap(lake, table, row):
            return
    pytest.fail("could not write the lease row")


def _other(now: datetime, seconds: float = 60.0, **changes) -> LeaseHolder:
    row = LeaseHolder("someone-else", "elsewhere", 4242, "aspen maintain --follow",
                      now, now + timedelta(seconds=seconds))
    return replace(row, **changes)


def test_held_then_released_and_described(lake) -> None:
    assert current_holder(lake) is None
    with MaintainerLease(lake, "aspen maintain") as held:
        row = current_holder(lake)
        assert (row.owner, row.pid, row.host, row.released) == (
            held.owner, os.getpid(), socket.gethostname(), False)
        assert row.expires_at > datetime.now(UTC)
        held.check()
        check_held(lake)
    assert current_holder(lake).released
    check_held(lake)  # no lease held by this process: nothing to check


def test_second_maintainer_is_refused_with_the_holder_named(lake) -> None:
    with MaintainerLease(lake, "aspen maintain --runtime spark --follow"):
        with pytest.raises(LakeError, match=r"being maintained by 'aspen maintain --runtime "
                                            r"spark --follow' \(pid \d+ on "):
            MaintainerLease(lake, "aspen maintain").acquire()
    with MaintainerLease(lake, "aspen maintain"):  # free again once released
        pass


def test_expired_lease_of_another_host_is_taken(lake) -> None:
    now = datetime.now(UTC)
    _put(lake, _other(now, seconds=60.0))
    with pytest.raises(LakeError, match="being maintained by"):
        MaintainerLease(lake, "aspen maintain").acquire()
    _put(lake, _other(now - timedelta(seconds=120), seconds=60.0))  # expired a minute ago
    taker = MaintainerLease(lake, "aspen maintain")
    taker.acquire()
    assert current_holder(lake).owner == taker.owner


def test_live_lease_of_a_dead_process_on_this_host_is_taken(lake) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(gone.stdout)
    now = datetime.now(UTC)
    _put(lake, _other(now, host=socket.gethostname(), pid=dead_pid))
    taker = MaintainerLease(lake, "aspen maintain")
    taker.acquire()
    assert current_holder(lake).owner == taker.owner
    # a live process of this host (this one) keeps its lease
    _put(lake, _other(now, host=socket.gethostname(), pid=os.getpid()))
    with pytest.raises(LakeError, match="being maintained by"):
        MaintainerLease(lake, "aspen maintain").acquire()


def test_of_two_writers_reading_the_same_version_one_commit_fails(lake) -> None:
    first, second = MaintainerLease(lake, "a"), MaintainerLease(lake, "b")
    first.acquire()
    first.release()
    table_a, row = lease_module._read(lake)
    table_b, _ = lease_module._read(lake)
    now = datetime.now(UTC)
    assert lease_module._swap(lake, table_a, first._mine(now))
    assert not lease_module._swap(lake, table_b, second._mine(now))  # read the old version
    # acquire() re-reads after a failed swap, so the late writer sees the claim and is refused
    with pytest.raises(LakeError, match="being maintained by 'a'"):
        second.acquire()


def test_renewal_extends_and_a_taken_lease_is_lost_before_commit(lake) -> None:
    with MaintainerLease(lake, "aspen maintain", ttl=0.4) as held:
        first_expiry = current_holder(lake).expires_at
        deadline = time.monotonic() + 20  # the renewal thread runs every ttl / 4
        while current_holder(lake).expires_at == first_expiry and time.monotonic() < deadline:
            time.sleep(0.05)
        assert current_holder(lake).expires_at > first_expiry
        assert current_holder(lake).owner == held.owner
        _put(lake, _other(datetime.now(UTC)))  # another maintainer took it
        with pytest.raises(LostLeaseError, match="lost the lake's lease .*'aspen maintain "
                                                 "--follow'"):
            check_held(lake)
        with pytest.raises(LostLeaseError):
            held.renew()
    assert current_holder(lake).owner == "someone-else"  # leaving never releases another's
    assert not current_holder(lake).released


def test_live_follower_is_a_live_lease_held_by_a_follower(lake) -> None:
    from aspen.lake.lease import live_follower

    assert live_follower(lake) is None
    with MaintainerLease(lake, "aspen maintain"):  # a one-batch run is not a follower
        assert live_follower(lake) is None
    with MaintainerLease(lake, "aspen maintain --follow", follower=True) as held:
        assert live_follower(lake).owner == held.owner
    assert live_follower(lake) is None  # released
    now = datetime.now(UTC)
    _put(lake, _other(now - timedelta(seconds=120), seconds=60.0, follower=True))
    assert live_follower(lake) is None  # expired
