"""The log writer lease (delta-rs, no Spark): a second writer waits for it, then gives up in one
line; it is independent of the maintainer lease; a thread that holds a lease re-enters it; and
writers in several processes, each allocating batch numbers under the lease from the committed
state, never hand one out twice."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from aspen.errors import LakeError
from aspen.lake.lease import (
    LOG_LEASE_TABLE,
    LogWriterLease,
    LostLeaseError,
    MaintainerLease,
    current_holder,
    log_writer,
)


def _hold(lease, seconds: float, entered: threading.Event) -> threading.Thread:
    def run() -> None:
        with lease:
            entered.set()
            time.sleep(seconds)

    thread = threading.Thread(target=run)
    thread.start()
    assert entered.wait(30)
    return thread


def test_a_second_log_writer_waits_until_the_first_releases(lake) -> None:
    first = LogWriterLease(lake, "aspen ingest a.jsonl")
    holder = _hold(first, 0.8, threading.Event())
    started = time.monotonic()
    with LogWriterLease(lake, "aspen ingest b.jsonl", wait=30) as second:
        waited = time.monotonic() - started
        assert log_writer(lake).owner == second.owner
    holder.join()
    assert waited >= 0.5  # it waited for the first, it did not fail
    assert log_writer(lake).released


def test_a_log_writer_gives_up_after_its_wait_in_one_line(lake) -> None:
    entered = threading.Event()
    holder = _hold(LogWriterLease(lake, "aspen ingest a.jsonl"), 1.5, entered)
    started = time.monotonic()
    with pytest.raises(LakeError) as info:
        LogWriterLease(lake, "aspen ingest b.jsonl", wait=0.5).acquire()
    assert 0.5 <= time.monotonic() - started < 1.5
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("waited 0.5 s: the lake's update log is being written by "
                              "'aspen ingest a.jsonl' (pid ")
    holder.join()


def test_the_two_leases_are_independent(lake) -> None:
    """A follower holding the maintainer lease never blocks an ingest, nor the other way."""
    with MaintainerLease(lake, "aspen maintain --follow", follower=True) as maintainer:
        with LogWriterLease(lake, "aspen ingest a.jsonl", wait=0) as log:
            assert current_holder(lake).owner == maintainer.owner
            assert log_writer(lake).owner == log.owner
    assert (lake.local_table_path(LOG_LEASE_TABLE) is None
            or Path(lake.local_table_path(LOG_LEASE_TABLE)).is_dir())


def test_a_thread_re_enters_the_lease_it_holds_another_thread_does_not(lake) -> None:
    with MaintainerLease(lake, "aspen maintain") as held:
        with MaintainerLease.reentrant(lake, "aspen apply") as inner:
            assert inner is held  # maintain applies first: the apply runs under its lease
        refused: list[BaseException] = []

        def other_thread() -> None:
            try:
                with MaintainerLease.reentrant(lake, "aspen apply"):
                    pass
            except LakeError as err:
                refused.append(err)

        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
        assert refused and "the lake is being maintained by 'aspen maintain'" in str(refused[0])
        assert current_holder(lake).owner == held.owner  # still held: re-entry never releases
    with MaintainerLease.reentrant(lake, "aspen apply") as own:  # free: a lease of its own
        assert current_holder(lake).owner == own.owner
    assert current_holder(lake).released


def test_a_lost_log_lease_is_noticed_at_check(lake) -> None:
    from aspen.lake import lease as lease_module

    with LogWriterLease(lake, "aspen ingest a.jsonl") as held:
        table, row = lease_module._read(lake, LOG_LEASE_TABLE)
        thief = lease_module.LeaseHolder(**{**row.__dict__, "owner": "thief", "pid": 1,
                                            "host": "elsewhere"})
        assert lease_module._swap(lake, table, thief, LOG_LEASE_TABLE)
        with pytest.raises(LostLeaseError, match="lost the lake's log writer lease .* stops "
                                                 "before its commit marker"):
            held.check()
    assert log_writer(lake).owner == "thief"  # leaving never releases another's lease


#: One writer process: allocate ``rounds`` batch numbers, each from the committed state read
#: under the log writer lease (as ingest does), appending one row per batch.
_WRITER = textwrap.dedent("""
    import os, sys, time
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake
    from aspen.lake.lease import LogWriterLease
    from aspen.settings import Settings

    lake, rounds, go = Settings(lake=sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    while not os.path.exists(go):  # start together
        time.sleep(0.01)
    uri = lake.table_uri("batches")
    for _ in range(rounds):
        with LogWriterLease(lake, f"writer {os.getpid()}", wait=60):
            try:
                last = max(DeltaTable(uri).to_pyarrow_table().column("batch_id").to_pylist())
            except Exception:  # no table yet
                last = 0
            time.sleep(0.02)  # a window in which a second writer would read the same state
            write_deltalake(uri, pa.table({"batch_id": [last + 1], "pid": [os.getpid()]}),
                            mode="append")
""")


def test_writers_in_several_processes_never_hand_out_a_batch_twice(lake, tmp_path: Path) -> None:
    go = tmp_path / "go"
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, lake.lake, "3", str(go)])
               for _ in range(4)]
    time.sleep(0.3)
    go.touch()
    for writer in writers:
        assert writer.wait(timeout=120) == 0
    from deltalake import DeltaTable

    rows = DeltaTable(lake.table_uri("batches")).to_pyarrow_table().to_pylist()
    assert sorted(r["batch_id"] for r in rows) == list(range(1, 13))  # distinct, consecutive
    assert len({r["pid"] for r in rows}) == 4
    assert log_writer(lake).released
