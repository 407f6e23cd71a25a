"""``aspen maintain --follow``: one long-lived maintainer that runs a batch whenever updates
arrive.

A batch in a fresh Spark application (the pipeline DAG's ``spark-submit`` per run) pays the JVM
start, cold Delta reads and — on ``--runtime spark`` — a cold decode of every query node's state
in its host process. A follower keeps the application, and with it the host processes and
their nodes, alive from batch to batch: it holds the lake's maintainer lease
(:mod:`aspen.pipeline.lease`) for its whole life and loops:

1. if the update log (``ingest_files``) or the variable registry (``variables``: expiry writes
   deaths there) has a Delta version it has not seen since its last batch, run one maintained
   batch — exactly what ``aspen maintain`` runs, so crash, rerun and ledger semantics are the
   same (the versions are read before the batch, so what lands during it is caught next);
2. otherwise sleep ``poll`` seconds. An idle poll reads two Delta logs through delta-rs: no
   Spark job.

It stops after ``max_batches`` maintained batches, after ``duration`` seconds, when ``stop`` is
set (the CLI sets it on SIGTERM) or when ``stop_requested()`` says so (the CLI asks its lease:
``aspen maintain --stop`` from anywhere that reaches the lake) — always between batches, never
in one. An error in a batch
ends the follower with that error (its supervisor restarts it; the rerun is exactly-once).

>>> FollowReport(batches=2, polls=5).lines()
['follow: 2 batch(es) maintained in 5 poll(s)']
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from aspen.errors import ConfigError
from aspen.lake.deltars import table_exists, table_version
from aspen.pipeline.maintain_local import MaintainReport
from aspen.settings import Settings

__all__ = ["FollowReport", "follow", "log_versions"]

#: The tables whose new versions mean there may be a batch to maintain.
WATCHED_TABLES = ("ingest_files", "variables")


@dataclass
class FollowReport:
    """What a follower did."""

    batches: int = 0
    polls: int = 0

    def lines(self) -> list[str]:
        """A summary line."""
        return [f"follow: {self.batches} batch(es) maintained in {self.polls} poll(s)"]


def log_versions(settings: Settings) -> tuple[int, ...]:
    """The Delta versions of :data:`WATCHED_TABLES` (-1 for a missing table); a change means
    updates may have arrived.

    >>> log_versions(Settings(lake="/nonexistent/lake"))
    (-1, -1)
    """
    return tuple(table_version(settings, name) if table_exists(settings, name) else -1
                 for name in WATCHED_TABLES)


def follow(
    settings: Settings,
    run_batch: Callable[[], MaintainReport],
    *,
    poll: float = 5.0,
    max_batches: int | None = None,
    duration: float | None = None,
    stop: threading.Event | None = None,
    stop_requested: Callable[[], bool] = lambda: False,
    emit: Callable[[str], None] = print,
) -> FollowReport:
    """Run ``run_batch`` whenever the watched logs change, until a limit, ``stop`` or
    ``stop_requested()``; a first line saying so, then each maintained batch's report lines, go
    to ``emit``. The caller holds the maintainer lease.

    >>> follow(Settings(lake="/tmp/lake"), lambda: maintain_spark(settings), max_batches=3)
    ... # doctest: +SKIP
    FollowReport(batches=3, polls=...)
    """
    if poll <= 0:
        raise ConfigError(f"--poll must be positive, got {poll}")
    if max_batches is not None and max_batches < 1:
        raise ConfigError(f"--max-batches must be at least 1, got {max_batches}")
    if duration is not None and duration <= 0:
        raise ConfigError(f"--for must be positive, got {duration}")
    stop = stop or threading.Event()
    emit(f"following {settings.lake_uri}: a look every {poll:g} s; stops between batches when "
         "asked (SIGTERM, aspen maintain --stop)")
    deadline = None if duration is None else time.monotonic() + duration
    report = FollowReport()
    seen: tuple[int, ...] | None = None
    while not stop.is_set():
        if stop_requested():
            break
        if deadline is not None and time.monotonic() >= deadline:
            break
        report.polls += 1
        versions = log_versions(settings)
        if versions != seen:
            # read before the batch: what lands during it is seen as new at the next look
            # (the batch's own apply moves ``variables`` too: one more look finds nothing)
            seen = versions
            batch = run_batch()
            if not batch.nothing_to_do:
                report.batches += 1
                for line in batch.lines():
                    emit(line)
                if max_batches is not None and report.batches >= max_batches:
                    break
            continue
        wait = poll if deadline is None else min(poll, deadline - time.monotonic())
        stop.wait(max(0.0, wait))
    return report
