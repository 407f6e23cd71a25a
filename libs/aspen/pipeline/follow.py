"""``aspen maintain --follow``: one long-lived maintainer that runs a batch whenever updates
arrive.

A batch in a fresh process pays the imports, cold Delta reads and the engine state's decode —
on ``--runtime spark`` a JVM and a cold decode of every query node's state in its host process
too. A follower keeps all of it warm from batch to batch (on the local runtime the engine state
itself: :mod:`aspen.pipeline.maintain_local`): it holds the lake's maintainer lease
(:mod:`aspen.lake.lease`) for its whole life and loops:

0. with an inbox, resume its claims, then claim and ingest the update files landed there
   (:func:`aspen.pipeline.inbox.ingest_inbox`: regular files only, each claimed by one
   follower);
1. if the update log (``ingest_files``) or the variable registry (``variables``: expiry writes
   deaths there) has a Delta version it has not seen since its last batch, run one maintained
   batch — exactly what ``aspen maintain`` runs, so crash, rerun and ledger semantics are the
   same (the versions are read before the batch, so what lands during it is caught next);
2. otherwise sleep ``poll`` seconds. An idle poll reads two Delta logs through delta-rs: no
   Spark job.

Between batches it also runs its **chores**, each at most every ``every`` seconds: the TTL sweep
(:func:`aspen.lake.expire.expire_due`) and housekeeping (:func:`aspen.lake.housekeeping.housekeep`).
Both hold the maintainer lease, which the follower holds for its life, so neither the
``aspen expire`` command nor the housekeeping job can run meanwhile; the follower takes their
place, re-entering its own lease. A sweep that killed instances wrote their deaths to
``variables``: the next look sees a new version and maintains them as a batch. A small sweep
runs in process; only a large one, or housekeeping, starts the follower's Spark session.

It stops after ``max_batches`` maintained batches, after ``duration`` seconds, when ``stop`` is
set (its process sets it on SIGTERM) or when ``stop_requested()`` says so (the maintainer asks
its lease: ``aspen maintain --stop`` from anywhere that reaches the lake) — always between
batches, never in one. An error in a batch ends the follower with that error (its supervisor
restarts it; the rerun is exactly-once).

>>> FollowReport(batches=2, polls=5).lines()
['follow: 2 batch(es) maintained in 5 poll(s)']
>>> Chore("expire", 300, lambda: []).due(now=100.0, started=0.0)
True
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aspen.errors import ConfigError
from aspen.lake.deltars import table_exists, table_version
from aspen.pipeline.batch import MaintainReport
from aspen.pipeline.inbox import INGESTED, InboxTally, ingest_inbox, landed_files
from aspen.settings import Settings

__all__ = ["DEFAULT_EXPIRE_EVERY", "DEFAULT_HOUSEKEEP_EVERY", "INGESTED", "Chore", "FollowReport",
           "follow", "ingest_inbox", "lake_chores", "landed_files", "log_versions"]

#: The tables whose new versions mean there may be a batch to maintain.
WATCHED_TABLES = ("ingest_files", "variables")
#: Seconds between a follower's TTL sweeps (what the ``aspen_expire`` DAG's schedule was).
DEFAULT_EXPIRE_EVERY = 300.0
#: Seconds between a follower's housekeeping runs (what the housekeeping DAG's schedule was).
DEFAULT_HOUSEKEEP_EVERY = 86400.0
#: Seconds the follower's sweep waits for the log-writer lease: an ingest holding it longer
#: skips this sweep (the next one is a period later), the follower's batches do not wait.
SWEEP_WAIT_SECONDS = 5.0


@dataclass
class Chore:
    """Work a follower does between batches, at most every ``every`` seconds: ``run`` returns
    the lines to print (none when it did nothing worth saying). ``at_start``: first due when the
    follower starts, else ``every`` seconds later (a follower restarted often does not
    housekeep at each start)."""

    name: str
    every: float
    run: Callable[[], list[str]]
    at_start: bool = True
    last: float | None = None  # when it last started (clock seconds)

    def due(self, now: float, started: float) -> bool:
        """Whether the chore should run at ``now`` (the follower started at ``started``)."""
        if self.last is None:
            return self.at_start or now - started >= self.every
        return now - self.last >= self.every


@dataclass
class FollowReport:
    """What a follower did."""

    batches: int = 0
    polls: int = 0
    inbox: InboxTally = field(default_factory=InboxTally)

    def lines(self) -> list[str]:
        """A summary line (and one for the inbox, when it saw files)."""
        return [f"follow: {self.batches} batch(es) maintained in {self.polls} poll(s)",
                *self.inbox.lines()]


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
    chores: Sequence[Chore] = (),
    clock: Callable[[], float] = time.monotonic,
    inbox: Path | None = None,
) -> FollowReport:
    """Run ``run_batch`` whenever the watched logs change, until a limit, ``stop`` or
    ``stop_requested()``; a first line saying so, then each maintained batch's report lines and
    each due chore's lines, go to ``emit``. The caller holds the maintainer lease. ``clock``
    measures ``duration`` and the chores' cadence (a test's fake clock). With ``inbox``, every
    look first ingests the update files landed there (:func:`ingest_inbox`), so an update goes
    from landing to committed views in this one warm process.

    Example, on a lake::

        follow(Settings(lake="/tmp/lake"), lambda: maintain_spark(settings), max_batches=3)
        # FollowReport(batches=3, polls=...)
    """
    if poll <= 0:
        raise ConfigError(f"--poll must be positive, got {poll}")
    if max_batches is not None and max_batches < 1:
        raise ConfigError(f"--max-batches must be at least 1, got {max_batches}")
    if duration is not None and duration <= 0:
        raise ConfigError(f"--for must be positive, got {duration}")
    for chore in chores:
        if chore.every <= 0:
            raise ConfigError(f"the {chore.name} chore runs every positive time, got "
                              f"{chore.every}")
    stop = stop or threading.Event()
    every = "".join(f", {c.name} every {c.every:g} s" for c in chores)
    watching = "" if inbox is None else f", ingesting what lands in {inbox}"
    emit(f"following {settings.lake_uri}: a look every {poll:g} s{every}{watching}; stops "
         "between batches when asked (SIGTERM, aspen maintain --stop)")
    started = clock()
    deadline = None if duration is None else started + duration
    report = FollowReport()
    seen: tuple[int, ...] | None = None
    while not stop.is_set():
        if stop_requested():
            break
        if deadline is not None and clock() >= deadline:
            break
        if _run_due_chores(chores, clock, started, emit):
            continue  # a chore may have taken long: look at the limits again first
        report.polls += 1
        if inbox is not None:
            for line in ingest_inbox(settings, inbox, report.inbox):
                emit(line)
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
        wait = poll if deadline is None else min(poll, deadline - clock())
        stop.wait(max(0.0, wait))
    return report


def _run_due_chores(chores: Sequence[Chore], clock: Callable[[], float], started: float,
                    emit: Callable[[str], None]) -> bool:
    """Run every chore due now (its cadence counted from its start); whether any ran."""
    from aspen.errors import LeaseBusyError

    ran = False
    for chore in chores:
        now = clock()
        if chore.due(now, started):
            chore.last = now
            try:
                lines = chore.run()
            except LeaseBusyError as err:  # another writer has the log: try again next time
                lines = [f"{chore.name}: skipped ({err}); next try in {chore.every:g} s"]
            for line in lines:
                emit(line)
            ran = True
    return ran


def lake_chores(settings: Settings, *, expire_every: float = DEFAULT_EXPIRE_EVERY,
                housekeep_every: float = DEFAULT_HOUSEKEEP_EVERY,
                retain_hours: float | None = None) -> list[Chore]:
    """The follower's chores on the lake: the TTL sweep every ``expire_every`` seconds (first at
    the start) and housekeeping keeping ``retain_hours`` every ``housekeep_every`` seconds
    (first after one period); 0 leaves a chore out. Both re-enter the follower's lease; a small
    sweep runs in process, housekeeping in the follower's Spark session (started when needed).

    >>> [c.name for c in lake_chores(Settings(lake="/tmp/lake"), housekeep_every=0)]
    ['expire']
    """
    from aspen.lake.housekeeping import DEFAULT_RETAIN_HOURS

    if expire_every < 0:
        raise ConfigError(f"--expire-every must not be negative, got {expire_every:g}")
    if housekeep_every < 0:
        raise ConfigError(f"--housekeep-every must not be negative, got {housekeep_every:g}")
    hours = DEFAULT_RETAIN_HOURS if retain_hours is None else retain_hours
    chores = []
    if expire_every:
        chores.append(Chore("expire", expire_every, lambda: _sweep(settings)))
    if housekeep_every:
        chores.append(Chore("housekeeping", housekeep_every,
                            lambda: _housekeep(settings, hours), at_start=False))
    return chores


def _spark():
    from aspen.spark.session import get_spark

    return get_spark("aspen-maintain")  # the follower's own session (getOrCreate)


def _sweep(settings: Settings) -> list[str]:
    """One TTL sweep; a line when it expired something (the next look maintains it)."""
    from aspen.lake.expire import expire_due

    # a session only for a large sweep: a small one runs in process, with no JVM
    report = expire_due(_spark, settings, wait=SWEEP_WAIT_SECONDS)
    if not report.expired:
        return []
    detail = ", ".join(f"{n} {rel}" for rel, n in sorted(report.per_relation.items()))
    return [f"expire: batch {report.batch_id}: {report.expired} instance(s) expired as of "
            f"{report.now} ({detail})"]


def _housekeep(settings: Settings, retain_hours: float) -> list[str]:
    """One housekeeping run, summed up in one line."""
    from aspen.lake.housekeeping import housekeep

    report = housekeep(_spark(), settings, retain_hours)
    tables = set(report.compacted) | set(report.vacuumed)
    return [f"housekeeping: {len(tables)} table(s) kept, "
            f"{sum(report.compacted.values())} file(s) compacted away, "
            f"{sum(report.vacuumed.values())} vacuumed (history kept: {retain_hours:g} h)"]
